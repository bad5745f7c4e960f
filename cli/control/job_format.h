// What the control commands print about jobs, workers and metrics: human
// tables and their machine-readable forms (JSON lines, CSV).
//
// Times in JobStatus and WorkerInfo are unix seconds on the coordinator's
// clock; `now` (unix seconds) turns them into ages and durations.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_CLI_CONTROL_JOB_FORMAT_H_
#define GRADSYNC_CLI_CONTROL_JOB_FORMAT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "proto/coordinator.pb.h"
#include "proto/job.pb.h"

namespace gradsync {
namespace control {

// "RUNNING" for JOB_STATE_RUNNING, "IDLE" for WORKER_STATE_IDLE, "ring" or
// "ps" for the sync modes (unspecified: "ring", as the coordinator reads
// it).
std::string JobStateName(JobState state);
std::string WorkerStateName(WorkerState state);
std::string SyncModeName(SyncMode mode);
// SUCCEEDED, FAILED or CANCELLED.
bool IsTerminal(JobState state);

// "cpu:0,1,2 cuda:0" (indices grouped by kind, in order of appearance).
std::string FormatDevices(
    const google::protobuf::RepeatedPtrField<Device>& devices);

// The table of `gradsync status`: JOB NAME STATE MODE WORKERS STEP
// ACCURACY AGE MESSAGE, one row per job.
std::string FormatJobsTable(const ListJobsResponse& jobs, double now);

// `gradsync status JOB`: the job's fields, then its placement table
// (RANK WORKER HOST DEVICE).
std::string FormatJobDetail(const JobStatus& job, double now);

// `gradsync workers`: ID HOST ADDRESS DEVICES STATE FREE JOBS HEARTBEAT.
std::string FormatWorkersTable(const ListWorkersResponse& workers, double now);

// The metrics sorted by step, then rank (stable: a repeated (step, rank)
// keeps its arrival order).
std::vector<StepMetrics> SortedMetrics(
    const google::protobuf::RepeatedPtrField<StepMetrics>& metrics);

// CSV: a header of StepMetrics' field names, then one row per metric.
std::string MetricsToCsv(const std::vector<StepMetrics>& metrics);

// {"jobId":"...","metrics":[{...},...]} on one line.
std::string MetricsToJson(absl::string_view job_id,
                          const std::vector<StepMetrics>& metrics);

}  // namespace control
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_JOB_FORMAT_H_
