// The client side of the gRPC rendezvous store: a gradsync::Store whose keys
// live in a StoreServer (or the coordinator) at `target`, for ranks that are
// separate processes or hosts.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
//                    ConnectGrpcStore("node0:29500", absl::Seconds(30)));
//   PrefixStore job_store(store.get(), "job-7/gen-2");
//
// Deadlines: a blocking call (Get, Wait) sends the time left to the caller's
// deadline as the server-side wait, and uses the same deadline plus
// kRpcGrace as the gRPC deadline, so that the server's DEADLINE_EXCEEDED,
// which names the missing keys, is what arrives. Set and Add, which do not
// wait for other ranks, have kUnaryRpcTimeout.
//
// Errors: the Store contract (DEADLINE_EXCEEDED naming the keys,
// FAILED_PRECONDITION from Add), plus UNAVAILABLE when the server cannot be
// reached or went away, CANCELLED and RESOURCE_EXHAUSTED (the server has no
// thread left); these carry the target and the keys in their message.
//
// Thread-safe: one client may be shared by all ranks of a process.
#ifndef GRADSYNC_SERVER_STORE_GRPC_STORE_H_
#define GRADSYNC_SERVER_STORE_GRPC_STORE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collectives/store.h"
#include "security/tls.h"

namespace gradsync {

// Extra gRPC deadline on blocking calls beyond the caller's deadline.
inline constexpr absl::Duration kRpcGrace = absl::Seconds(2);

// gRPC deadline of Set and Add.
inline constexpr absl::Duration kUnaryRpcTimeout = absl::Seconds(30);

// Connects to the store server at `target` ("host:port"), secured as
// `security` says (security/tls.h), waiting up to `connect_timeout` for the
// connection to be ready.
// Errors: INVALID_ARGUMENT for an empty target; UNAVAILABLE "store at
// <target> is unreachable after <timeout>; ..." when no connection could be
// made in time.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Store>> ConnectGrpcStore(
    const std::string& target, absl::Duration connect_timeout,
    const GrpcSecurity& security = {});

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_STORE_GRPC_STORE_H_
