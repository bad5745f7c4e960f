// Transport settings of the parameter server's gRPC traffic, shared by the
// server and its clients, and the process-wide malloc tuning that large
// tensor messages want.
//
// Why (measured with gradsync-ps-bench; see server/ps/bench/ps_bench.cc):
// - HTTP/2 BDP probing grows a stream's flow-control window slowly and
//   stalls multi-megabyte pushes; a fixed large window (probing off,
//   stream_window_bytes of lookahead) keeps the pipe full.
// - gRPC allocates its receive buffers with malloc; glibc serves large
//   blocks with mmap and returns them with munmap, so every megabyte pays
//   page faults. Raising M_MMAP_THRESHOLD and M_TRIM_THRESHOLD keeps them
//   in the heap (TuneMallocForTensorTraffic).
// - BBR paces loopback connections too: with the policy "auto", connections
//   between processes of one host run reno (ps_socket_mutator.h).
// - Each channel gets its own TCP connection (a local subchannel pool), so
//   that shards and ranks do not share one connection's window.
//
// Thread-safe, except TuneMallocForTensorTraffic (call it early in main).
#ifndef GRADSYNC_SERVER_PS_TRANSPORT_PS_TRANSPORT_H_
#define GRADSYNC_SERVER_PS_TRANSPORT_PS_TRANSPORT_H_

#include <grpcpp/channel.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/support/channel_arguments.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/flags.h"
#include "security/tls.h"

namespace gradsync {

struct PsTransportOptions {
  // HTTP/2 stream and connection window (lookahead) in bytes.
  int stream_window_bytes = 16 << 20;
  // Let gRPC probe the bandwidth-delay product and resize windows (its
  // default); off by default here, see above.
  bool bdp_probe = false;
  // Largest HTTP/2 DATA frame the peer may send us (16 KiB .. 16 MiB - 1);
  // 0 keeps gRPC's default.
  int max_frame_bytes = 0;
  // TCP congestion control of the connections, the TCP ring's policy
  // (common/tcp_congestion.h): "auto" (reno between processes of one
  // host), "default", or an algorithm's name, which the daemon checks with
  // CheckCongestionControl at start.
  std::string congestion_control = "auto";
  // Mutual TLS or plaintext (security/tls.h) of the server and its clients'
  // channels; default plaintext.
  GrpcSecurity security;
};

// Channel arguments for a PS client channel to `address` ("host:port").
grpc::ChannelArguments PsChannelArguments(
    const std::string& address,
    const PsTransportOptions& options = PsTransportOptions());

// Adds the same settings to a server under construction.
void ApplyPsServerArguments(
    grpc::ServerBuilder* builder,
    const PsTransportOptions& options = PsTransportOptions());

// A channel to a PS at `address` ("host:port") with those arguments,
// secured as options.security says; it connects on first use.
std::shared_ptr<grpc::Channel> CreatePsChannel(
    const std::string& address,
    const PsTransportOptions& options = PsTransportOptions());

// A channel for a PS's small control calls (CreateShard, ReleaseShard,
// GetShardStats): gRPC's defaults and shared connections, with the PS
// channels' reconnect backoff (common/grpc_connect.h), secured as
// `security` says.
std::shared_ptr<grpc::Channel> CreatePsControlChannel(
    const std::string& address, const GrpcSecurity& security = {});

// How a job's PS steps move their tensors (--ps-transport, PsSpec.transport):
//   "plane"  the servers' tensor planes (tensor_plane_client.h): plain TCP
//            after an HMAC handshake that proves the job's token, as the
//            ring's data; the default, also beside TLS (docs/security.md).
//            A server that serves no plane gets the gRPC streams.
//   "grpc"   gRPC streams, under the cluster's mutual TLS: for networks
//            where tensors must be encrypted, at a CPU cost
//            (docs/performance/ps-transport.md).
inline constexpr char kPsTransportPlane[] = "plane";
inline constexpr char kPsTransportGrpc[] = "grpc";
inline constexpr char kDefaultPsTransport[] = "plane";
// OK for "plane" and "grpc"; else INVALID_ARGUMENT naming `flag`.
[[nodiscard]] absl::Status CheckPsTransport(absl::string_view flag,
                                            absl::string_view value);
// --ps-transport plane|grpc into `out` (checked).
FlagSpec PsTransportFlag(std::string help, std::string* out);

// --ps-plaintext, the switch of gradsync-ps and gradsync-worker that keeps
// the PS connections (the tensor streams and shard calls) in plaintext
// while every other connection keeps the daemon's mutual TLS: for an
// isolated network where TLS's cost on the gRPC PS path is too high
// (docs/security.md). Every PS call still carries its job's token. (The
// tensor plane is plaintext anyway: this is for the gRPC transport.)
FlagSpec PsPlaintextFlag(bool* out);
// What such a daemon says at start.
inline constexpr char kPsPlaintextWarning[] =
    "WARNING: --ps-plaintext: the parameter-server connections are neither "
    "encrypted nor authenticated by TLS (job tokens still authenticate each "
    "call); run it on an isolated network only";

// Raises glibc's mmap and trim thresholds so that megabyte buffers are
// reused from the heap instead of mapped and unmapped each time.
// Process-wide: call once from main() before threads start. Returns false
// if the C library refused (the process still works, only slower).
bool TuneMallocForTensorTraffic();

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_TRANSPORT_PS_TRANSPORT_H_
