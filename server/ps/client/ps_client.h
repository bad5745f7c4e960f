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
// The client's state (shards, channels, tensor plane connections, counters,
// cancel reason) is a PsClientCore (ps_client_core.h, also home of
// PsShardLocation and PsClientOptions), which the PsSteps it starts share.
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

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/model_init/parameter_state.h"
#include "proto/ps.pb.h"
#include "server/ps/client/ps_client_core.h"
#include "server/ps/client/ps_step.h"

namespace gradsync {

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
  std::vector<int64_t> last_versions() const { return core_.last_versions; }
  PsClientStats stats() const;

  const std::string& job_id() const { return core_.job_id; }
  // The transport the steps use: "plane" or "grpc", "mixed" when some
  // servers serve no plane, "" before the first step resolved it.
  std::string transport() const;
  int rank() const { return core_.rank; }
  size_t total_elements() const { return core_.total; }
  size_t num_shards() const { return core_.shards.size(); }
  // Distinct servers: shards are partitions of fewer servers
  // (PartitionedShardLocations).
  int num_servers() const;
  const PsShardLocation& shard_location(size_t k) const {
    return core_.shards[k].location;
  }

 private:
  using Shard = PsClientCore::Shard;
  using ServerRun = PsClientCore::ServerRun;
  using LiveCall = PsClientCore::LiveCall;

  PsClient(std::string job_id, int rank, size_t total,
           const PsClientOptions& options);

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

  // The tensor plane (ps_client_plane.cc). Asks each server for its
  // tensor port, once.
  [[nodiscard]] absl::Status ResolveTensorPlanes();

  // What this client's calls and its PsStep share (ps_client_core.h).
  PsClientCore core_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_CLIENT_PS_CLIENT_H_
