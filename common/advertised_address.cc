#include "common/advertised_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"

namespace gradsync {

bool IsLoopbackHost(absl::string_view host) {
  if (absl::ConsumePrefix(&host, "[")) absl::ConsumeSuffix(&host, "]");
  return absl::EqualsIgnoreCase(host, "localhost") ||
         absl::StartsWith(host, "127.") || host == "::1" ||
         absl::EqualsIgnoreCase(host, "::ffff:127.0.0.1");
}

std::optional<std::string> PeerIp(absl::string_view grpc_peer) {
  std::string peer = absl::StrReplaceAll(
      grpc_peer, {{"%5B", "["}, {"%5D", "]"}, {"%5b", "["}, {"%5d", "]"}});
  absl::string_view rest = peer;
  if (absl::ConsumePrefix(&rest, "ipv4:")) {
    const size_t colon = rest.rfind(':');
    if (colon == absl::string_view::npos || colon == 0) return std::nullopt;
    return std::string(rest.substr(0, colon));
  }
  if (absl::ConsumePrefix(&rest, "ipv6:")) {
    if (!absl::ConsumePrefix(&rest, "[")) return std::nullopt;
    const size_t close = rest.find(']');
    if (close == absl::string_view::npos || close == 0) return std::nullopt;
    return std::string(rest.substr(0, close));
  }
  return std::nullopt;
}

std::string HostOf(absl::string_view address) {
  if (absl::StartsWith(address, "[")) {
    const size_t close = address.find(']');
    if (close != absl::string_view::npos) {
      return std::string(address.substr(1, close - 1));
    }
  }
  const size_t first = address.find(':');
  if (first != absl::string_view::npos && address.rfind(':') == first) {
    return std::string(address.substr(0, first));  // HOST:PORT
  }
  return std::string(address);  // HOST, or a bare IPv6 address
}

absl::Status CheckAdvertisedAddress(absl::string_view who,
                                    absl::string_view advertised,
                                    absl::string_view grpc_peer,
                                    absl::string_view flag) {
  const std::string host = HostOf(advertised);
  if (!IsLoopbackHost(host)) return absl::OkStatus();
  const std::optional<std::string> peer = PeerIp(grpc_peer);
  if (!peer.has_value() || IsLoopbackHost(*peer)) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(who, " registers the address ", advertised,
                   ", which only its own host "
                   "can reach, but called from ",
                   *peer,
                   ": other hosts' ranks would "
                   "connect to themselves. Start it with ",
                   flag,
                   " set to an address the "
                   "other hosts reach (",
                   *peer,
                   ", the one it reached the coordinator "
                   "from, is one)"));
}

absl::StatusOr<std::string> LocalAddressToward(absl::string_view address) {
  const std::string host = HostOf(address);
  const size_t colon = address.rfind(':');
  const std::string port =
      colon == absl::string_view::npos ||
              address.substr(colon).find(']') != absl::string_view::npos
          ? std::string("1")
          : std::string(address.substr(colon + 1));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
      rc != 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot resolve ", host, " (of ", address, "): ", gai_strerror(rc)));
  }
  std::string local;
  int error = 0;
  for (addrinfo* a = found; a != nullptr && local.empty(); a = a->ai_next) {
    const int fd = socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage mine{};
    socklen_t len = sizeof(mine);
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &len) == 0) {
      char text[INET6_ADDRSTRLEN] = {};
      const void* raw =
          mine.ss_family == AF_INET6
              ? static_cast<const void*>(
                    &reinterpret_cast<sockaddr_in6*>(&mine)->sin6_addr)
              : static_cast<const void*>(
                    &reinterpret_cast<sockaddr_in*>(&mine)->sin_addr);
      if (inet_ntop(mine.ss_family, raw, text, sizeof(text)) != nullptr) {
        local = text;
      }
    } else {
      error = errno;
    }
    close(fd);
  }
  freeaddrinfo(found);
  if (local.empty()) {
    return absl::UnavailableError(
        absl::StrCat("no route from this host to ", address,
                     error != 0 ? absl::StrCat(": ", strerror(error)) : ""));
  }
  return local;
}

namespace {

bool IsWildcardHost(absl::string_view host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]";
}

// "HOST:PORT" with brackets around an IPv6 host.
std::string JoinHostPort(absl::string_view host, int port) {
  const bool v6 = absl::StrContains(host, ':') && !absl::StartsWith(host, "[");
  return v6 ? absl::StrCat("[", host, "]:", port)
            : absl::StrCat(host, ":", port);
}

}  // namespace

absl::StatusOr<std::string> CoordinatorAdvertisedAddress(
    absl::string_view advertise, absl::string_view listen_host, int port,
    absl::string_view host_name) {
  if (!advertise.empty()) {
    const std::string host = HostOf(advertise);
    int advertised_port = port;
    const bool has_port =
        host.size() != advertise.size() &&
        !(absl::StartsWith(advertise, "[") && absl::EndsWith(advertise, "]"));
    if (has_port) {
      const absl::string_view digits =
          advertise.substr(advertise.rfind(':') + 1);
      if (!absl::SimpleAtoi(digits, &advertised_port) || advertised_port < 1 ||
          advertised_port > 65535) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--advertise ", advertise,
            ": the port must be 1..65535; give HOST or HOST:PORT"));
      }
    }
    if (IsWildcardHost(host)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--advertise ", advertise,
          ": a wildcard is where to listen, not where to be reached; give "
          "the host name or address the other hosts reach this one at"));
    }
    return JoinHostPort(host, advertised_port);
  }
  if (!IsWildcardHost(listen_host)) return JoinHostPort(listen_host, port);
  // Any routable address takes the default route; no packet is sent.
  absl::StatusOr<std::string> routed = LocalAddressToward("192.0.2.1:9");
  return JoinHostPort(routed.ok() ? *routed : std::string(host_name), port);
}

}  // namespace gradsync
