// TensorPlaneChannel: the client end of one PS tensor plane connection
// (tensor_plane_wire.h). Requests go out in order and replies come back in
// the same order, so one thread may write the next request (a partition)
// while another reads the previous reply; each direction belongs to one
// thread at a time. Parameters are received straight into the caller's
// buffer.
//
// Connect runs the handshake (tensor_plane_handshake.h): the server proves
// the job's PS token first, then the client; the token never crosses the
// wire, and the tensors that follow are plaintext.
//
// Errors: UNAVAILABLE naming the address when the connection fails or the
// server went away; DEADLINE_EXCEEDED when a call's deadline passes;
// ABORTED after Shutdown; a server's error reply as its own code and
// message. After any error the channel is broken: connect again.
#ifndef GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_PLANE_CLIENT_H_
#define GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_PLANE_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "collectives/transports/tcp/link_timing.h"
#include "collectives/transports/tcp/socket.h"
#include "proto/ps.pb.h"
#include "server/ps/transport/tensor_plane_probe.h"
#include "server/ps/transport/tensor_plane_wire.h"

namespace gradsync {

// Who a connection is for: the job, the rank, and the job's PS token
// (Assignment.ps_token; "" for an open server, gradsync bench's).
struct PlaneIdentity {
  std::string job_id;
  int rank = 0;
  std::string token;
};

class TensorPlaneChannel {
 public:
  // Connects to a server's tensor port at `address` ("host:port") under
  // the congestion control `policy` (common/tcp_congestion.h), and proves
  // `identity`; retries a refused connection until `deadline`, or
  // CANCELLED once `*cancelled`. PERMISSION_DENIED when the server does
  // not prove the job's token (not the job's server) or refuses ours;
  // the server's own error (UNAVAILABLE before it registered) as it is.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TensorPlaneChannel>>
  Connect(const std::string& address, const std::string& policy,
          const PlaneIdentity& identity, absl::Time deadline,
          const std::atomic<bool>* cancelled = nullptr);

  TensorPlaneChannel(const TensorPlaneChannel&) = delete;
  TensorPlaneChannel& operator=(const TensorPlaneChannel&) = delete;

  // Starts a request: its head and `header`.
  [[nodiscard]] absl::Status SendHeader(const ps::PushHeader& header,
                                        absl::Time deadline);
  // One chunk of the request's gradient: `data`, the shard's elements from
  // `offset` on.
  [[nodiscard]] absl::Status SendChunk(int64_t offset,
                                       absl::Span<const float> data,
                                       absl::Time deadline);
  // The same for raw bytes (a 16-bit job's gradient: 2 per element);
  // `offset` still counts elements.
  [[nodiscard]] absl::Status SendChunk(int64_t offset,
                                       absl::Span<const char> data,
                                       absl::Time deadline);
  // The trailer's step scalars (PushHeader.trailer_scalars of them).
  [[nodiscard]] absl::Status SendTrailer(absl::Span<const double> scalars,
                                         absl::Time deadline);
  // The next reply: its PullHeader into `header`, its parameters into
  // `params`, which must be exactly as many (INVALID_ARGUMENT otherwise, and
  // the channel is broken).
  [[nodiscard]] absl::Status ReadReply(ps::PullHeader* header,
                                       absl::Span<float> params,
                                       absl::Time deadline);
  // The same into raw bytes (a 16-bit job's reply: 2 per parameter).
  [[nodiscard]] absl::Status ReadReply(ps::PullHeader* header,
                                       absl::Span<char> params,
                                       absl::Time deadline);

  // Link probes (tensor_plane_probe.h), on a channel that carries nothing
  // else: `count` timed round trips; `bytes` streamed to the server, which
  // answers the goodput it timed; `bytes` streamed from it, timed here.
  // `*abort` (or Shutdown, when `abort` is null) ends them early.
  [[nodiscard]] absl::StatusOr<RoundTripTimes> ProbeRoundTrips(
      int count, absl::Time deadline, const std::atomic<bool>* abort);
  [[nodiscard]] absl::StatusOr<double> ProbeUpload(
      int64_t bytes, absl::Time deadline, const std::atomic<bool>* abort);
  [[nodiscard]] absl::StatusOr<double> ProbeDownload(
      int64_t bytes, absl::Time deadline, const std::atomic<bool>* abort);

  // Wakes blocked calls; later calls fail (ABORTED). Any thread.
  void Shutdown();
  // True once the server closed its side (an idle connection it timed
  // out, or a restart): connect again rather than send into it. Polled,
  // never blocks.
  bool PeerClosed() const;
  const std::string& address() const { return address_; }

 private:
  TensorPlaneChannel(Socket socket, std::string address)
      : socket_(std::move(socket)), address_(std::move(address)) {}
  // `status` naming the address.
  [[nodiscard]] absl::Status Named(const absl::Status& status) const;
  // The client's half of the handshake.
  [[nodiscard]] absl::Status Handshake(const PlaneIdentity& identity,
                                       absl::Time deadline);
  // The next reply head and its header (a PullHeader, a challenge or the
  // server's error message), as sent.
  [[nodiscard]] absl::Status ReadHead(absl::Time deadline,
                                      tensor_plane::ReplyHead* head,
                                      std::string* header);
  // A reply head and its header (the server's error as a status): the
  // handshake's replies and a probe's answer.
  [[nodiscard]] absl::StatusOr<std::string> ReadOkHeader(absl::Time deadline);
  // Sends a probe's head and reads the server's acceptance (its error as
  // a status): the bytes it will send.
  [[nodiscard]] absl::StatusOr<uint64_t> StartProbe(
      const tensor_plane::ProbeHead& probe, absl::Time deadline,
      const std::atomic<bool>* abort);

  Socket socket_;
  const std::string address_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_TRANSPORT_TENSOR_PLANE_CLIENT_H_
