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

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "jobspec/sync_mode_name.h"
#include "proto/coordinator.pb.h"
#include "proto/job.pb.h"
#include "proto/ps.pb.h"
#include "study/alpha_beta/sync_bandwidth.h"

namespace gradsync {
namespace cli {
namespace control {

// "RUNNING" for JOB_STATE_RUNNING, "IDLE" for WORKER_STATE_IDLE. (The
// sync modes' names, "ring" and "ps", are jobspec's SyncModeName.)
std::string JobStateName(JobState state);
std::string WorkerStateName(WorkerState state);
// SUCCEEDED, FAILED or CANCELLED.
bool IsTerminal(JobState state);

// "cpu:0,1,2 cuda:0" (indices grouped by kind, in order of appearance).
std::string FormatDevices(
    const google::protobuf::RepeatedPtrField<Device>& devices);

// The table of `gradsync status`: JOB NAME STATE MODE WORKERS STEP
// ACCURACY AGE MESSAGE, one row per job; `wide` (-o wide) adds HOSTS (the
// ranks' hosts) and RESTART_OF, and keeps the whole first line of the
// message.
std::string FormatJobsTable(const ListJobsResponse& jobs, double now,
                            bool wide = false);

// `gradsync status JOB`: the job's fields (the mode it runs in now, its PS
// settings and shard addresses, scripted switches and runtime requests),
// then its placement table (RANK WORKER HOST DEVICE) and, once the ranks
// switched, the switch table.
std::string FormatJobDetail(const JobStatus& job, double now);

// The switches the ranks made: STEP FROM TO BY, BY being "request <epoch>"
// or "scripted" (JobSpec.switches).
std::string FormatSwitchTable(const JobStatus& job);

// `gradsync workers`: ID HOST ADDRESS DEVICES STATE FREE JOBS HEARTBEAT,
// then, when any registered, the parameter servers: ID HOST ADDRESS STATE
// SHARDS JOBS HEARTBEAT.
std::string FormatWorkersTable(const ListWorkersResponse& workers, double now);

// The metrics sorted by step, then rank (stable: a repeated (step, rank)
// keeps its arrival order).
std::vector<StepMetrics> SortedMetrics(
    const google::protobuf::RepeatedPtrField<StepMetrics>& metrics);

// The links of the job's cluster for IdealBusBandwidth: B and I as given
// (GB/s), Q the hosts its ranks were placed on, P the ranks on each.
// INVALID_ARGUMENT when no rank is placed yet or the hosts hold different
// numbers of ranks (the formula assumes P on every node), naming them.
[[nodiscard]] absl::StatusOr<ClusterLinks> JobClusterLinks(
    const JobStatus& job, double link_gbps, double node_link_gbps);

// "ideal busbw 2.32 GB/s (B 2.32 GB/s; 1 node, 4 ranks each)".
std::string DescribeIdeal(const ClusterLinks& links, double ideal_gbps);

// CSV: a header of StepMetrics' field names, then one row per metric.
std::string MetricsToCsv(const std::vector<StepMetrics>& metrics);

// {"jobId":"...","metrics":[{...},...],"shards":[{...},...]} on one line
// (shards: the latest counters of each PS shard).
std::string MetricsToJson(
    absl::string_view job_id, const std::vector<StepMetrics>& metrics,
    const google::protobuf::RepeatedPtrField<ps::ShardStats>& shards);

// CSV of the shard counters: a header of ShardStats' scalar field names,
// then one row per shard.
std::string ShardsToCsv(
    const google::protobuf::RepeatedPtrField<ps::ShardStats>& shards);

// The shard counters for people: SHARD ELEMENTS PUSHES PULLS UPDATES
// BYTES_IN BYTES_OUT WAIT_LAST_MS (sync: first push to last, summed over
// steps) APPLY_MS (the mean and the optimizer's update) SSP_WAIT_MS
// QUEUE/MAX.
std::string FormatShardTable(
    const google::protobuf::RepeatedPtrField<ps::ShardStats>& shards);

}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_JOB_FORMAT_H_
