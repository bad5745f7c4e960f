#include "server/ps/bench/raw_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/tcp_congestion.h"

namespace gradsync {
namespace {

[[nodiscard]] absl::Status SocketError(absl::string_view what) {
  return absl::UnavailableError(
      absl::StrCat("raw TCP ", what, ": ", std::strerror(errno)));
}

void SetTimeouts(int fd, absl::Duration timeout) {
  const timeval tv = absl::ToTimeval(timeout);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

absl::StatusOr<RawListener> ListenOnLoopback() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return SocketError("socket");
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 128) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const absl::Status error = SocketError("listen");
    close(fd);
    return error;
  }
  return RawListener{fd, ntohs(addr.sin_port)};
}

int AcceptRaw(int listen_fd, absl::Duration timeout,
              const std::string& congestion_name) {
  for (;;) {
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return -1;  // shut down
    }
    SetTimeouts(fd, timeout);
    if (!congestion_name.empty()) {
      SetTcpCongestionControl(fd, congestion_name).IgnoreError();  // checked
    }
    return fd;
  }
}

absl::StatusOr<int> ConnectRaw(int port, int rank, absl::Duration timeout,
                               const std::string& congestion) {
  RETURN_IF_ERROR(CheckCongestionControl(congestion));
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return SocketError("socket");
  const std::string name = CongestionControlFor(congestion, true);
  if (!name.empty()) SetTcpCongestionControl(fd, name).IgnoreError();
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  SetTimeouts(fd, timeout);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const absl::Status error = SocketError("connect");
    close(fd);
    return error;
  }
  const int32_t wire_rank = rank;
  if (absl::Status sent = SendAll(fd, &wire_rank, sizeof(wire_rank));
      !sent.ok()) {
    close(fd);
    return sent;
  }
  return fd;
}

absl::Status SendAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t sent = send(fd, p, n, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return SocketError("send");
    p += sent;
    n -= static_cast<size_t>(sent);
  }
  return absl::OkStatus();
}

absl::Status RecvAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t got = recv(fd, p, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got == 0) return absl::UnavailableError("raw TCP peer closed");
    if (got < 0) return SocketError("recv");
    p += got;
    n -= static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

}  // namespace gradsync
