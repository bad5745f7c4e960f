// Test helpers for the daemons' /metrics endpoints: a real HTTP GET over a
// socket (cpp-httplib's client) and promtool's check of the text.
#ifndef GRADSYNC_TESTS_UTIL_METRICS_SCRAPE_H_
#define GRADSYNC_TESTS_UTIL_METRICS_SCRAPE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace gradsync {

struct MetricsResponse {
  int status = 0;
  std::string content_type;
  std::string body;
};

// `method` ("GET", "POST") on http://<address><path>, with 5 s timeouts.
// UNAVAILABLE when nothing answered.
[[nodiscard]] absl::StatusOr<MetricsResponse> HttpRequest(
    const std::string& address, const std::string& path,
    const std::string& method = "GET");

// GET /metrics; its body, or an error naming the status.
[[nodiscard]] absl::StatusOr<std::string> ScrapeMetrics(
    const std::string& address);

// promtool: $PROMTOOL if set, else /usr/bin/promtool if it exists; nullopt
// otherwise (the Debian package `prometheus` brings it).
std::optional<std::string> FindPromtool();

// True when $GRADSYNC_REQUIRE_TOOLS is "1" (scripts/test.sh, so CI, sets
// it): a test must fail, not skip, when a checking tool the scripts
// install (promtool, yamllint, systemd-analyze) is missing.
bool ToolsRequired();

// Runs `promtool check metrics` on `text`: OK, or an error carrying its
// output (lint problems included: they count as failures here).
[[nodiscard]] absl::Status PromtoolCheck(const std::string& promtool,
                                         const std::string& text);

// The value of the first sample line that starts with `series` followed
// by a space (`series` includes its labels as rendered), or nullopt.
std::optional<double> SampleValue(const std::string& text,
                                  const std::string& series);

}  // namespace gradsync

#endif  // GRADSYNC_TESTS_UTIL_METRICS_SCRAPE_H_
