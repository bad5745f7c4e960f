// PsRpc: the thin gRPC adapter of the parameter server (proto/ps.proto)
// over a PsService. The small calls (CreateShard, ReleaseShard,
// GetShardStats) use the generated protobuf messages; the tensor streams
// (PushPull, SeedShard, FetchState) run on grpc::ByteBuffer
// (raw_tensor_rpc.h) so that tensor bytes never pass through protobuf
// copies. Nothing here but translation: stream framing and checks
// (tensor_stream.h), shard lookups, and the absl::Status -> grpc::Status
// mapping (same code and message).
//
// PushPull, the hot path, runs on gRPC's callback API (push_pull_reactor.h):
// its messages are handled on gRPC's polling threads, and its shard waits
// on this adapter's BlockingExecutor. SeedShard and FetchState, a few per
// switch, are blocking sync-API handlers.
//
// Waiting (call_waits.h): a wait for the last worker, the SSP bound or
// readers runs in slices of kCancelCheckInterval, so that a call whose
// client went away (CANCELLED) or whose server shuts down (UNAVAILABLE)
// gives its thread back within one slice. Each wait ends at the client's
// deadline or the shard's max_wait, whichever comes first.
//
// Errors, by RPC (beyond the shard's own, listed in ps_shard.h):
//   CreateShard    INVALID_ARGUMENT, ALREADY_EXISTS (ps_service.h).
//   ReleaseShard   NOT_FOUND.
//   GetShardStats  NOT_FOUND.
//   PushPull       NOT_FOUND: unknown job or shard; INVALID_ARGUMENT: no
//                  header, a bad chunk size, chunks out of order (gaps,
//                  overlaps; ascending, or descending with
//                  PushHeader.descending), out of range, of the wrong
//                  size, or data after the gradient, step scalars of
//                  another length than the other ranks', a trailer
//                  (PushHeader.trailer_scalars) missing, malformed or of
//                  another length than announced, or with scalars in the
//                  header too; CANCELLED. The reply's header carries the
//                  step control (ps_shard.h).
//   SeedShard      as PushPull, plus INVALID_ARGUMENT for an optimizer or
//                  buffer count that does not match the shard's.
//   FetchState     NOT_FOUND; INVALID_ARGUMENT: chunk size, negative
//                  step; FAILED_PRECONDITION, DEADLINE_EXCEEDED: as
//                  PsShard::AcquireState with the request's step;
//                  UNAVAILABLE: the client stopped reading.
//
// Thread-safe: the RPC methods run concurrently on gRPC's threads.
#ifndef GRADSYNC_SERVER_PS_DAEMON_PS_RPC_H_
#define GRADSYNC_SERVER_PS_DAEMON_PS_RPC_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <atomic>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/blocking_executor.h"
#include "server/ps/daemon/ps_service.h"
#include "server/ps/transport/raw_tensor_rpc.h"

namespace gradsync {

class PsRpc final : public RawParameterServerService {
 public:
  // `service` is not owned and must outlive this.
  explicit PsRpc(PsService* service) : service_(service) {}

  // Makes waiting handlers return UNAVAILABLE at their next check. Call it
  // before grpc::Server::Shutdown, which waits for handlers to return.
  void BeginShutdown() { shutting_down_.store(true); }
  // The tensor plane's port that GetShardStats reports (0: none), in its
  // initial metadata (kTensorPortMetadata).
  void set_tensor_port(int port) { tensor_port_.store(port); }

  grpc::Status CreateShard(grpc::ServerContext* context,
                           const ps::CreateShardRequest* request,
                           ps::CreateShardResponse* response) override;
  grpc::Status ReleaseShard(grpc::ServerContext* context,
                            const ps::ReleaseShardRequest* request,
                            ps::ReleaseShardResponse* response) override;
  grpc::Status GetShardStats(grpc::ServerContext* context,
                             const ps::GetShardStatsRequest* request,
                             ps::GetShardStatsResponse* response) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* PushPull(
      grpc::CallbackServerContext* context) override;
  grpc::Status SeedShard(grpc::ServerContext* context,
                         grpc::ServerReader<grpc::ByteBuffer>* reader,
                         ps::SeedShardResponse* response) override;
  grpc::Status FetchState(
      grpc::ServerContext* context, const ps::FetchStateRequest* request,
      grpc::ServerWriter<grpc::ByteBuffer>* writer) override;

 private:
  [[nodiscard]] absl::Status DoSeedShard(
      grpc::ServerContext* context,
      grpc::ServerReader<grpc::ByteBuffer>* reader);
  [[nodiscard]] absl::Status DoFetchState(
      grpc::ServerContext* context, const ps::FetchStateRequest& request,
      grpc::ServerWriter<grpc::ByteBuffer>* writer);
  // CANCELLED if the client went away, UNAVAILABLE when shutting down,
  // else OK.
  [[nodiscard]] absl::Status CheckAlive(
      const grpc::ServerContextBase& context) const;

  PsService* const service_;
  std::atomic<bool> shutting_down_{false};
  std::atomic<int> tensor_port_{0};
  // PushPull's blocking phases. Destroyed after the gRPC server shut down
  // (PsServer owns both), it waits for their last instructions.
  BlockingExecutor executor_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_DAEMON_PS_RPC_H_
