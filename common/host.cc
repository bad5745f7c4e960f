#include "common/host.h"

#include <unistd.h>

#include <climits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') {
    return "localhost";
  }
  return name;
}

bool IsHostPort(absl::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) return false;
  int port = 0;
  return absl::SimpleAtoi(address.substr(colon + 1), &port) && port > 0 &&
         port <= 65535;
}

absl::StatusOr<std::pair<std::string, int>> SplitListenAddress(
    absl::string_view address, absl::string_view what,
    absl::string_view expected) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", address, "' is not ", expected));
  }
  std::string host(address.substr(0, colon));
  // "[::1]:9400": the socket layer wants the bare IPv6 address.
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return std::make_pair(std::move(host), port);
}

}  // namespace gradsync
