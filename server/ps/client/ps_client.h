// PsClient: one rank's connection to the parameter-server shards of its
// job. PushPull sends the rank's whole flat gradient, each shard its slice,
// over one gRPC stream per shard at once (partitions of one server in turn,
// through a PsStep, when the buffers do not overlap) (chunked, the bytes never
// copied on the way out), and writes each shard's updated parameters into the
// rank's flat parameter buffer as they arrive (one copy, from gRPC's
// buffers). StartStep does the same while backward still runs: it returns
// a PsStep (ps_step.h) that sends each bucket as soon as backward reports
// it ready, with the step control (scalars, switch epoch) in the header.
// FetchState, SeedShards and CreateAndSeedShard move parameters plus
// optimizer state for a mode switch; ReleaseShards drops the job's shards.
//
//   ASSIGN_OR_RETURN(std::vector<PsShardLocation> shards,
//                    BalancedShardLocations(n, {"10.0.0.5:29600",
//                                               "10.0.0.6:29600"}));
//   ASSIGN_OR_RETURN(std::unique_ptr<PsClient> ps,
//                    PsClient::Create("job-1", rank, n, shards));
//   for (int64_t step = 0; ...; ++step) {
//     ... backward into grads ...
//     RETURN_IF_ERROR(ps->PushPull(step, grads, absl::MakeSpan(params)));
//   }
//
// Every call ends by PsClientOptions::timeout (the deadline of its RPCs).
// Errors: the shard's status (ps_shard.h, ps_rpc.h), prefixed with the
// shard and its address ("ps shard 1 at 10.0.0.6:29600: ..."), the first
// failing shard in shard order; INVALID_ARGUMENT for spans of the wrong
// length or shard locations that do not tile [0, total_elements);
// UNAVAILABLE if a server cannot be reached; DATA_LOSS if a server's
// reply does not match what was asked (range, sizes). After an error the
// contents of `params` are unspecified; the shards' state is as the
// status says (a failed push changes nothing there).
//
// Cancellation: Cancel (from any thread) cancels the calls in flight and
// fails every later call at once, with the reason it was given: a rank
// that is cancelled while it waits in a switch (FetchState drains the
// async shards; seeding streams the whole state) stops within an RPC
// round trip instead of at the call's deadline. A PsStep in flight is
// cancelled through its own Cancel.
//
// Threading: one call at a time per PsClient (a rank's thread), a PsStep
// in flight counting as a call; each call runs the shards' streams on
// their own threads; Cancel may run concurrently with a call. Different
// PsClients are independent (each has its own connections).
#ifndef GRADSYNC_SERVER_PS_CLIENT_PS_CLIENT_H_
#define GRADSYNC_SERVER_PS_CLIENT_PS_CLIENT_H_

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/model_init/parameter_state.h"
#include "proto/ps.pb.h"
#include "server/ps/client/ps_step.h"
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

// Shard k of addresses.size() on addresses[k], with the balanced ranges of
// shard_range.h.
[[nodiscard]] absl::StatusOr<std::vector<PsShardLocation>>
BalancedShardLocations(size_t total_elements,
                       const std::vector<std::string>& addresses);

// BytePS's partitions: each server's slice split into P partitions of at
// most `partition_bytes` (the same P for every server: the ceiling of the
// largest slice over partition_bytes; 0 means P = 1), each a shard of its
// own on that server. Partition p of server k is shard k * P + p at
// addresses[k]; the K * P ranges are balanced (shard_range.h), so server
// k's partitions tile a contiguous slice. PsStep pushes one partition per
// server at a time, so that the pull of one overlaps the push of the next
// (ps_step.h). P is capped so that no partition is empty. INVALID_ARGUMENT
// as BalancedShardLocations.
inline constexpr size_t kMaxPartitionsPerJob = 4096;
[[nodiscard]] absl::StatusOr<std::vector<PsShardLocation>>
PartitionedShardLocations(size_t total_elements,
                          const std::vector<std::string>& addresses,
                          size_t partition_bytes);
// The shards' addresses of that layout: each of `addresses` P times.
std::vector<std::string> PartitionAddresses(
    size_t total_elements, const std::vector<std::string>& addresses,
    size_t partition_bytes);

// The number of servers (distinct consecutive addresses) of `shards`.
int ServerCount(const std::vector<PsShardLocation>& shards);

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
};

