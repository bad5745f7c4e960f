// PsService: the shards one `gradsync-ps` process holds, by (job id, shard
// index). No gRPC inside: the RPC adapter (ps_rpc.h) looks shards up here
// and talks to them directly; tests and the bench do the same with plain
// calls.
//
//   PsService service;
//   ShardSpec spec;                 // config + how to initialise
//   spec.config.job_id = "job-1";   // ...
//   RETURN_IF_ERROR(service.CreateShard(spec));
//   ASSIGN_OR_RETURN(std::shared_ptr<PsShard> shard,
//                    service.FindShard("job-1", 0));
//
// Errors, by method:
//   CreateShard   INVALID_ARGUMENT: bad config, a range that is not the
//                 balanced split of total_elements into num_shards, MLP
//                 sizes whose parameter count is not total_elements;
//                 ALREADY_EXISTS: the shard exists.
//   FindShard(s)  NOT_FOUND naming the job and shard.
//   Release       NOT_FOUND: nothing to release.
//
// Thread-safe. Shards are shared: one released while a call uses it stays
// alive until the call returns (ABORTED), but is no longer found.
#ifndef GRADSYNC_SERVER_PS_DAEMON_PS_SERVICE_H_
#define GRADSYNC_SERVER_PS_DAEMON_PS_SERVICE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/compute_pool.h"
#include "server/ps/shard/ps_shard.h"

namespace gradsync {

// Where a new shard's parameters come from.
struct ShardInit {
  enum class Kind {
    kZeros,   // all zero (the synthetic model)
    kMlp,     // nn.Linear's initialisation of an MLP, just this slice
    kSeeded,  // none yet: the shard waits for ImportState (SeedShard)
  };
  Kind kind = Kind::kZeros;
  uint64_t seed = 0;                // kMlp
  std::vector<size_t> layer_sizes;  // kMlp: input first, classes last
};

struct ShardSpec {
  PsShardConfig config;  // job, shard index, range, workers, optimizer, mode
  int num_shards = 1;
  size_t total_elements = 0;  // of the whole flat vector
  ShardInit init;
};

class PsService {
 public:
  // `compute` (may be null) helps every shard sum its steps' gradients.
  explicit PsService(std::shared_ptr<ComputePool> compute = nullptr)
      : compute_(std::move(compute)) {}
  PsService(const PsService&) = delete;
  PsService& operator=(const PsService&) = delete;
  ~PsService();

  [[nodiscard]] absl::Status CreateShard(const ShardSpec& spec);

  [[nodiscard]] absl::StatusOr<std::shared_ptr<PsShard>> FindShard(
      const std::string& job_id, int shard) const;
  // One shard, or every shard of the job when `shard` is -1 (in index
  // order).
  [[nodiscard]] absl::StatusOr<std::vector<std::shared_ptr<PsShard>>>
  FindShards(const std::string& job_id, int shard) const;

  // Drops one shard, or every shard of the job (shard -1); calls waiting
  // on them end with ABORTED. Returns how many were dropped.
  [[nodiscard]] absl::StatusOr<int> Release(const std::string& job_id,
                                            int shard);
  // Drops every shard (server shutdown).
  void ReleaseAll();

  // Every shard held, of every job, in (job id, index) order.
  std::vector<std::shared_ptr<PsShard>> AllShards() const;

  // Shards released since the last ForgetReleased, oldest first (at most
  // kMaxUnreportedReleases): their final counters, for the heartbeat that
  // reports them to the coordinator after they are gone.
  std::vector<std::shared_ptr<PsShard>> UnreportedReleases() const;
  // Forgets the oldest `n` of UnreportedReleases (they were reported).
  void ForgetReleased(size_t n);
  static constexpr size_t kMaxUnreportedReleases = 256;

  size_t num_shards() const;

  // The pool the shards share (null: none).
  const std::shared_ptr<ComputePool>& compute() const { return compute_; }

  // ---- who may use a job's shards (docs/security.md) ----
  // From now on every call for job J's shards must carry J's token,
  // PsTokenForJob(shard key, J) (security/secret.h); until SetShardKey such
  // calls are UNAVAILABLE. A service never told so is open: the in-process
  // servers of `gradsync bench` and gradsync-ps-bench.
  void RequireTokens();
  // The coordinator's shard key (RegisterParameterServerResponse); a new
  // registration replaces it.
  void SetShardKey(std::string key);
  // OK when `token` admits the caller to `job_id`'s shards; otherwise
  // PERMISSION_DENIED naming the job (UNAVAILABLE before the key came).
  [[nodiscard]] absl::Status CheckToken(absl::string_view job_id,
                                        absl::string_view token) const;
  // The token that admits ranks to `job_id`'s shards, for a handshake that
  // proves it without sending it (tensor_plane_handshake.h): "" for an open
  // service (no check); UNAVAILABLE before the key came, as CheckToken.
  [[nodiscard]] absl::StatusOr<std::string> JobToken(
      absl::string_view job_id) const;

 private:
  using Key = std::pair<std::string, int>;

  const std::shared_ptr<ComputePool> compute_;
  mutable absl::Mutex mu_;
  std::map<Key, std::shared_ptr<PsShard>> shards_ ABSL_GUARDED_BY(mu_);
  std::deque<std::shared_ptr<PsShard>> released_ ABSL_GUARDED_BY(mu_);

  mutable absl::Mutex key_mu_;
  bool require_tokens_ ABSL_GUARDED_BY(key_mu_) = false;
  std::string shard_key_ ABSL_GUARDED_BY(key_mu_);
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_DAEMON_PS_SERVICE_H_
