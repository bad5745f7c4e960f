#include "tests/util/metrics_scrape.h"

#include <httplib.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gradsync {

absl::StatusOr<MetricsResponse> HttpRequest(const std::string& address,
                                            const std::string& path,
                                            const std::string& method) {
  httplib::Client client(absl::StrCat("http://", address));
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  client.set_write_timeout(5);
  httplib::Result result = method == "POST"
                               ? client.Post(path.c_str(), "x", "text/plain")
                               : client.Get(path.c_str());
  if (!result) {
    return absl::UnavailableError(
        absl::StrCat(method, " http://", address, path,
                     " failed: ", httplib::to_string(result.error())));
  }
  return MetricsResponse{
      result->status, result->get_header_value("Content-Type"), result->body};
}

absl::StatusOr<std::string> ScrapeMetrics(const std::string& address) {
  absl::StatusOr<MetricsResponse> response = HttpRequest(address, "/metrics");
  if (!response.ok()) return response.status();
  if (response->status != 200) {
    return absl::InternalError(
        absl::StrCat("GET /metrics answered ", response->status));
  }
  return response->body;
}

std::optional<std::string> FindPromtool() {
  if (const char* env = std::getenv("PROMTOOL"); env != nullptr && *env) {
    return std::string(env);
  }
  if (access("/usr/bin/promtool", X_OK) == 0) return "/usr/bin/promtool";
  // Where scripts/install_deps.sh puts it.
  if (access("/usr/local/bin/promtool", X_OK) == 0) {
    return "/usr/local/bin/promtool";
  }
  return std::nullopt;
}

bool ToolsRequired() {
  const char* env = std::getenv("GRADSYNC_REQUIRE_TOOLS");
  return env != nullptr && std::string(env) == "1";
}

absl::Status PromtoolCheck(const std::string& promtool,
                           const std::string& text) {
  char path[] = "/tmp/gradsync_metrics_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return absl::InternalError("mkstemp failed");
  close(fd);
  {
    std::ofstream out(path);
    out << text;
  }
  const std::string command =
      absl::StrCat(promtool, " check metrics < ", path, " 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    unlink(path);
    return absl::InternalError(absl::StrCat("cannot run ", command));
  }
  std::string output;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) {
    output.append(buffer, n);
  }
  const int status = pclose(pipe);
  unlink(path);
  if (status != 0 || !output.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(command, " exited ", status, ": ", output));
  }
  return absl::OkStatus();
}

std::optional<double> SampleValue(const std::string& text,
                                  const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, series) ||
        !absl::ConsumePrefix(&line, " ")) {
      continue;
    }
    double value = 0;
    if (line == "+Inf") return HUGE_VAL;
    if (absl::SimpleAtod(line, &value)) return value;
  }
  return std::nullopt;
}

}  // namespace gradsync
