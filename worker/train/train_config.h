// TrainerConfig: everything one rank's step loop reads, in plain C++ types,
// and its translation from the JobSpec the coordinator hands to every rank
// (proto/job.proto). Nothing below the daemon reads flags or protos; the
// trainer sees only this struct.
//
//   ASSIGN_OR_RETURN(TrainerConfig config, TrainerConfigFromJobSpec(spec));
//
// TrainerConfigFromJobSpec checks the spec again on receipt, with the
// coordinator's rules (ValidateJobSpec, jobspec/job_spec.h): a spec the
// coordinator would refuse is refused here with the same message, and
// every default comes from there.
//
// The rank's device is not in the spec (JobSpec.device only says which
// kind of device the coordinator places the ranks on): the daemon sets
// cuda_device for each rank from the coordinator's Assignment.
//
// Errors: INVALID_ARGUMENT naming the first bad field: "job spec field
// <JSON name> ..." for the spec's rules, "training config field ..." for
// what only the trainer needs (a built-in model; steps, not epochs, for
// the synthetic model). Pure functions; thread-safe.
#ifndef GRADSYNC_WORKER_TRAIN_TRAIN_CONFIG_H_
#define GRADSYNC_WORKER_TRAIN_TRAIN_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collectives/all_reduce_algorithm.h"
#include "collectives/types.h"
#include "common/optimizer.h"
#include "jobspec/job_spec.h"
#include "proto/job.pb.h"
#include "security/tls.h"
#include "server/ps/transport/tensor_codec.h"
#include "worker/train/bucketer.h"

namespace gradsync {

enum class DatasetKind {
  kFashionMnist,  // worker/data/fashion_mnist.h
  kSynthetic,     // a generated classification task (train_data.h)
};

// How gradients are synchronised (proto SyncMode).
enum class SyncPath {
  kRing,  // peer all-reduce, optimizer on every rank (ring_sync.h)
  kPs,    // sharded parameter server, optimizer on the shards (ps_sync.h)
};

// The ring path's transport (JobSpec.ring_backend).
enum class RingBackend {
  kTcp,   // the TCP ring on host buffers (GPU ranks stage through the host)
  kNccl,  // NCCL on device buffers, the optimizer on the device
};

// How the PS shards turn pushes into updates (JobSpec.ps.sync).
enum class PsUpdate {
  kSync,   // every step waits for all ranks; rank-order sum
  kAsync,  // each push applied as it arrives
  kSsp,    // async within a staleness bound
};

struct PsConfig {
  // The job's id on the shards (the daemon sets it; tests pick one).
  std::string job_id = "job";
  // The job's token for its shards (Assignment.ps_token; empty for the
  // open servers of tests and benches).
  std::string token;
  // Shard k's gradsync-ps ("host:port"), from the coordinator's
  // Assignment; runtime switches may bring new ones.
  std::vector<std::string> addresses;
  PsUpdate update = PsUpdate::kSync;
  int staleness = 0;  // kSsp bound
  // Largest stream message (the codec's default for a spec's 0).
  size_t chunk_bytes = kDefaultChunkBytes;
  // Each server's slice in partitions of at most this many bytes
  // (PartitionedShardLocations); 0: one shard per server.
  size_t partition_bytes = static_cast<size_t>(kDefaultPsPartitionBytes);
  OptimizerSpec optimizer;  // as the shards are created with it
  // TCP congestion control of the connections to the shards
  // (common/tcp_congestion.h); the daemon's --tcp-congestion.
  std::string tcp_congestion = "auto";
  // Mutual TLS or plaintext of the connections to the shards
  // (security/tls.h); the daemon's --tls-dir.
  GrpcSecurity security;
  // Steps over the servers' tensor planes (PsClientOptions::tensor_plane);
  // the job's ps.transport, else the daemon's --ps-transport, is "plane".
  bool tensor_plane = false;
};

// A scripted switch: steps >= step synchronise through `path`.
struct ScriptedSwitch {
  int64_t step = 0;
  SyncPath path = SyncPath::kRing;
};

struct TrainerConfig {
  // The model's kind (JobSpec.model.kind): its builder
  // (models/model_builders.h) reads the fields below that are its own, or
  // model_spec.
  std::string model = "mlp";
  ModelSpec model_spec;             // the checked spec's model
  std::vector<size_t> layer_sizes;  // mlp: input first, classes last
  size_t synthetic_floats = 0;      // synthetic: gradient length
  // synthetic with a model profile: its layers (summing to
  // synthetic_floats) and their compute costs (SyntheticConfig).
  std::vector<size_t> synthetic_layers;
  std::vector<double> synthetic_layer_cost;
  absl::Duration synthetic_compute = absl::ZeroDuration();  // per step
  // The rank's CUDA device index, or -1 for a CPU rank. An mlp on a CUDA
  // device runs its passes there (cuda_train_model.h); the synthetic model
  // has no compute kernels and stays on the host on any device.
  int cuda_device = -1;
  // kNccl needs an mlp on a CUDA device on every rank (checked when the
  // trainer starts, once the daemon has set cuda_device).
  RingBackend ring_backend = RingBackend::kTcp;
  // The TCP ring's all-reduce algorithm (JobSpec.ring_algorithm): kAuto
  // lets the communicator choose by size and placement; any other is
  // forced on every all-reduce (the daemon's HierarchicalOptions, in
  // collectives/algorithms/hierarchical_communicator.h). Not with kNccl.
  AllReduceAlgorithm ring_algorithm = AllReduceAlgorithm::kAuto;
  // Gradients on the wire (JobSpec.grad_dtype): kFloat32, or kBFloat16 /
  // kFloat16 on the host rings (RingSyncOptions::wire_type) and to the
  // parameter server (CreateShardRequest.wire_dtype, PsClientOptions).
  DataType grad_dtype = DataType::kFloat32;

