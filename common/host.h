// Host names and "host:port" addresses, as the daemons and the CLI see
// them.
//
// Pure functions apart from HostName, which asks the kernel; thread-safe.
#ifndef GRADSYNC_COMMON_HOST_H_
#define GRADSYNC_COMMON_HOST_H_

#include <string>

#include "absl/strings/string_view.h"

namespace gradsync {

// This machine's host name (gethostname), or "localhost" when it has none.
std::string HostName();

// True for "host:port" (or "[v6]:port"): a non-empty host before the last
// colon and a port in 1..65535 after it. The host is not resolved.
bool IsHostPort(absl::string_view address);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_HOST_H_
