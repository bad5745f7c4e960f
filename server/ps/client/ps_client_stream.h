// Pieces that the parameter-server clients (PsClient, PsStep) share around
// one gRPC tensor stream: pinning the memory a stream sends, reading a
// PushPull reply into the caller's parameters, ending the stream with its
// status combined with the caller's own, and naming the shard in an
// error, and the state a mode switch moves. Internal to server/ps.
//
// Threading: a SendPin and a reply read belong to one stream's thread.
#ifndef GRADSYNC_SERVER_PS_CLIENT_PS_CLIENT_STREAM_H_
#define GRADSYNC_SERVER_PS_CLIENT_PS_CLIENT_STREAM_H_

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/notification.h"
#include "absl/types/span.h"
#include "common/model_init/parameter_state.h"
#include "proto/ps.pb.h"
#include "server/ps/transport/raw_tensor_rpc.h"
#include "server/ps/transport/tensor_stream.h"

namespace gradsync {

struct PsShardLocation;

// Holds the memory a stream sends referenced (the pin) and waits until
// gRPC has dropped every reference, so that the caller may reuse it.
class SendPin {
 public:
  SendPin();
  SendPin(const SendPin&) = delete;
  SendPin& operator=(const SendPin&) = delete;

  const std::shared_ptr<const void>& pin() const { return pin_; }
  // Drops our own reference and waits (a bounded time: gRPC lets go as
  // soon as the bytes are on the socket or the call is cancelled) for
  // gRPC's. INTERNAL if it still holds them.
  [[nodiscard]] absl::Status Release();

 private:
  absl::Notification released_;
  std::shared_ptr<const void> pin_;
};

// The call's outcome: the server's status when it failed (it explains a
// broken stream best), else ours.
[[nodiscard]] absl::Status StreamOutcome(const grpc::Status& finished,
                                         absl::Status ours);

// DATA_LOSS unless [begin, end) is the range `location` expects; `what`
// names the message ("the reply").
[[nodiscard]] absl::Status CheckShardRange(const char* what, int64_t begin,
                                           int64_t end,
                                           const PsShardLocation& location);

// Reads a PushPull reply (a header, then the parameter chunks of the
// shard's range) from `stream` into `params` until the server ends it.
// `reply` gets the header; `bytes_received` counts the parameter bytes;
// `complete` says whether every parameter arrived (a server that failed
// the call ends early: its status, from Finish, explains why). Errors:
// DATA_LOSS for a reply without a header or of another range,
// INVALID_ARGUMENT for malformed chunks; the caller then cancels the call
// (the server may still be writing).
[[nodiscard]] absl::Status ReadPullReply(RawClientStream* stream,
                                         const PsShardLocation& location,
                                         absl::Span<float> params,
                                         ps::PullHeader* reply,
                                         std::atomic<uint64_t>* bytes_received,
                                         bool* complete);
// The same into `bytes` (the range's elements of `element_bytes` each: 4,
// or 2 for a 16-bit job's reply).
[[nodiscard]] absl::Status ReadPullReply(
    RawClientStream* stream, const PsShardLocation& location,
    absl::Span<char> bytes, size_t element_bytes, ps::PullHeader* reply,
    std::atomic<uint64_t>* bytes_received, bool* complete);

// The DATA_LOSS of a reply that ended before all of `params` arrived.
[[nodiscard]] absl::Status ShortReplyError(const PsShardLocation& location);

// Ends a PushPull stream whose gradient went out whole (`sent`) or not,
// and whose reply ReadPullReply read whole (`complete`) or not. `status`,
// the client's own error, cancels the call (the server may still be
// writing) and is the outcome; else the server's failure, else
// UNAVAILABLE for a gradient cut short, else the short reply's DATA_LOSS.
[[nodiscard]] absl::Status FinishPushPull(grpc::ClientContext* context,
                                          RawClientStream* stream,
                                          absl::Status status, bool sent,
                                          bool complete,
                                          const PsShardLocation& location);

// `status` with the shard and its address named ("ps shard K at A
// (<context>): ..."; no parentheses when `context` is empty), and a hint
// to check the server when it is UNAVAILABLE.
[[nodiscard]] absl::Status ShardError(const PsShardLocation& location,
                                      absl::string_view context,
                                      const absl::Status& status);

// Checks a FetchState header against `location` (its range, its optimizer,
// the optimizer's buffer count), sizes `part` for the shard's slice and
// returns the receiver that fills its parameters and optimizer buffers.
// DATA_LOSS for a header that does not match; INVALID_ARGUMENT for an
// unknown optimizer.
[[nodiscard]] absl::StatusOr<std::unique_ptr<TensorReceiver>>
StartStateReceiver(const ps::FetchStateHeader& header,
                   const PsShardLocation& location, ParameterState* part);

// The header of a SeedShard stream that seeds `location` from the whole
// `state`.
ps::SeedShardHeader SeedHeader(const std::string& job_id,
                               const PsShardLocation& location,
                               const ParameterState& state);

// `location`'s slice of the parameters, then of each optimizer buffer.
std::vector<absl::Span<const float>> ShardSlices(
    const PsShardLocation& location, const ParameterState& state);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_CLIENT_PS_CLIENT_STREAM_H_
