// A job's step metrics as a Chrome trace: the Trace Event Format that
// chrome://tracing and ui.perfetto.dev open (Horovod's timeline writes
// it too), for `gradsync metrics JOB --format trace`.
//
//   - one process per rank ("rank r"), one complete event per step from
//     its start (wall_time - step_s) to its end, named "step S (mode)",
//     with the step's compute, exposed communication and idle times, its
//     bytes, algbw, busbw and loss as arguments;
//   - a busbw counter per rank, so PS and ring steps read as a curve;
//   - a global instant event where rank 0's steps change sync mode.
// Times are microseconds from the first step's start. Evaluation and
// switching time fall between steps, as gaps. Steps without a wall time
// are left out.
#ifndef GRADSYNC_CLI_CONTROL_TRACE_FORMAT_H_
#define GRADSYNC_CLI_CONTROL_TRACE_FORMAT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "proto/coordinator.pb.h"

namespace gradsync {
namespace cli {
namespace control {

// `metrics` sorted by step, then rank (SortedMetrics); one JSON document.
std::string MetricsToChromeTrace(absl::string_view job_id,
                                 const std::vector<StepMetrics>& metrics);

}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_TRACE_FORMAT_H_
