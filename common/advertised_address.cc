#include "common/advertised_address.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
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

}  // namespace gradsync
