#include "collectives/transports/tcp/socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/tcp_congestion.h"

namespace gradsync {
namespace {

[[nodiscard]] absl::Status ErrnoStatus(absl::string_view what, int err) {
  if (err == ECONNRESET || err == EPIPE || err == ECONNREFUSED ||
      err == ENOTCONN || err == ECONNABORTED) {
    return absl::UnavailableError(
        absl::StrCat(what, ": connection lost (", strerror(err), ")"));
  }
  return absl::InternalError(absl::StrCat(what, ": ", strerror(err)));
}

[[nodiscard]] absl::StatusOr<sockaddr_in> Resolve(const std::string& host,
                                                  int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (host.empty() || host == "0.0.0.0" || host == "*") {
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    return addr;
  }
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) == 1) return addr;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve host '", host, "': ", gai_strerror(rc)));
  }
  addr.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
  return addr;
}

// Time left until `deadline`, in whole milliseconds for poll(), at least 0.
int PollMillis(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(
      std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 100));
}

}  // namespace

absl::Status SplitHostPort(const std::string& address, std::string* host,
                           int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size() ||
      !absl::SimpleAtoi(address.substr(colon + 1), port) || *port < 0 ||
      *port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed address '", address, "'; expected host:port"));
  }
  *host = address.substr(0, colon);
  return absl::OkStatus();
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

absl::StatusOr<Socket> Socket::Listen(const std::string& host, int port) {
  auto addr = Resolve(host, port);
  if (!addr.ok()) return addr.status();
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return ErrnoStatus("socket", errno);
  const int one = 1;
  setsockopt(s.fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(s.fd_, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr)) !=
      0) {
    return ErrnoStatus(absl::StrCat("bind ", host, ":", port), errno);
  }
  // The kernel's cap (net.core.somaxconn), not 128: a job's ranks, or a
  // flood the server sheds, connect at once, and an overflowing queue
  // stalls each dropped client for a 1 s SYN retry.
  if (::listen(s.fd_, SOMAXCONN) != 0) return ErrnoStatus("listen", errno);
  return s;
}

absl::StatusOr<Socket> Socket::Connect(const std::string& host, int port,
                                       absl::Time deadline,
                                       const std::atomic<bool>* cancelled) {
  auto addr = Resolve(host, port);
  if (!addr.ok()) return addr.status();
  absl::Duration backoff = absl::Milliseconds(5);
  while (true) {
    Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s.valid()) return ErrnoStatus("socket", errno);
    if (::connect(s.fd_, reinterpret_cast<const sockaddr*>(&*addr),
                  sizeof(*addr)) == 0) {
      return s;
    }
    const int err = errno;
    if (err != ECONNREFUSED && err != ETIMEDOUT && err != EINTR) {
      return ErrnoStatus(absl::StrCat("connect ", host, ":", port), err);
    }
    if (cancelled != nullptr && cancelled->load()) {
      return absl::CancelledError(
          absl::StrCat("connecting to ", host, ":", port, " cancelled"));
    }
    if (absl::Now() + backoff > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("could not connect to ", host, ":", port,
                       " before the deadline (", strerror(err), ")"));
    }
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Milliseconds(100));
  }
}

absl::StatusOr<Socket> Socket::Accept(absl::Time deadline) {
  while (true) {
    pollfd p{fd_, POLLIN, 0};
    const int rc = ::poll(&p, 1, PollMillis(deadline));
    if (rc < 0 && errno != EINTR) return ErrnoStatus("poll", errno);
    if (rc > 0) {
      const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) return Socket(fd);
      if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
        return ErrnoStatus("accept", errno);
      }
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError("no connection arrived in time");
    }
  }
}

absl::StatusOr<int> Socket::LocalPort() const {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return ErrnoStatus("getsockname", errno);
  }
  return ntohs(addr.sin_port);
}

std::string Socket::PeerAddress() const {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return "?";
  }
  char ip[INET_ADDRSTRLEN] = {0};
  inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof(ip));
  return absl::StrCat(ip, ":", ntohs(addr.sin_port));
}

bool Socket::PeerIsLocal() const { return TcpPeerIsLocal(fd_); }

absl::Status Socket::SetCongestionControl(const std::string& name) const {
  return SetTcpCongestionControl(fd_, name);
}

absl::StatusOr<std::string> Socket::CongestionControl() const {
  return GetTcpCongestionControl(fd_);
}

absl::Status Socket::Configure(int send_buffer_bytes, int receive_buffer_bytes,
                               absl::Duration slice) {
  const int one = 1;
  if (setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    return ErrnoStatus("TCP_NODELAY", errno);
  }
  if (send_buffer_bytes > 0) RETURN_IF_ERROR(SetSendBuffer(send_buffer_bytes));
  if (receive_buffer_bytes > 0 &&
      setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes,
                 sizeof(receive_buffer_bytes)) != 0) {
    return ErrnoStatus("SO_RCVBUF", errno);
  }
  timeval tv{};
  tv.tv_sec = absl::ToInt64Seconds(slice);
  tv.tv_usec = absl::ToInt64Microseconds(slice) % 1000000;
  if (setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
      setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0) {
    return ErrnoStatus("SO_RCVTIMEO", errno);
  }
  return absl::OkStatus();
}

absl::Status Socket::SetSendBuffer(int bytes) const {
  if (setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes)) != 0) {
    return ErrnoStatus("SO_SNDBUF", errno);
  }
  return absl::OkStatus();
}

absl::Status Socket::SendAll(const void* data, size_t len, absl::Time deadline,
                             const std::atomic<bool>* aborted) const {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    const ssize_t n = ::send(fd_, p, len, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    const int err = errno;
    if (aborted != nullptr && aborted->load(std::memory_order_relaxed)) {
      return absl::AbortedError("communicator aborted");
    }
    if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK || err == EINTR)) {
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError(
            "timed out sending: the peer is not receiving");
      }
      continue;
    }
    return ErrnoStatus("send", err);
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> Socket::SendNonBlocking(const void* data,
                                               size_t len) const {
  const ssize_t n = ::send(fd_, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n >= 0) return static_cast<size_t>(n);
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
  return ErrnoStatus("send", errno);
}

absl::Status Socket::RecvAll(void* data, size_t len, absl::Time deadline,
                             const std::atomic<bool>* aborted,
                             int spin_polls) const {
  char* p = static_cast<char*>(data);
  int spins = spin_polls;
  while (len > 0) {
    const int flags = spins > 0 ? MSG_DONTWAIT : 0;
    const ssize_t n = ::recv(fd_, p, len, flags);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      if (aborted != nullptr && aborted->load(std::memory_order_relaxed)) {
        return absl::AbortedError("communicator aborted");
      }
      return absl::UnavailableError(
          "connection closed by the peer (its process died or aborted)");
    }
    const int err = errno;
    if (aborted != nullptr && aborted->load(std::memory_order_relaxed)) {
      return absl::AbortedError("communicator aborted");
    }
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR) {
      // Checked while spinning too: on a crowded host each sched_yield can
      // hand the core away for a whole time slice, so the polls alone may
      // outlast the deadline.
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError(
            "timed out waiting for data from the peer");
      }
      if (spins > 0) {
        --spins;
        sched_yield();
      }
      continue;
    }
    return ErrnoStatus("recv", err);
  }
  return absl::OkStatus();
}

void Socket::Shutdown() const {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void Socket::Close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

}  // namespace gradsync
