// PushPullReactor: one PushPull call (proto/ps.proto) on gRPC's callback
// API. This is the parameter server's hot path: a 64 MiB push and pull is
// 128 messages of 1 MiB per rank and step.
//
// Why callbacks: a blocking (sync API) handler waits in Read/Write while
// one of gRPC's polling threads does the I/O and then wakes it, a thread
// hand-off per message. Here each received chunk is taken, and the next
// write started, by the reaction that gRPC runs on the polling thread
// itself. What may block (a shard's waits for the last worker, the
// staleness bound, readers; applying the step) runs on a BlockingExecutor,
// which costs two hand-offs per call instead of one per message.
//
// The call, in phases (each starts the I/O that leads to the next):
//   header    read the first message (header + first chunk)  [reaction]
//   begin     find the shard, BeginPush (may wait)            [executor]
//   gradient  take each chunk without a copy                   [reaction]
//   trailer   the step scalars, if the header announced them   [reaction]
//   end       read the client's half-close                     [reaction]
//   commit    Commit (the last rank applies the step), Pull    [executor]
//             (waits until the step is applied)
//   reply     write the parameters chunk by chunk, then Finish [reaction]
// A pull-only request goes from begin to Pull. Exactly one phase runs at a
// time, so the reactor's state needs no lock: a phase's last act is the
// gRPC call (StartRead, StartWrite, Finish) that lets the next one run.
//
// Errors are PsRpc's for PushPull (ps_rpc.h); a failed call abandons its
// push, so the shard is unchanged.
#ifndef GRADSYNC_SERVER_PS_DAEMON_PUSH_PULL_REACTOR_H_
#define GRADSYNC_SERVER_PS_DAEMON_PUSH_PULL_REACTOR_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include <atomic>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/blocking_executor.h"
#include "proto/ps.pb.h"
#include "server/ps/daemon/ps_service.h"
#include "server/ps/shard/ps_shard.h"
#include "server/ps/transport/tensor_codec.h"
#include "server/ps/transport/tensor_stream.h"

namespace gradsync {

class PushPullReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // What the reactor needs from its server; all outlive every call.
  struct Env {
    PsService* service = nullptr;
    BlockingExecutor* executor = nullptr;
    const std::atomic<bool>* shutting_down = nullptr;
  };

  // Starts the call; the reactor deletes itself when gRPC is done with it.
  PushPullReactor(const Env& env, grpc::CallbackServerContext* context);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  enum class Phase { kHeader, kGradient, kTrailer, kEnd, kReply };

  ~PushPullReactor() override = default;

  // Executor phases.
  void Begin();
  void CommitAndPull();
  // Begin's and CommitAndPull's work; OK means the next I/O has started.
  [[nodiscard]] absl::Status DoBegin();
  [[nodiscard]] absl::Status DoCommitAndPull();
  // Waits for the parameters of pull_step_ and starts the reply.
  [[nodiscard]] absl::Status PullAndReply();

  // Starts writing the next chunk of the reply (Finish with the last).
  void WriteNext();
  // Ends the call with `status`, abandoning an unfinished push.
  void Fail(const absl::Status& status);
  // kGradient until the whole gradient is in, then kTrailer if the header
  // announced one, else kEnd.
  Phase PhaseAfterChunk() const;
  // "the client went away" or "the stream ended" after what was received.
  [[nodiscard]] absl::Status StreamEnded() const;
  // `status` (if an error) naming the rank and step whose push failed.
  [[nodiscard]] absl::Status ReceiveError(const absl::Status& status) const;
  [[nodiscard]] absl::Status Alive() const;

  const Env env_;
  grpc::CallbackServerContext* const context_;
  Phase phase_ = Phase::kHeader;

  grpc::ByteBuffer in_;
  DecodedTensorMessage first_;  // the header's message, until Begin
  DecodedTensorMessage message_;
  ps::PushHeader header_;
  size_t chunk_bytes_ = 0;
  std::shared_ptr<PsShard> shard_;
  absl::Time deadline_;
  std::optional<PsShard::Push> push_;
  int64_t pull_step_ = 0;

  ShardViewRef view_;
  ps::PullHeader reply_;
  std::optional<TensorMessages> reply_messages_;  // view_'s parameters
  grpc::ByteBuffer out_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_DAEMON_PUSH_PULL_REACTOR_H_
