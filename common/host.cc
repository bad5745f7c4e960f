#include "common/host.h"

#include <unistd.h>

#include <climits>

#include "absl/strings/numbers.h"

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

}  // namespace gradsync
