#include "study/sim/trace.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/json.h"

namespace gradsync {
namespace sim {

std::string ChromeTraceJson(const std::vector<TimelineEvent>& events) {
  std::vector<const TimelineEvent*> sorted;
  sorted.reserve(events.size());
  for (const TimelineEvent& e : events) sorted.push_back(&e);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const TimelineEvent* a, const TimelineEvent* b) {
                     return a->start_s < b->start_s;
                   });
  // Lanes numbered in order of first appearance, in time order.
  std::map<std::string, int> lanes;
  std::vector<const std::string*> lane_names;
  for (const TimelineEvent* e : sorted) {
    if (lanes.emplace(e->lane, static_cast<int>(lanes.size()) + 1).second) {
      lane_names.push_back(&e->lane);
    }
  }
  std::string out =
      "{\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":"
      "\"process_name\",\"args\":{\"name\":\"simulated step\"}}";
  for (size_t i = 0; i < lane_names.size(); ++i) {
    absl::StrAppend(&out, ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":", i + 1,
                    ",\"name\":\"thread_name\",\"args\":{\"name\":",
                    JsonQuote(*lane_names[i]), "}}");
  }
  for (const TimelineEvent* e : sorted) {
    absl::StrAppend(&out, ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":", lanes[e->lane],
                    ",\"ts\":", JsonNumber(e->start_s * 1e6), ",\"dur\":",
                    JsonNumber(std::max(0.0, e->end_s - e->start_s) * 1e6),
                    ",\"name\":", JsonQuote(e->name), "}");
  }
  out += "\n],\"displayTimeUnit\":\"ms\"}\n";
  return out;
}

}  // namespace sim
}  // namespace gradsync
