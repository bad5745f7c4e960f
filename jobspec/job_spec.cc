#include "jobspec/job_spec.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "collectives/all_reduce_algorithm.h"
#include "common/code_points.h"
#include "common/status_macros.h"
#include "jobspec/auto_mode_spec.h"
#include "jobspec/grad_dtype.h"
#include "jobspec/model_spec.h"
#include "jobspec/optimizer_spec.h"
#include "models/link_probe/link_probe_spec.h"
#include "models/model_kinds.h"

namespace gradsync {

absl::Status InvalidSpecField(absl::string_view field,
                              absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("job spec field ", field, " ", problem));
}

absl::Status NonNegativeSpecField(absl::string_view field, int64_t value) {
  if (value >= 0) return absl::OkStatus();
  return InvalidSpecField(field,
                          absl::StrCat("is ", value, "; it must be >= 0"));
}

absl::Status ValidateNumWorkers(const JobSpec& spec, absl::string_view unit) {
  if (spec.num_workers() >= 1 && spec.num_workers() <= kMaxNumWorkers) {
    return absl::OkStatus();
  }
  return InvalidSpecField(
      "numWorkers",
      absl::StrCat("is ", spec.num_workers(), "; it must be in 1..",
                   kMaxNumWorkers, " (", unit, ")"));
}

