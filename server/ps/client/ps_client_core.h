// PsClientCore: what a PsClient (ps_client.h) and the PsStep it starts
// (ps_step.h) share: the job's identity and options, the shards with
// their gRPC channels and tensor plane connections, the counters, the
// cancel reason and the calls it reaches. The PsClient owns its core; a
// PsStep holds it by reference while it runs. So neither class is the
// other's friend and the includes go one way: ps_client.h -> ps_step.h ->
// ps_client_core.h.
//
// Also the types both ends name: PsShardLocation (where a shard lives)
// and PsClientOptions.
//
// Errors: PlaneChannel returns TensorPlaneChannel::Connect's error
// (tensor_plane_client.h), or the cancel reason once cancelled
// (CancelledOr).
//
// Threading: job_id, rank, total and options are fixed. shards is filled
// by PsClient::Create; its plane fields are then written only by the
// thread that starts steps, before a step starts (ResolveTensorPlanes).
// last_versions is written by the call or the step in flight (one at a
// time, PsClient's rule). The counters and step_in_flight are atomics.
// Cancel, CancelledOr, cancelled and the LiveCall registration may run on
// any thread (cancel_mu_); the plane connections are guarded by plane_mu_.
// Lock order: none (neither lock is held while taking the other;
// TryCancel and Shutdown never call back).
#ifndef GRADSYNC_SERVER_PS_CLIENT_PS_CLIENT_CORE_H_
#define GRADSYNC_SERVER_PS_CLIENT_PS_CLIENT_CORE_H_

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collectives/types.h"
#include "server/ps/transport/ps_transport.h"
#include "server/ps/transport/tensor_codec.h"
#include "server/ps/transport/tensor_plane_client.h"

namespace gradsync {

// Where one shard of a job lives and what it owns.
struct PsShardLocation {
  std::string address;  // "host:port" of the gradsync-ps holding it
  int shard = 0;
  size_t begin = 0;  // elements [begin, end) of the flat vector
  size_t end = 0;
};

struct PsClientOptions {
  // Largest message of the tensor streams (4 B .. 64 MiB).
  size_t chunk_bytes = kDefaultChunkBytes;
  // Deadline of every call, from its start.
  absl::Duration timeout = absl::Minutes(5);
  PsTransportOptions transport;
  // The job's token (Assignment.ps_token), sent with every call; servers
  // that registered with a coordinator refuse calls without it. Empty for
  // open servers (the benches').
  std::string token;
  // Steps (StartStep, and PushPull) over the servers' tensor planes
  // (tensor_plane_client.h: plain TCP after an HMAC handshake, one
  // connection per server or solo shard, kept between steps) instead of
  // gRPC streams; the other calls stay on gRPC. Each server's tensor port
  // comes from its GetShardStats at the first step; the shards of a server
  // that serves none (gradsync-ps --tensor-port -1, or an older one) go
  // over gRPC streams, the fallback.
  bool tensor_plane = false;
  // The job's gradient wire type (CreateShardRequest.wire_dtype, which
  // the shards were created with): kFloat32, or kBFloat16 / kFloat16,
  // when a step sends its gradient rounded to 16 bits and receives 16-bit
  // parameters, widened into the caller's fp32 buffer (StartStep's API
  // stays fp32). State calls (FetchState, SeedShard) stay fp32.
  DataType wire_dtype = DataType::kFloat32;
};

class PsClientCore {
 public:
  struct Shard {
    PsShardLocation location;
    std::shared_ptr<grpc::Channel> channel;
    // With options.tensor_plane, once resolved: "host:port" of its
    // server's tensor plane, and the connection it uses (its own, or its
    // server's partitions' first shard's).
    std::string tensor_address;
    size_t plane_slot = 0;
    // Its steps go over the tensor plane (else gRPC streams).
    bool plane = false;
  };

  // Shards [first, last] on one server, consecutive in `shards`: a
  // server's partitions, which share a tensor plane connection and a
  // step's lanes (ps_step.h).
  struct ServerRun {
    size_t first = 0;
    size_t last = 0;
  };

  // An RPC's context while it is in flight, where Cancel reaches it.
  class LiveCall {
   public:
    LiveCall(PsClientCore* core, grpc::ClientContext* context);
    ~LiveCall();
    LiveCall(const LiveCall&) = delete;
    LiveCall& operator=(const LiveCall&) = delete;
    // The cancel reason if the client was cancelled before the call
    // started (then do not start it); OK otherwise.
    const absl::Status& status() const { return status_; }

   private:
    PsClientCore* const core_;
    grpc::ClientContext* const context_;
    absl::Status status_;
  };

  PsClientCore(std::string job_id, int rank, size_t total,
               const PsClientOptions& options);
  PsClientCore(const PsClientCore&) = delete;
  PsClientCore& operator=(const PsClientCore&) = delete;
  ~PsClientCore();

  // The runs of consecutive shards on one address, in order; they tile
  // `shards`.
  std::vector<ServerRun> ServerRuns() const;

  // Cancels the calls in flight (LiveCall), shuts the tensor plane
  // connections down and keeps `reason` (CANCELLED "cancelled" if it is
  // OK) for every later call. The first reason stays.
  void Cancel(const absl::Status& reason);
  // The cancel reason; OK while the client is not cancelled.
  [[nodiscard]] absl::Status cancelled() const;
  // `status`, or the cancel reason when the client was cancelled and the
  // call failed (gRPC says only CANCELLED; the reason says why).
  [[nodiscard]] absl::Status CancelledOr(absl::Status status) const;

  // Sizes the tensor plane connections: one slot per shard (a server's
  // partitions use their first shard's).
  void SetPlaneSlots(size_t slots);
  // Shard k's tensor plane connection, connected on first use.
  [[nodiscard]] absl::StatusOr<TensorPlaneChannel*> PlaneChannel(
      size_t k, absl::Time deadline);
  // Shuts down every tensor plane connection (wakes their users).
  void ShutdownPlanes();
  // Drops them: the next step connects again (after a failed step, whose
  // connections may be in mid-request).
  void DropPlanes();
  // Drops those their server closed (it times idle ones out): before a
  // step, so that it connects again instead of failing.
  void DropClosedPlanes();

  const std::string job_id;
  const int rank;
  const size_t total;
  const PsClientOptions options;
  std::vector<Shard> shards;
  // The version each shard reported in the last PushPull or Pull.
  std::vector<int64_t> last_versions;
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> bytes_sent{0};      // tensor bytes
  std::atomic<uint64_t> bytes_received{0};  // tensor bytes
  std::atomic<uint64_t> credit_waits{0};
  std::atomic<bool> step_in_flight{false};  // a PsStep is alive
  bool planes_resolved = false;             // by the thread that starts steps

 private:
  std::atomic<bool> cancel_flag_{false};  // Cancel was called
  absl::Mutex plane_mu_;
  std::vector<std::unique_ptr<TensorPlaneChannel>> planes_
      ABSL_GUARDED_BY(plane_mu_);  // by plane slot
  mutable absl::Mutex cancel_mu_;
  absl::Status cancelled_ ABSL_GUARDED_BY(cancel_mu_);
  std::vector<grpc::ClientContext*> live_ ABSL_GUARDED_BY(cancel_mu_);
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_CLIENT_PS_CLIENT_CORE_H_
