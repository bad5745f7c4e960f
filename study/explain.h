// `gradsync explain JOB`: a job's synchronisation measured against the
// alpha-beta model (study/alpha_beta/sync_model.h), where the time goes, and
// which path the model says is faster for this job's N, K, S and links.
//
// Explain is a pure function of what the coordinator reports (the job's
// ranks and shards, its step metrics, the parameter servers' hosts: an
// ExplainInput, which `gradsync explain` reads from the coordinator's
// protos in cli/lab/explain_command.h) and of the cluster's link facts:
// the lab's settings (lab.json) or the operator's --link-gbps. It reports,
// per mode the job ran in:
//   - the median over its steps of the slowest rank's step, compute,
//     exposed communication, idle time and sync time;
//   - the model's sync time for that layout, and the error;
//   - the bottleneck: compute, an idle wait on a slow rank, or the link
//     that carries the most bytes (the busiest server's, or every
//     worker's), or, when the links explain less than two thirds of the
//     measured time, the CPUs or software around them;
// and then the model's verdict for both paths at this N, K and S. The PS's
// transport (the tensor plane or gRPC streams) is named with its layout;
// the model predicts the links' time, which the plane reaches and gRPC
// may not on a host short of CPU, so a gRPC PS measured well above its
// prediction is blamed on its transport, with the plane as the remedy. When
// every rank (and server) shares one host, no link is in play: explain
// says so, predicts nothing, and compares what each path reached on this
// machine (its measured busbw) instead. A PS's prediction also has its
// servers' CPU term (max(link, CPU), sync_model.h), per transport, and
// explain says which term binds; each PS mode gets a split of its measured
// sync time into the model's part (the server's link, or its CPU on one
// host) and the remainder, the transport's overhead.
//
// Errors: FAILED_PRECONDITION when the job reported no step with a sync
// size yet. Pure functions; thread-safe.
#ifndef GRADSYNC_STUDY_EXPLAIN_H_
#define GRADSYNC_STUDY_EXPLAIN_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "study/alpha_beta/sync_model.h"
#include "study/model_profiles.h"
#include "study/sync_path.h"

namespace gradsync {
namespace study {

// One rank's report of one step (the coordinator's StepMetrics).
struct ExplainStep {
  int64_t step = 0;
  int rank = 0;
  SyncPath mode = SyncPath::kRing;
  double step_s = 0, compute_s = 0, comm_s = 0, idle_s = 0;
  double sync_busy_s = 0;
  int64_t sync_bytes = 0;
  double switch_s = 0;  // > 0: the step carried a mode switch
  // PS steps: "plane", "grpc"; "" when the worker did not say.
  std::string ps_transport;
};

// One PS shard's traffic (the parameter servers' ShardStats).
struct ExplainShard {
  int shard = 0;
  int64_t bytes_in = 0;
  int64_t bytes_out = 0;
};

// What explain reads of a job.
struct ExplainInput {
  std::string job_id;
  // The host of each rank, in rank order.
  std::vector<std::string> rank_hosts;
  // Per shard: (its server's address, that server's host; "" unknown).
  std::vector<std::pair<std::string, std::string>> shard_servers;
  // The PS's partition size, as the job's spec says
  // (PsPartitionBytes, jobspec/job_spec.h).
  int64_t ps_partition_bytes = 0;
  std::vector<ExplainStep> steps;  // every rank's, any order
  std::vector<ExplainShard> shards;
  // The job's model, for the simulator (study/sim/sim_explain.h): its kind
  // ("mlp", "synthetic", ...), the layer profile of a synthetic job
  // (model.profile's tensors, unscaled, in forward order; empty for none:
  // another kind, or a flat synthetic gradient), its name and scale, the
  // emulated backward time (model.synthetic_compute_ms, in s), and the
  // all-reduce bucket size (spec.bucket_bytes; 0: 25 MiB).
  std::string model_kind;
  std::string profile_name;
  std::vector<ProfileTensor> profile;
  double profile_scale = 1;
  double compute_s = 0;
  int64_t bucket_bytes = 0;
};

struct LinkFacts {
  LinkModel model;     // alpha and B (payload bytes/s)
  std::string source;  // "the lab in /x/.lab: 1 Gbit/s links", ...
  // A PS server's CPU per transport (sync_model.h's CPU term): the
  // simulator calibration's defaults unless the caller knows better.
  ServerCpuModel plane_cpu = DefaultServerCpu("plane");
  ServerCpuModel grpc_cpu = DefaultServerCpu("grpc");
};

// One mode's measurement.
struct ModeExplanation {
  SyncPath mode = SyncPath::kRing;
  int steps = 0;
  double step_s = 0, compute_s = 0, comm_s = 0, idle_s = 0, sync_s = 0;
  double predicted_s = 0;  // 0: no link is in play (one host)
  double error = 0;        // (predicted - measured) / measured; 0 without
  // What the sync reached: S / sync_s, and that scaled as nccl-tests does
  // (2(N-1)/N on the ring, 2 max(1, N/K) on the PS), bytes/s.
  double algbw = 0, busbw = 0;
  std::string layout;      // "ring over 4 hosts", "ps: 2 servers on ..."
  std::string bottleneck;  // one sentence
  // PS: how its steps' tensors travelled (StepMetrics.ps_transport: "plane",
  // "grpc", "mixed"; "" from workers that do not say).
  std::string ps_transport;
  // How the step was predicted: "alpha-beta formula" (predicted_s only:
  // the synchronisation's busy time, all of it as if exposed) or
  // "simulator" (study/sim/sim_explain.h: also the exposed communication
  // and the step, with the buckets' or partitions' overlap with
  // backward), and why that one.
  std::string predictor = "alpha-beta formula";
  std::string predictor_reason;
  double predicted_exposed_s = -1;  // simulator only; -1 otherwise
  double predicted_step_s = -1;     // simulator only; -1 otherwise
  // PS: the model's terms for these bytes (sync_model.h): the links'
  // (0 on one host) and the servers' CPU on this transport, and which
  // binds.
  double link_s = 0, cpu_s = 0;
  bool cpu_binds = false;
  // PS: the measured sync split into what the model gives the server's
  // link (or, on one host or CPU-bound, its CPU and memory copies) for
  // these bytes, and the rest, the transport's own overhead (messages,
  // gRPC and TLS, copies beyond the model's); model_part_s + transport_s
  // = sync_s. `split` is the sentence; "" on the ring.
  double model_part_s = 0, transport_s = 0;
  std::string split;
};

struct Explanation {
  std::string job_id;
  int workers = 0;  // ranks
  int hosts = 0;    // distinct hosts of the ranks
  int servers = 0;  // distinct PS servers of its shards
  bool colocated = false;
  int64_t sync_bytes = 0;
  std::string links;  // LinkFacts::source
  std::vector<ModeExplanation> modes;
  // Whether a link carries each path: not the ring when every rank shares
  // one host, not the PS when its servers share that host too. A path
  // without links has no prediction (0).
  bool ring_links = false;
  bool ps_links = false;
  double ring_predicted_s = 0;
  double ps_predicted_s = 0;
  std::string verdict;  // which path the model says, by how much, and K*
};

[[nodiscard]] absl::StatusOr<Explanation> ExplainJob(const ExplainInput& job,
                                                     const LinkFacts& links);

// The text `gradsync explain` prints.
std::string FormatExplanation(const Explanation& e);

}  // namespace study
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_EXPLAIN_H_
