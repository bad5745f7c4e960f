#include "common/tcp_congestion.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/host.h"

namespace gradsync {
namespace {

bool IsLoopback(const in_addr& a) { return (ntohl(a.s_addr) >> 24) == 127; }

// Whether one of this host's interfaces has address `a` (IPv4 or IPv6).
bool IsInterfaceAddress(int family, const void* a) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* i = list; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != family) continue;
    if (family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
      found = memcmp(&in->sin_addr, a, sizeof(in_addr)) == 0;
    } else {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      found = memcmp(&in6->sin6_addr, a, sizeof(in6_addr)) == 0;
    }
  }
  freeifaddrs(list);
  return found;
}

}  // namespace

std::string CongestionControlFor(const std::string& policy,
                                 bool peer_is_local) {
  if (policy.empty() || policy == "default") return "";
  if (policy == "auto") return peer_is_local ? "reno" : "";
  return policy;
}

absl::Status CheckCongestionControl(const std::string& name) {
  if (name.empty() || name == "auto" || name == "default") {
    return absl::OkStatus();
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("socket() for probing TCP congestion control '", name,
                     "': ", strerror(errno)));
  }
  absl::Status status = SetTcpCongestionControl(fd, name);
  close(fd);
  return status;
}

absl::Status SetTcpCongestionControl(int fd, const std::string& name) {
  if (name.size() > kMaxCongestionControlName) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TCP congestion control '", name, "' is longer than a kernel ",
        "algorithm name (", kMaxCongestionControlName, " characters)"));
  }
  if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                 static_cast<socklen_t>(name.size())) != 0) {
    const int err = errno;
    return absl::FailedPreconditionError(absl::StrCat(
        "the kernel refused TCP congestion control '", name, "' (",
        strerror(err),
        "): pick one listed in /proc/sys/net/ipv4/"
        "tcp_allowed_congestion_control, or 'default' for the system's"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> GetTcpCongestionControl(int fd) {
  char name[kMaxCongestionControlName + 1] = {0};
  socklen_t len = sizeof(name);
  if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("TCP_CONGESTION: ", strerror(errno)));
  }
  return std::string(name, strnlen(name, len));
}

bool TcpPeerClosed(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

bool TcpPeerIsLocal(int fd) {
  sockaddr_storage local{};
  sockaddr_storage peer{};
  socklen_t local_len = sizeof(local);
  socklen_t peer_len = sizeof(peer);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0 ||
      local.ss_family != peer.ss_family) {
    return false;
  }
  if (peer.ss_family == AF_INET) {
    const auto& l = reinterpret_cast<const sockaddr_in&>(local);
    const auto& p = reinterpret_cast<const sockaddr_in&>(peer);
    return IsLoopback(p.sin_addr) || p.sin_addr.s_addr == l.sin_addr.s_addr;
  }
  if (peer.ss_family == AF_INET6) {
    // A dual-stack listener (gRPC's "[::]:port") sees IPv4 peers as
    // ::ffff:a.b.c.d.
    const auto& l = reinterpret_cast<const sockaddr_in6&>(local);
    const auto& p = reinterpret_cast<const sockaddr_in6&>(peer);
    if (IN6_IS_ADDR_LOOPBACK(&p.sin6_addr)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&p.sin6_addr)) {
      in_addr v4{};
      memcpy(&v4, &p.sin6_addr.s6_addr[12], sizeof(v4));
      if (IsLoopback(v4)) return true;
    }
    return memcmp(&p.sin6_addr, &l.sin6_addr, sizeof(in6_addr)) == 0;
  }
  return false;
}

bool HostIsLocal(const std::string& host) {
  std::string h = host;
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') {
    h = h.substr(1, h.size() - 2);
  }
  if (h.empty()) return false;
  if (absl::AsciiStrToLower(h) == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) {
    return IsLoopback(v4) || IsInterfaceAddress(AF_INET, &v4);
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    return IN6_IS_ADDR_LOOPBACK(&v6) || IsInterfaceAddress(AF_INET6, &v6);
  }
  return absl::AsciiStrToLower(h) == absl::AsciiStrToLower(HostName());
}

}  // namespace gradsync
