// A simulated step's timeline as a Chrome trace (the Trace Event Format
// that chrome://tracing and Perfetto open):
//
//   {"traceEvents":[
//     {"ph":"M","pid":1,"tid":0,"name":"process_name",
//      "args":{"name":"simulated step"}},
//     {"ph":"M","pid":1,"tid":1,"name":"thread_name",
//      "args":{"name":"compute"}},
//     {"ph":"X","pid":1,"tid":1,"ts":0,"dur":1250.5,"name":"forward"},
//     ...],
//    "displayTimeUnit":"ms"}
//
// One row (tid) per lane, numbered in order of first appearance; the "X"
// events follow the metadata, sorted by their start; ts and dur are in
// microseconds, as the format wants.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_STUDY_SIM_TRACE_H_
#define GRADSYNC_STUDY_SIM_TRACE_H_

#include <string>
#include <vector>

#include "study/sim/flow_network.h"

namespace gradsync {
namespace sim {

// The trace of `events` (times in seconds) as described at the top,
// ending in a newline.
std::string ChromeTraceJson(const std::vector<TimelineEvent>& events);

}  // namespace sim
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_SIM_TRACE_H_
