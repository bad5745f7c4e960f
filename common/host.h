// Host names and "host:port" addresses, as the daemons and the CLI see
// them.
//
// Pure functions apart from HostName, which asks the kernel; thread-safe.
#ifndef GRADSYNC_COMMON_HOST_H_
#define GRADSYNC_COMMON_HOST_H_

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// This machine's host name (gethostname), or "localhost" when it has none.
std::string HostName();

// True for "host:port" (or "[v6]:port"): a non-empty host before the last
// colon and a port in 1..65535 after it. The host is not resolved.
bool IsHostPort(absl::string_view address);

// A daemon's listen address "host:port" (port 0..65535, 0 for any free
// one) split into its host, without the brackets of "[v6]", and port;
// INVALID_ARGUMENT "<what> '<address>' is not <expected>" otherwise
// (expected: "host:port (for example 0.0.0.0:9400)").
[[nodiscard]] absl::StatusOr<std::pair<std::string, int>> SplitListenAddress(
    absl::string_view address, absl::string_view what,
    absl::string_view expected);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_HOST_H_