  DatasetKind dataset = DatasetKind::kFashionMnist;
  std::string dataset_path;  // empty: kFashionMnistDir

  OptimizerConfig optimizer;
  size_t global_batch_size = 0;  // examples per step, over all ranks
  int64_t steps = 0;             // > 0, or 0 to derive from epochs
  double epochs = 0;             // used when steps == 0 (needs a dataset)
  uint64_t seed = 0;             // model initialisation and data order
  size_t bucket_bytes = kDefaultAllReduceBucketBytes;
  int grad_accumulation_steps = 1;  // micro-batches per step
  int64_t eval_every_steps = 0;     // 0: evaluate at the end only
  size_t eval_batch_size = 1000;
  // Rank 0 writes checkpoint.h files here (empty: none): every
  // checkpoint_every steps (0: only at the end) and after the last step.
  // With checkpoint_on_every_host the lowest rank of each `host` writes
  // them too.
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  bool checkpoint_on_every_host = false;
  // The host this rank runs on, as its worker registered it (the daemon
  // sets it): ranks with equal names share a file system.
  std::string host;
  // A checkpoint.h file to start from (empty: step 0 from the seed): the
  // lowest rank that can read it broadcasts it (checkpoint_share.h), and
  // every rank runs steps [its steps_done, steps) from its parameters and
  // optimizer state, in the mode the spec gives that step.
  std::string resume_from;
  // The worker's --checkpoint-root (security/path_roots.h; the daemon sets
  // it). A writing rank opens checkpoint_dir once, when the trainer starts,
  // beneath the root that holds it and without following any link below
  // that root (security/rooted_dir.h), and writes every checkpoint through
  // that descriptor after checking that the path still leads to it;
  // resume_from is read the same way. Empty: the paths as named.
  std::vector<std::string> checkpoint_roots;
  // Process-wide BLAS threads per rank (applied by the daemon, blas.h).
  int blas_threads = 1;
  // Deadline of one step's communication and of each evaluation's
  // reduction; past it the communicator is aborted.
  absl::Duration comm_timeout = absl::Seconds(90);
  // The path of step 0, the scripted switches (increasing steps) and the
  // parameter server's settings.
  SyncPath initial_path = SyncPath::kRing;
  std::vector<ScriptedSwitch> switches;
  PsConfig ps;
};

// OK, or INVALID_ARGUMENT naming the first bad field.
[[nodiscard]] absl::Status ValidateTrainerConfig(const TrainerConfig& config);

// The config of `spec` (defaults filled in), validated.
[[nodiscard]] absl::StatusOr<TrainerConfig> TrainerConfigFromJobSpec(
    const JobSpec& spec);

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_TRAIN_TRAIN_CONFIG_H_
