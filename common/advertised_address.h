// Advertised addresses. Whether a daemon's advertised address can work: a
// worker or parameter server that registers a loopback address (127.0.0.1, ::1,
// localhost) from another host would have every peer connect to itself, and its
// jobs fail only at the rendezvous timeout with "connection refused" (issue 44,
// trap 2). The coordinator refuses such a registration at once, naming
// the flag to set, when the call itself came from a non-loopback address.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_COMMON_ADVERTISED_ADDRESS_H_
#define GRADSYNC_COMMON_ADVERTISED_ADDRESS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// "localhost", 127.0.0.0/8, ::1 (bracketed or not).
bool IsLoopbackHost(absl::string_view host);

// The IP of a gRPC peer string ("ipv4:10.0.0.2:5123", "ipv6:[::1]:5123",
// also with the brackets percent-encoded); nothing for "unix:..." and
// anything else it cannot read.
std::optional<std::string> PeerIp(absl::string_view grpc_peer);

// The host part of "HOST", "HOST:PORT", "[V6]:PORT" or a bare IPv6 address.
std::string HostOf(absl::string_view address);

// OK unless `advertised` (an address or HOST:PORT) is loopback and the
// registration came from a peer that is not; then FAILED_PRECONDITION
// naming `who` ("worker on host h1"), both addresses and `flag`, the
// daemon's option to set.
[[nodiscard]] absl::Status CheckAdvertisedAddress(absl::string_view who,
                                                  absl::string_view advertised,
                                                  absl::string_view grpc_peer,
                                                  absl::string_view flag);

// The local IP this host uses to reach `address` (HOST:PORT, e.g. the
// coordinator's): the source address the kernel picks for a UDP socket
// connected there (no packet is sent), as Gloo and NCCL pick theirs.
// That is the interface the cluster reaches this host on, where a
// wildcard listen or a host name would not say. UNAVAILABLE when the host
// does not resolve or no route leads there.
[[nodiscard]] absl::StatusOr<std::string> LocalAddressToward(
    absl::string_view address);

// The address a coordinator bound to `listen_host`:`port` tells the
// cluster to reach it at (its --advertise, issue 44): `advertise` (HOST or
// HOST:PORT; the port defaults to `port`), else `listen_host`:`port` with a
// wildcard host ("", 0.0.0.0, ::) replaced by the address of the interface
// on the default route, or by `host_name` where there is no route.
// INVALID_ARGUMENT for an `advertise` that is a wildcard or has a bad port.
[[nodiscard]] absl::StatusOr<std::string> CoordinatorAdvertisedAddress(
    absl::string_view advertise, absl::string_view listen_host, int port,
    absl::string_view host_name);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_ADVERTISED_ADDRESS_H_
