// The host's default TCP congestion control, for tests that check which
// algorithm a connection ends up with.
#ifndef GRADSYNC_TESTS_UTIL_TCP_CONGESTION_TEST_UTIL_H_
#define GRADSYNC_TESTS_UTIL_TCP_CONGESTION_TEST_UTIL_H_

#include <fstream>
#include <string>

#include "absl/strings/ascii.h"

namespace gradsync {
namespace testing {

// net.ipv4.tcp_congestion_control; "" where /proc/sys/net/ipv4 is absent.
inline std::string SystemTcpCongestionControl() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string name;
  std::getline(in, name);
  return std::string(absl::StripAsciiWhitespace(name));
}

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_UTIL_TCP_CONGESTION_TEST_UTIL_H_
