// JobSpec checks and defaults: what a training job (proto/job.proto) may
// ask for, defined once for the coordinator, which checks a spec at
// submit, the workers, which check it again on receipt with the same
// rules, and the CLI. The JSON form users write is job_spec_json.h.
//
//   ASSIGN_OR_RETURN(JobSpec spec, ParseJobSpecJson(file_contents));
//   ASSIGN_OR_RETURN(JobSpec full, ValidateJobSpec(spec));  // defaults in
//
// Validation is a fixed point: a spec it returns validates again,
// unchanged. Error messages name fields by their JSON names
// ("numWorkers"), since that is what users write, and say which values
// are allowed.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_JOBSPEC_JOB_SPEC_H_
#define GRADSYNC_JOBSPEC_JOB_SPEC_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/optimizer.h"
#include "proto/job.pb.h"

namespace gradsync {

// ModelSpec.kind of a job that runs the user's own program, one process
// per rank (EntrypointSpec, worker/launch/).
inline constexpr absl::string_view kEntrypointModelKind = "entrypoint";

// Defaults filled in for fields left at 0 or empty. The optimizer's are
// those of the optimizer the ranks build (common/optimizer.h).
inline constexpr int64_t kDefaultBucketBytes = int64_t{25} << 20;  // DDP's
inline constexpr absl::string_view kDefaultDevice = "cpu";
inline constexpr double kDefaultMomentum = OptimizerConfig{}.momentum;
inline constexpr int32_t kMaxRestarts = 100;  // JobSpec.max_restarts
inline constexpr double kDefaultAdamBeta1 = OptimizerConfig{}.beta1;
inline constexpr double kDefaultAdamBeta2 = OptimizerConfig{}.beta2;
inline constexpr double kDefaultAdamEpsilon = OptimizerConfig{}.eps;
// A default that stays 0 in the spec (so that a spec says what its user
// set) and is read through PsPartitionBytes: each server's slice goes in
// partitions of 4 MiB (pipelined pushes and pulls, server/ps/ps_client.h).
// (PsSpec.chunk_bytes 0 is the PS codec's own default,
// server/ps/tensor_codec.h's kDefaultChunkBytes.)
inline constexpr int64_t kDefaultPsPartitionBytes = int64_t{4} << 20;

// Bounds that catch typos before a worker tries to allocate the model.
inline constexpr int64_t kMaxLayerWidth = int64_t{1} << 20;
inline constexpr int64_t kMaxModelParameters = int64_t{1} << 30;
inline constexpr int32_t kMaxNumWorkers = 4096;
// PS path: at most this many shards; push/pull messages of 4 B .. 64 MiB.
inline constexpr int32_t kMaxPsShards = 1024;
inline constexpr int64_t kMinPsChunkBytes = 4;
inline constexpr int64_t kMaxPsChunkBytes = int64_t{64} << 20;
// PsSpec.partition_bytes: 0 (kDefaultPsPartitionBytes) or 4 KiB .. 1 GiB.
inline constexpr int64_t kMinPsPartitionBytes = 4096;
inline constexpr int64_t kMaxPsPartitionBytes = int64_t{1} << 30;

// bucketBytes: 0 (kDefaultBucketBytes) or at least one float.
inline constexpr int64_t kMinBucketBytes = sizeof(float);

// JobSpec.name: printable, at most this long (it is shown in tables).
inline constexpr size_t kMaxJobNameBytes = 256;
// The steps epochs ask for must fit an int64 step counter with room to
// spare; far beyond any job, it catches epochs = 1e300.
inline constexpr int64_t kMaxSteps = int64_t{1} << 53;

// An entrypoint's command line: at most this many arguments and bytes.
inline constexpr int kMaxEntrypointArgs = 1024;
inline constexpr size_t kMaxEntrypointArgvBytes = 64 * 1024;
// EntrypointSpec.term_grace_ms: at most 10 minutes.
inline constexpr int64_t kMaxEntrypointGraceMs = 600'000;

// Fashion-MNIST: 28x28 grey images in 10 classes, 60000 for training.
inline constexpr int64_t kFashionMnistTrainExamples = 60000;
inline constexpr int64_t kFashionMnistFeatures = 784;
inline constexpr int64_t kFashionMnistClasses = 10;

// Returns `spec` with defaults filled in (mode RING when unspecified,
// bucketBytes 25 MiB, gradAccumulationSteps 1, blasThreads 1, device "cpu",
// momentum 0.9, Adam betas 0.9/0.999 and epsilon 1e-8), or
// INVALID_ARGUMENT naming the first bad field:
//   model.kind          "mlp" (layerSizes: >= 2 positive widths; for
//                       fashion-mnist 784 first and 10 last), "synthetic"
//                       (syntheticFloats > 0, syntheticComputeMs >= 0) or
//                       "entrypoint" (entrypoint.argv non-empty, workdir
//                       absolute; no dataset, batch or steps needed, and an
//                       optimizer only for the PS's server-side update)
//   dataset.name        "fashion-mnist" or "synthetic"
//   numWorkers          1 .. 4096
//   batchSize           >= numWorkers * gradAccumulationSteps
//   steps, epochs       >= 0, and one of them > 0
//   optimizer           "sgd", "momentum", "adam" or "adamw", learningRate
//                       > 0, hyper-parameters in their ranges
//   mode                RING or PS
//   ps.shards           0 (one per parameter server) .. 1024
//   ps.sync             "", "sync", "async" or "ssp"
//   ps.staleness        >= 0, and > 0 only with sync "ssp"
//   ps.chunkBytes       0 (1 MiB) or 4 B .. 64 MiB, a multiple of 4
//   switches            steps >= 1 in strictly increasing order, each mode
//                       RING or PS
//   device              "cpu" or "cuda"
//   ringBackend         "auto" (default), "tcp" or "nccl" (device "cuda",
//                       not the synthetic model, which has no device
//                       kernels)
//   ringAlgorithm       "auto" (default), "ring", "hd" or "hierarchical"
//                       (other spellings ParseAllReduceAlgorithm accepts
//                       are normalised to these); a forced one needs the
//                       TCP ring, not ringBackend "nccl" (nor "auto" on an
//                       mlp on cuda, which is NCCL)
//   bucketBytes         0 or >= 4 (one float)
//   counts              gradAccumulationSteps, blasThreads,
//                       evalEverySteps, checkpoint.everySteps >= 0
[[nodiscard]] absl::StatusOr<JobSpec> ValidateJobSpec(const JobSpec& spec);

// The synthetic gradient's length for model.profile at model.profile_scale
// (study/model_profiles.h). INVALID_ARGUMENT for an unknown profile or a
// scale outside (0, 1].
[[nodiscard]] absl::StatusOr<int64_t> ProfileFloats(const ModelSpec& model);

// INVALID_ARGUMENT "job spec field <field> <problem>": how every check
// names what it refuses.
[[nodiscard]] absl::Status InvalidSpecField(absl::string_view field,
                                            absl::string_view problem);

// OK for `value` >= 0, else InvalidSpecField(field, "is <value>; it must
// be >= 0").
[[nodiscard]] absl::Status NonNegativeSpecField(absl::string_view field,
                                                int64_t value);

// numWorkers in 1..kMaxNumWorkers, else INVALID_ARGUMENT ending in
// "(<unit>)", e.g. "one rank per device".
[[nodiscard]] absl::Status ValidateNumWorkers(const JobSpec& spec,
                                              absl::string_view unit);

// The entrypoint part of ValidateJobSpec (entrypoint_spec.cc):
// INVALID_ARGUMENT naming the field.
[[nodiscard]] absl::Status ValidateEntrypoint(const JobSpec& spec);

// True when the job synchronises through parameter-server shards at some
// point: its mode is PS or a scripted switch goes to PS.
bool JobNeedsPs(const JobSpec& spec);

// Whether `spec`'s ring runs on NCCL: ringBackend "nccl", or "auto" (or
// unset) for an mlp on device "cuda"; otherwise the TCP ring.
bool RingRunsOnNccl(const JobSpec& spec);

// PsSpec.partition_bytes as the PS path uses it: the spec's own, or
// kDefaultPsPartitionBytes for 0.
int64_t PsPartitionBytes(const PsSpec& ps);

}  // namespace gradsync

#endif  // GRADSYNC_JOBSPEC_JOB_SPEC_H_
