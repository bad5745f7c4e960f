#include "common/listen_sockets.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gradsync {
namespace {

// A listening socket of `family` bound to `address`, or -errno.
int ListenOn(int family, const sockaddr* address, socklen_t length,
             bool dual_stack, UniqueFd* out) {
  UniqueFd fd(socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return -errno;
  const int yes = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  // Accepted sockets inherit it: gRPC's frames go out at once.
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
  if (family == AF_INET6) {
    const int v6only = dual_stack ? 0 : 1;
    setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
  }
  if (bind(fd.get(), address, length) != 0 ||
      listen(fd.get(), SOMAXCONN) != 0) {
    return -errno;
  }
  *out = std::move(fd);
  return 0;
}

int BoundPort(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return 0;
  }
  return address.ss_family == AF_INET6
             ? ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port)
             : ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

[[nodiscard]] absl::Status BindError(const std::string& host, int port,
                                     int error) {
  return absl::UnavailableError(absl::StrCat("cannot listen on ", host, ":",
                                             port, ": ", strerror(error)));
}

// A wildcard host: one dual-stack [::] socket, or 0.0.0.0 without IPv6.
[[nodiscard]] absl::StatusOr<ListenSockets> BindWildcard(
    const std::string& host, int port) {
  ListenSockets sockets;
  UniqueFd fd;
  sockaddr_in6 any6{};
  any6.sin6_family = AF_INET6;
  any6.sin6_addr = in6addr_any;
  any6.sin6_port = htons(static_cast<uint16_t>(port));
  int rc = ListenOn(AF_INET6, reinterpret_cast<const sockaddr*>(&any6),
                    sizeof(any6), /*dual_stack=*/true, &fd);
  if (rc == -EAFNOSUPPORT || rc == -EADDRNOTAVAIL) {
    sockaddr_in any4{};
    any4.sin_family = AF_INET;
    any4.sin_addr.s_addr = htonl(INADDR_ANY);
    any4.sin_port = htons(static_cast<uint16_t>(port));
    rc = ListenOn(AF_INET, reinterpret_cast<const sockaddr*>(&any4),
                  sizeof(any4), false, &fd);
  }
  if (rc != 0) return BindError(host, port, -rc);
  sockets.port = BoundPort(fd.get());
  sockets.fds.push_back(std::move(fd));
  return sockets;
}

}  // namespace

absl::StatusOr<ListenSockets> BindListenSockets(const std::string& host,
                                                int port) {
  if (host == "0.0.0.0" || host == "::") {
    return BindWildcard(host, port);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc =
          getaddrinfo(host.c_str(), absl::StrCat(port).c_str(), &hints, &found);
      rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", host, ":",
                                               port, ": ", gai_strerror(rc)));
  }
  ListenSockets sockets;
  sockets.port = port;
  int last_error = EADDRNOTAVAIL;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    sockaddr_storage address{};
    memcpy(&address, a->ai_addr, a->ai_addrlen);
    // Port 0: every address on the port the first bind picked.
    if (a->ai_family == AF_INET6) {
      reinterpret_cast<sockaddr_in6*>(&address)->sin6_port =
          htons(static_cast<uint16_t>(sockets.port));
    } else {
      reinterpret_cast<sockaddr_in*>(&address)->sin_port =
          htons(static_cast<uint16_t>(sockets.port));
    }
    UniqueFd fd;
    const int rc = ListenOn(a->ai_family, reinterpret_cast<sockaddr*>(&address),
                            a->ai_addrlen, false, &fd);
    if (rc != 0) {
      last_error = -rc;
      continue;
    }
    if (sockets.port == 0) sockets.port = BoundPort(fd.get());
    sockets.fds.push_back(std::move(fd));
  }
  freeaddrinfo(found);
  // Like gRPC, some of a name's addresses are enough (a host without ::1).
  if (sockets.fds.empty()) return BindError(host, port, last_error);
  return sockets;
}

std::string SocketAddressHost(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = "";
  if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) {
      inet_ntop(AF_INET, &v6->sin6_addr.s6_addr[12], text, sizeof(text));
    } else {
      inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
    }
  } else if (address.ss_family == AF_INET) {
    inet_ntop(AF_INET,
              &reinterpret_cast<const sockaddr_in*>(&address)->sin_addr, text,
              sizeof(text));
  } else {
    return "an unknown address";
  }
  return text;
}

std::string SocketAddressString(const sockaddr_storage& address) {
  const std::string host = SocketAddressHost(address);
  int port = 0;
  bool v6 = false;
  if (address.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&address);
    port = ntohs(a->sin6_port);
    v6 = !IN6_IS_ADDR_V4MAPPED(&a->sin6_addr);
  } else if (address.ss_family == AF_INET) {
    port = ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
  } else {
    return host;
  }
  return v6 ? absl::StrCat("[", host, "]:", port)
            : absl::StrCat(host, ":", port);
}

}  // namespace gradsync