namespace {

[[nodiscard]] absl::Status ValidatePs(const PsSpec& ps) {
  if (ps.shards() < 0 || ps.shards() > kMaxPsShards) {
    return InvalidSpecField(
        "ps.shards",
        absl::StrCat("is ", ps.shards(), "; it must be in 0..", kMaxPsShards,
                     " (0: one per parameter server)"));
  }
  if (ps.sync() != "" && ps.sync() != "sync" && ps.sync() != "async" &&
      ps.sync() != "ssp") {
    return InvalidSpecField("ps.sync",
                            absl::StrCat("is '", ps.sync(),
                                         "'; use \"sync\", \"async\" or "
                                         "\"ssp\""));
  }
  RETURN_IF_ERROR(NonNegativeSpecField("ps.staleness", ps.staleness()));
  if (ps.staleness() > 0 && ps.sync() != "ssp") {
    return InvalidSpecField(
        "ps.staleness",
        absl::StrCat("is ", ps.staleness(), " but ps.sync is '",
                     ps.sync().empty() ? "sync" : ps.sync(),
                     "'; a staleness bound applies only to \"ssp\" (stale "
                     "synchronous parallel): set ps.sync to \"ssp\" or "
                     "staleness to 0"));
  }
  if (ps.placement() != "" && ps.placement() != "any" &&
      ps.placement() != "separate" && ps.placement() != "colocated") {
    return InvalidSpecField("ps.placement",
                            absl::StrCat("is '", ps.placement(),
                                         "'; use \"any\", \"separate\" or "
                                         "\"colocated\""));
  }
  if (!ps.transport().empty() && ps.transport() != "plane" &&
      ps.transport() != "grpc") {
    return InvalidSpecField(
        "ps.transport",
        absl::StrCat("is '", ps.transport(),
                     "'; use \"plane\" (the tensor plane), \"grpc\" (gRPC "
                     "streams, encrypted under TLS) or leave it out (the "
                     "workers' --ps-transport)"));
  }
  const int64_t partition = ps.partition_bytes();
  if (partition != 0 &&
      (partition < kMinPsPartitionBytes || partition > kMaxPsPartitionBytes ||
       partition % 4 != 0)) {
    return InvalidSpecField(
        "ps.partitionBytes",
        absl::StrCat("is ", partition, "; use 0 (",
                     kDefaultPsPartitionBytes >> 20,
                     " MiB) or a multiple of 4 in ", kMinPsPartitionBytes, "..",
                     kMaxPsPartitionBytes, " (1 GiB)"));
  }
  const int64_t chunk = ps.chunk_bytes();
  if (chunk != 0 && (chunk < kMinPsChunkBytes || chunk > kMaxPsChunkBytes ||
                     chunk % 4 != 0)) {
    return InvalidSpecField(
        "ps.chunkBytes",
        absl::StrCat("is ", chunk, "; use 0 (1 MiB) or a multiple of 4 in ",
                     kMinPsChunkBytes, "..", kMaxPsChunkBytes, " (64 MiB)"));
  }
  return absl::OkStatus();
}

[[nodiscard]] absl::Status ValidateSwitches(const JobSpec& spec) {
  int64_t previous = 0;
  for (int i = 0; i < spec.switches_size(); ++i) {
    const SwitchSpec& s = spec.switches(i);
    const std::string field = absl::StrCat("switches[", i, "]");
    if (s.step() < 1) {
      return InvalidSpecField(
          absl::StrCat(field, ".step"),
          absl::StrCat("is ", s.step(),
                       "; a scripted switch applies from a step "
                       ">= 1 (step 0 runs in the job's mode)"));
    }
    if (i > 0 && s.step() <= previous) {
      return InvalidSpecField(absl::StrCat(field, ".step"),
                              absl::StrCat("is ", s.step(), " after ", previous,
                                           "; list the switches in strictly "
                                           "increasing step order"));
    }
    if (s.mode() != SYNC_MODE_RING && s.mode() != SYNC_MODE_PS) {
      return InvalidSpecField(
          absl::StrCat(field, ".mode"),
          absl::StrCat("is ", static_cast<int>(s.mode()),
                       "; use SYNC_MODE_RING or SYNC_MODE_PS"));
    }
    previous = s.step();
  }
  return absl::OkStatus();
}

// Printable and short: well-formed UTF-8 without the code points that
// would drive or reorder the terminal of whoever lists the jobs (C0 and
// C1 controls, bidirectional controls: common/code_points.h).
[[nodiscard]] absl::Status ValidateName(const std::string& name) {
  if (name.size() > kMaxJobNameBytes) {
    return InvalidSpecField(
        "name", absl::StrCat("is ", name.size(), " bytes long; at most ",
                             kMaxJobNameBytes));
  }
  if (std::optional<std::string> problem = UnsafeTextProblem(name)) {
    return InvalidSpecField(
        "name", absl::StrCat(*problem, "; use printable characters"));
  }
  return absl::OkStatus();
}

// ringBackend and ringAlgorithm, on `out` whose device is already set.
[[nodiscard]] absl::Status ValidateRing(JobSpec* out) {
  if (out->ring_backend().empty()) out->set_ring_backend("auto");
  if (out->ring_backend() != "auto" && out->ring_backend() != "tcp" &&
      out->ring_backend() != "nccl") {
    return InvalidSpecField(
        "ringBackend", absl::StrCat("is '", out->ring_backend(),
                                    "'; use \"auto\", \"tcp\" or \"nccl\""));
  }
  if (out->ring_backend() == "nccl" && out->device() != "cuda") {
    return InvalidSpecField(
        "ringBackend",
        "is \"nccl\", which needs device \"cuda\" (NCCL "
        "all-reduces GPU buffers); use \"tcp\" or \"auto\" for "
        "CPU ranks");
  }
  const ModelKindSpec* kind = FindModelKind(out->model().kind());
  if (out->ring_backend() == "nccl" && kind != nullptr &&
      kind->runner == ModelKindSpec::Runner::kTrainer && !kind->runs_on_cuda) {
    return InvalidSpecField(
        "ringBackend",
        absl::StrCat("is \"nccl\", which needs a model with CUDA kernels "
                     "on device \"cuda\": the ",
                     out->model().kind(),
                     " model has no device kernels and stays on the host; use "
                     "\"tcp\" or \"auto\""));
  }
  if (out->ring_algorithm().empty()) out->set_ring_algorithm("auto");
  absl::StatusOr<AllReduceAlgorithm> algorithm =
      ParseAllReduceAlgorithm(out->ring_algorithm());
  if (!algorithm.ok()) {
    return InvalidSpecField("ringAlgorithm",
                            absl::StrCat("is '", out->ring_algorithm(),
                                         "'; use \"auto\", \"ring\", \"hd\" or "
                                         "\"hierarchical\""));
  }
  if (*algorithm == AllReduceAlgorithm::kAuto) {
    out->set_ring_algorithm("auto");
    return absl::OkStatus();
  }
  if (RingRunsOnNccl(*out)) {
    return InvalidSpecField(
        "ringAlgorithm",
        absl::StrCat("is '", out->ring_algorithm(),
                     "', an algorithm of the TCP ring, but ringBackend '",
                     out->ring_backend(),
                     "' runs this job on NCCL, which picks its own; set "
                     "ringBackend \"tcp\" or leave ringAlgorithm \"auto\""));
  }
  out->set_ring_algorithm(std::string(AllReduceAlgorithmName(*algorithm)));
  return absl::OkStatus();
}

// gradDtype (jobspec/grad_dtype.h), spelled canonically; after ValidateRing
// (ringBackend resolved).
[[nodiscard]] absl::Status ValidateGradDtypeOf(JobSpec* out) {
  ASSIGN_OR_RETURN(const DataType type, ParseGradDtype(out->grad_dtype()));
  if (type != DataType::kFloat32 &&
      out->model().kind() == kEntrypointModelKind) {
    return InvalidSpecField(
        "gradDtype",
        absl::StrCat("is '", out->grad_dtype(),
                     "', but an entrypoint job's gradients are its own "
                     "program's: use DDP's bf16_compress_hook there"));
  }
  out->set_grad_dtype(GradDtypeName(type));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JobSpec> ValidateJobSpec(const JobSpec& spec) {
  JobSpec out = spec;
  const ModelKindSpec* kind = FindModelKind(spec.model().kind());
  if (kind == nullptr) {
    return InvalidSpecField("model.kind",
                            absl::StrCat("is '", spec.model().kind(), "'; use ",
                                         ModelKindChoices()));
  }
  const bool trained = kind->runner == ModelKindSpec::Runner::kTrainer;
  if (trained) {
    RETURN_IF_ERROR(ValidateTrainedModel(spec, *kind, &out));
  } else {
    RETURN_IF_ERROR(kind->validate(spec, &out));
  }
  RETURN_IF_ERROR(NonNegativeSpecField("restartCount", spec.restart_count()));
  RETURN_IF_ERROR(ValidateName(spec.name()));
  if (trained || !spec.optimizer().name().empty()) {
    RETURN_IF_ERROR(ValidateOptimizerSpec(out.mutable_optimizer()));
  }
  switch (spec.mode()) {
    case SYNC_MODE_UNSPECIFIED:
      out.set_mode(SYNC_MODE_RING);
      break;
    case SYNC_MODE_RING:
      break;
    case SYNC_MODE_PS:
      break;
    default:
      return InvalidSpecField("mode",
                              absl::StrCat("is ", static_cast<int>(spec.mode()),
                                           "; use SYNC_MODE_RING or "
                                           "SYNC_MODE_PS"));
  }
  if (out.device().empty()) out.set_device(std::string(kDefaultDevice));
  if (out.device() != "cpu" && out.device() != "cuda") {
    return InvalidSpecField(
        "device",
        absl::StrCat("is '", out.device(), "'; use \"cpu\" or \"cuda\""));
  }
  RETURN_IF_ERROR(ValidateRing(&out));
  RETURN_IF_ERROR(ValidateGradDtypeOf(&out));
  if (spec.bucket_bytes() != 0 && spec.bucket_bytes() < kMinBucketBytes) {
    return InvalidSpecField(
        "bucketBytes",
        absl::StrCat("is ", spec.bucket_bytes(), "; use 0 (",
                     kDefaultBucketBytes >> 20, " MiB) or at least one float (",
                     kMinBucketBytes, ")"));
  }
  if (out.bucket_bytes() == 0) out.set_bucket_bytes(kDefaultBucketBytes);
  RETURN_IF_ERROR(NonNegativeSpecField("blasThreads", spec.blas_threads()));
  if (out.blas_threads() == 0) out.set_blas_threads(1);
  RETURN_IF_ERROR(
      NonNegativeSpecField("evalEverySteps", spec.eval_every_steps()));
  RETURN_IF_ERROR(NonNegativeSpecField("checkpoint.everySteps",
                                       spec.checkpoint().every_steps()));
  if (spec.checkpoint().on_every_host() &&
      spec.checkpoint().directory().empty()) {
    return InvalidSpecField(
        "checkpoint.onEveryHost",
        "is set without checkpoint.directory; name the directory "
        "each host writes its copy to");
  }
  RETURN_IF_ERROR(NonNegativeSpecField("maxRestarts", spec.max_restarts()));
  if (spec.max_restarts() > kMaxRestarts) {
    return InvalidSpecField(
        "maxRestarts",
        absl::StrCat("is ", spec.max_restarts(), "; at most ", kMaxRestarts,
                     " (a job failing that often "
                     "needs a look, not a retry)"));
  }
  RETURN_IF_ERROR(ValidatePs(spec.ps()));
  RETURN_IF_ERROR(ValidateSwitches(spec));
  if (spec.auto_mode().enabled()) {
    RETURN_IF_ERROR(AutoModeConfigFromSpec(spec.auto_mode()).status());
    if (spec.switches_size() > 0) {
      return InvalidSpecField("autoMode",
                              "and scripted switches (switches) exclude "
                              "each other: auto mode decides the switches");
    }
    if (!spec.ps().sync().empty() && spec.ps().sync() != "sync") {
      return InvalidSpecField(
          "autoMode", absl::StrCat("compares the ring with the synchronous "
                                   "PS; ps.sync is '",
                                   spec.ps().sync(), "'"));
    }
  }
  return out;
}

bool JobNeedsPs(const JobSpec& spec) { return SpecUsesPs(spec); }

// As the worker resolves ringBackend "auto" (worker/train/train_config.cc).
bool RingRunsOnNccl(const JobSpec& spec) {
  const bool automatic =
      spec.ring_backend().empty() || spec.ring_backend() == "auto";
  const ModelKindSpec* kind = FindModelKind(spec.model().kind());
  return spec.ring_backend() == "nccl" ||
         (automatic && spec.device() == "cuda" && kind != nullptr &&
          kind->runner == ModelKindSpec::Runner::kTrainer &&
          kind->runs_on_cuda);
}

int64_t PsPartitionBytes(const PsSpec& ps) {
  return ps.partition_bytes() > 0 ? ps.partition_bytes()
                                  : kDefaultPsPartitionBytes;
}

}  // namespace gradsync
