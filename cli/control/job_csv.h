// The coordinator's records as CSV and as plot input, for -o csv of
// `status` and `workers` and for `metrics --plot` (job_commands.cc): the
// control commands' own output, on top of the framework's generic CSV
// (cli/framework/format.h: CsvHeader, CsvRow).
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_CLI_CONTROL_JOB_CSV_H_
#define GRADSYNC_CLI_CONTROL_JOB_CSV_H_

#include <string>

#include "absl/strings/string_view.h"
#include "proto/coordinator.pb.h"

namespace gradsync {
namespace cli {
namespace control {

// `gradsync status -o csv`: JobStatus's scalar fields, then the spec's
// name, num_workers and steps (as steps_total), a row per job.
std::string JobsToCsv(const ListJobsResponse& jobs);

// `gradsync workers -o csv`: WorkerInfo's scalar fields, a row per worker,
// with its devices ("cpu:0,1 cuda:0") and jobs joined by spaces.
std::string WorkersToCsv(const ListWorkersResponse& workers);

// metrics_plot.py's input (metrics --plot): {"job":<job as JSON>,
// "metrics":<metrics_json>} on one line, metrics_json as MetricsToJson
// writes it.
std::string MetricsPlotInput(const JobStatus& job,
                             absl::string_view metrics_json);

}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_JOB_CSV_H_