// Cumulative counters of one PsClient.
struct PsClientStats {
  uint64_t calls = 0;
  uint64_t bytes_sent = 0;      // tensor bytes
  uint64_t bytes_received = 0;  // tensor bytes
  // Partitions whose push had to wait for the reply of the partition four
  // turns back on their server (the credit, ps_step.h); counted when the
  // wait begins.
  uint64_t credit_waits = 0;
};

class PsClient {
 public:
  // A client of rank `rank` for the job's `total_elements`-float vector
  // held by `shards` (which must tile [0, total_elements)). Connects
  // lazily: an unreachable server shows up on the first call. A TCP
  // congestion control the kernel refuses (options.transport) fails here
  // (CheckCongestionControl).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<PsClient>> Create(
      std::string job_id, int rank, size_t total_elements,
      std::vector<PsShardLocation> shards,
      const PsClientOptions& options = PsClientOptions());

  PsClient(const PsClient&) = delete;
  PsClient& operator=(const PsClient&) = delete;
  ~PsClient();

  // Pushes the rank's gradient of step `step` (total_elements floats) and
  // fills `params` (total_elements floats, not overlapping `grads`) with
  // the parameters for step + 1 (sync) or the latest ones (async, SSP).
  [[nodiscard]] absl::Status PushPull(int64_t step,
                                      absl::Span<const float> grads,
                                      absl::Span<float> params);

  // Starts the push and pull of step `step` that overlaps backward (see
  // ps_step.h): every shard's stream opens at once and sends its range,
  // end first, as PsStep::Ready reports the gradient's elements final.
  // `grads` and `params` (total_elements floats each, not overlapping)
  // must stay valid until the step is finished or destroyed; ready
  // gradient elements must not change, and `params` is written by the
  // step's threads. `control` goes in the header to every shard.
  // INVALID_ARGUMENT: sizes or overlapping spans; FAILED_PRECONDITION:
  // another step of this client is in flight.
  [[nodiscard]] absl::StatusOr<std::unique_ptr<PsStep>> StartStep(
      int64_t step, absl::Span<const float> grads, absl::Span<float> params,
      PsStepControl control = PsStepControl());

  // Fills `params` with the parameters for step `step` without pushing
  // (sync: once step - 1 is applied; async, SSP: the latest).
  [[nodiscard]] absl::Status Pull(int64_t step, absl::Span<float> params);

  // The whole vector's parameters and optimizer state (PS -> ring switch).
  // FAILED_PRECONDITION in the middle of a step, or if the shards disagree
  // on the step.
  [[nodiscard]] absl::StatusOr<ParameterState> FetchState();
  // The same at the switch step `step` (> 0): sync shards must be at
  // `step` (FAILED_PRECONDITION); async and SSP shards first wait until
  // every rank has pushed every step before it (DEADLINE_EXCEEDED names
  // the ranks behind). The state's step is `step`.
  [[nodiscard]] absl::StatusOr<ParameterState> FetchState(int64_t step);

  // Seeds every shard with its slice of `state` (ring -> PS switch; shards
  // created with init "seeded"). `state` covers the whole vector.
  [[nodiscard]] absl::Status SeedShards(const ParameterState& state);

  // Creates shard k (CreateShard with init "seeded": `base` with this
  // client's job id, the shard's index, range, shard count and total size
  // filled in, first_step = state.step) and seeds it with its slice of
  // `state` (the whole vector). If seeding fails the new shard is
  // released again. INVALID_ARGUMENT: k or state sizes; the server's
  // CreateShard and SeedShard errors (ALREADY_EXISTS: the shard exists).
  [[nodiscard]] absl::Status CreateAndSeedShard(
      size_t k, const ps::CreateShardRequest& base,
      const ParameterState& state);

  // Releases every shard of the job (ReleaseShard of each shard index on
  // its server); shards already gone (NOT_FOUND) are fine.
  [[nodiscard]] absl::Status ReleaseShards();

  // Cancels the calls in flight and makes every later call fail with
  // `reason` (CANCELLED "cancelled" if it is OK). Thread-safe; idempotent
  // (the first reason stays).
  void Cancel(const absl::Status& reason);

  // The version each shard reported in the last PushPull or Pull (sync:
  // the step the parameters are for).
  std::vector<int64_t> last_versions() const { return last_versions_; }
  PsClientStats stats() const;

  const std::string& job_id() const { return job_id_; }
  // The transport the steps use: "plane" or "grpc", "mixed" when some
  // servers serve no plane, "" before the first step resolved it.
  std::string transport() const;
  int rank() const { return rank_; }
  size_t total_elements() const { return total_; }
  size_t num_shards() const { return shards_.size(); }
  // Distinct servers: shards are partitions of fewer servers
  // (PartitionedShardLocations).
  int num_servers() const;
  const PsShardLocation& shard_location(size_t k) const {
    return shards_[k].location;
  }

 private:
  friend class PsStep;

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

  PsClient(std::string job_id, int rank, size_t total,
           const PsClientOptions& options);

  // An RPC's context while it is in flight, where Cancel reaches it.
  class LiveCall {
   public:
    LiveCall(PsClient* client, grpc::ClientContext* context);
    ~LiveCall();
    LiveCall(const LiveCall&) = delete;
    LiveCall& operator=(const LiveCall&) = delete;
    // The cancel reason if the client was cancelled before the call
    // started (then do not start it); OK otherwise.
    const absl::Status& status() const { return status_; }

   private:
    PsClient* const client_;
    grpc::ClientContext* const context_;
    absl::Status status_;
  };

  // `status`, or the cancel reason when the client was cancelled and the
  // call failed (gRPC says only CANCELLED; the reason says why).
  [[nodiscard]] absl::Status CancelledOr(absl::Status status) const;

  // Brings shard k's channel to READY (ConnectChannel) within the
  // client's timeout; stops early with the cancel reason once cancelled.
  [[nodiscard]] absl::Status ConnectShard(size_t k);

  // Runs fn(k) for every shard k at once (k = 0 on the calling thread),
  // each after ConnectShard(k); returns the first error in shard order,
  // naming the shard.
  [[nodiscard]] absl::Status ForEachShard(
      const std::function<absl::Status(size_t)>& fn);
  [[nodiscard]] absl::Status PushPullShard(size_t k, int64_t step,
                                           bool pull_only,
                                           absl::Span<const float> grads,
                                           absl::Span<float> params,
                                           absl::Time deadline);
  [[nodiscard]] absl::StatusOr<ParameterState> FetchShard(size_t k,
                                                          int64_t step,
                                                          absl::Time deadline);
  // Names shard k ("ps shard 1 at 10.0.0.6:29600") in `status`.
  [[nodiscard]] absl::Status NameShard(size_t k,
                                       const absl::Status& status) const;
  [[nodiscard]] absl::Status SeedShard(size_t k, const ParameterState& state,
                                       absl::Time deadline);

  // Shards [first, last] on one server, consecutive in shards_: a
  // server's partitions, which share a tensor plane connection and a
  // step's lanes (ps_step.h).
  struct ServerRun {
    size_t first = 0;
    size_t last = 0;
  };
  // The runs of consecutive shards on one address, in order; they tile
  // shards_.
  std::vector<ServerRun> ServerRuns() const;

  // The tensor plane (ps_client_plane.cc). Asks each server for its
  // tensor port, once.
  [[nodiscard]] absl::Status ResolveTensorPlanes();
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

  const std::string job_id_;
  const int rank_;
  const size_t total_;
  const PsClientOptions options_;
  std::vector<Shard> shards_;
  std::vector<int64_t> last_versions_;
  std::atomic<uint64_t> calls_{0};
  std::atomic<uint64_t> bytes_sent_{0};
  std::atomic<uint64_t> bytes_received_{0};
  std::atomic<uint64_t> credit_waits_{0};
  std::atomic<bool> step_in_flight_{false};  // a PsStep is alive
  bool planes_resolved_ = false;             // by the thread that starts steps
  std::atomic<bool> cancel_flag_{false};     // Cancel was called
  absl::Mutex plane_mu_;
  std::vector<std::unique_ptr<TensorPlaneChannel>> planes_
      ABSL_GUARDED_BY(plane_mu_);  // by plane slot
  mutable absl::Mutex cancel_mu_;
  absl::Status cancelled_ ABSL_GUARDED_BY(cancel_mu_);
  std::vector<grpc::ClientContext*> live_ ABSL_GUARDED_BY(cancel_mu_);
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_CLIENT_PS_CLIENT_H_
