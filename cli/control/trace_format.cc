#include "cli/control/trace_format.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/control/job_format.h"
#include "cli/framework/format.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

// Microseconds, rounded to whole ones (the format's unit).
std::string Micros(double seconds) {
  return JsonNumber(std::round(seconds * 1e6));
}

double StartOf(const StepMetrics& m) { return m.wall_time() - m.step_s(); }

std::string StepEvent(const StepMetrics& m, double origin) {
  const std::string mode = SyncModeName(m.mode());
  return absl::StrCat(
      "{\"name\":", JsonQuote(absl::StrCat("step ", m.step(), " (", mode, ")")),
      ",\"cat\":", JsonQuote(mode), ",\"ph\":\"X\",\"pid\":", m.rank(),
      ",\"tid\":0,\"ts\":", Micros(StartOf(m) - origin),
      ",\"dur\":", Micros(m.step_s()), ",\"args\":{\"step\":", m.step(),
      ",\"compute_ms\":", JsonNumber(m.compute_s() * 1e3),
      ",\"comm_ms\":", JsonNumber(m.comm_s() * 1e3),
      ",\"idle_ms\":", JsonNumber(m.idle_s() * 1e3),
      ",\"sync_bytes\":", m.sync_bytes(),
      ",\"algbw_gbps\":", JsonNumber(m.algbw_gbps()),
      ",\"busbw_gbps\":", JsonNumber(m.busbw_gbps()),
      ",\"loss\":", JsonNumber(m.loss()), "}}");
}

std::string BusbwCounter(const StepMetrics& m, double origin) {
  return absl::StrCat(
      "{\"name\":\"busbw GB/s\",\"ph\":\"C\",\"pid\":", m.rank(),
      ",\"ts\":", Micros(StartOf(m) - origin),
      ",\"args\":{\"busbw\":", JsonNumber(m.busbw_gbps()), "}}");
}

}  // namespace

std::string MetricsToChromeTrace(absl::string_view job_id,
                                 const std::vector<StepMetrics>& metrics) {
  double origin = 0;
  bool any = false;
  for (const StepMetrics& m : metrics) {
    if (m.wall_time() <= 0) continue;
    origin = any ? std::min(origin, StartOf(m)) : StartOf(m);
    any = true;
  }
  std::vector<std::string> events;
  std::set<int> ranks;
  bool have_mode = false;
  SyncMode mode = SYNC_MODE_UNSPECIFIED;
  for (const StepMetrics& m : metrics) {
    if (m.wall_time() <= 0) continue;
    if (ranks.insert(m.rank()).second) {
      events.push_back(absl::StrCat(
          "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":", m.rank(),
          ",\"args\":{\"name\":", JsonQuote(absl::StrCat("rank ", m.rank())),
          "}}"));
    }
    if (m.rank() == 0) {
      if (have_mode && m.mode() != mode) {
        events.push_back(absl::StrCat(
            "{\"name\":",
            JsonQuote(absl::StrCat("switch to ", SyncModeName(m.mode()),
                                   " at step ", m.step())),
            ",\"ph\":\"i\",\"s\":\"g\",\"pid\":0,\"tid\":0,\"ts\":",
            Micros(StartOf(m) - origin), "}"));
      }
      have_mode = true;
      mode = m.mode();
    }
    events.push_back(StepEvent(m, origin));
    events.push_back(BusbwCounter(m, origin));
  }
  return absl::StrCat(
      "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"job\":", JsonQuote(job_id),
      "},\"traceEvents\":[", absl::StrJoin(events, ",\n"), "]}\n");
}

}  // namespace control
}  // namespace cli
}  // namespace gradsync
