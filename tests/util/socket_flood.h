// Flooding a server with raw TCP connections (idle, or sending garbage)
// in tests of what unauthenticated clients can hold: the tensor plane's
// and /metrics' connection budgets.
#ifndef GRADSYNC_TESTS_UTIL_SOCKET_FLOOD_H_
#define GRADSYNC_TESTS_UTIL_SOCKET_FLOOD_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

namespace gradsync {
namespace testing {

// A client socket connected to 127.0.0.1:`port`; -1 on error.
inline int DialLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 &&
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// How many sockets a test may open: the soft fd limit raised to the hard
// one, less `reserve` for the rest of the process.
inline int SocketBudget(int reserve = 200) {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  getrlimit(RLIMIT_NOFILE, &limit);
  return static_cast<int>(std::min<rlim_t>(limit.rlim_cur, 1 << 20)) - reserve;
}

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_UTIL_SOCKET_FLOOD_H_
