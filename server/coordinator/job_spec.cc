#include "server/coordinator/job_spec.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "collectives/all_reduce_algorithm.h"
#include "common/code_points.h"
#include "common/model_profiles.h"
#include "common/optimizer.h"
#include "common/status_macros.h"
#include "jobspec/grad_dtype.h"
#include "jobspec/link_probe_spec.h"
#include "server/coordinator/auto_mode.h"

namespace gradsync {

absl::Status InvalidSpecField(absl::string_view field,
                              absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("job spec field ", field, " ", problem));
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

absl::StatusOr<int64_t> ProfileFloats(const ModelSpec& model) {
  ASSIGN_OR_RETURN(std::vector<ProfileTensor> tensors,
                   ModelProfile(model.profile()));
  const double scale = model.profile_scale() == 0 ? 1 : model.profile_scale();
  ASSIGN_OR_RETURN(std::vector<size_t> floats,
                   ScaledLayerFloats(tensors, scale));
  int64_t total = 0;
  for (size_t f : floats) total += static_cast<int64_t>(f);
  return total;
}

namespace {

[[nodiscard]] absl::Status ValidateModel(const JobSpec& spec) {
  const ModelSpec& model = spec.model();
  if (!model.profile().empty() && model.kind() != "synthetic") {
    return InvalidSpecField(
        "model.profile",
        absl::StrCat("is '", model.profile(), "' but model.kind is '",
                     model.kind(), "'; a profile shapes the synthetic model"));
  }
  if (model.kind() == "mlp") {
    if (model.layer_sizes_size() < 2) {
      return InvalidSpecField(
          "model.layerSizes",
          absl::StrCat("has ", model.layer_sizes_size(),
                       " entries; an mlp needs at least 2 (input "
                       "width first, classes last), e.g. "
                       "[784, 256, 10]"));
    }
    int64_t parameters = 0;
    for (int i = 0; i < model.layer_sizes_size(); ++i) {
      const int64_t width = model.layer_sizes(i);
      if (width <= 0 || width > kMaxLayerWidth) {
        return InvalidSpecField(
            absl::StrCat("model.layerSizes[", i, "]"),
            absl::StrCat("is ", width, "; widths must be in 1..",
                         kMaxLayerWidth));
      }
      if (i > 0) parameters += (model.layer_sizes(i - 1) + 1) * width;
      if (parameters > kMaxModelParameters) {
        return InvalidSpecField(
            "model.layerSizes",
            absl::StrCat("[", absl::StrJoin(model.layer_sizes(), ", "),
                         "] gives more than ", kMaxModelParameters,
                         " parameters; use narrower layers"));
      }
    }
    if (spec.dataset().name() == "fashion-mnist" &&
        (model.layer_sizes(0) != kFashionMnistFeatures ||
         model.layer_sizes(model.layer_sizes_size() - 1) !=
             kFashionMnistClasses)) {
      return InvalidSpecField(
          "model.layerSizes",
          absl::StrCat("is [", absl::StrJoin(model.layer_sizes(), ", "),
                       "]; fashion-mnist needs ", kFashionMnistFeatures,
                       " inputs first and ", kFashionMnistClasses,
                       " classes last"));
    }
    return absl::OkStatus();
  }
  if (model.kind() == "synthetic") {
    if (!model.profile().empty()) {
      absl::StatusOr<int64_t> floats = ProfileFloats(model);
      if (!floats.ok())
        return InvalidSpecField("model.profile", floats.status().message());
      if (model.synthetic_floats() != 0 &&
          model.synthetic_floats() != *floats) {
        return InvalidSpecField(
            "model.syntheticFloats",
            absl::StrCat("is ", model.synthetic_floats(), " but ",
                         model.profile(), " at scale ", model.profile_scale(),
                         " has ", *floats, "; leave it 0"));
      }
      if (*floats > kMaxModelParameters) {
        return InvalidSpecField(
            "model.profileScale",
            absl::StrCat("makes ", *floats, " parameters; at most ",
                         kMaxModelParameters));
      }
    } else if (model.synthetic_floats() <= 0 ||
               model.synthetic_floats() > kMaxModelParameters) {
      return InvalidSpecField(
          "model.syntheticFloats",
          absl::StrCat("is ", model.synthetic_floats(), "; it must be in 1..",
                       kMaxModelParameters));
    }
    if (!(model.synthetic_compute_ms() >= 0) ||
        !std::isfinite(model.synthetic_compute_ms())) {
      return InvalidSpecField(
          "model.syntheticComputeMs",
          absl::StrCat("is ", model.synthetic_compute_ms(),
                       "; it must be a finite number >= 0"));
    }
    return absl::OkStatus();
  }
  return InvalidSpecField("model.kind",
                          absl::StrCat("is '", model.kind(),
                                       "'; use \"mlp\", \"synthetic\" or "
                                       "\"entrypoint\""));
}

[[nodiscard]] absl::Status ValidateOptimizer(OptimizerSpec* optimizer) {
  const std::string& name = optimizer->name();
  if (name != "sgd" && name != "momentum" && name != "adam" &&
      name != "adamw") {
    return InvalidSpecField(
        "optimizer.name",
        absl::StrCat("is '", name,
                     "'; use \"sgd\", \"momentum\", \"adam\" or "
                     "\"adamw\""));
  }
  if (!(optimizer->learning_rate() > 0) ||
      !std::isfinite(optimizer->learning_rate())) {
    return InvalidSpecField("optimizer.learningRate",
                            absl::StrCat("is ", optimizer->learning_rate(),
                                         "; it must be a finite number > 0"));
  }
  if (name == "momentum" && optimizer->momentum() == 0) {
    optimizer->set_momentum(kDefaultMomentum);
  }
  if (name == "adam" || name == "adamw") {
    if (optimizer->beta1() == 0) optimizer->set_beta1(kDefaultAdamBeta1);
    if (optimizer->beta2() == 0) optimizer->set_beta2(kDefaultAdamBeta2);
    if (optimizer->epsilon() == 0) optimizer->set_epsilon(kDefaultAdamEpsilon);
  }
  // The ranges are those of the optimizer the ranks will build.
  ASSIGN_OR_RETURN(OptimizerKind kind, ParseOptimizerKind(name));
  OptimizerConfig config;
  config.kind = kind;
  config.lr = optimizer->learning_rate();
  config.weight_decay = optimizer->weight_decay();
  config.nesterov = optimizer->nesterov();
  if (kind == OptimizerKind::kMomentum) config.momentum = optimizer->momentum();
  if (kind == OptimizerKind::kAdam || kind == OptimizerKind::kAdamW) {
    config.beta1 = optimizer->beta1();
    config.beta2 = optimizer->beta2();
    config.eps = optimizer->epsilon();
  }
  absl::Status status = ValidateOptimizerConfig(config);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("job spec field optimizer: ", status.message()));
  }
  return absl::OkStatus();
}

[[nodiscard]] absl::Status NonNegative(absl::string_view field, int64_t value) {
  if (value >= 0) return absl::OkStatus();
  return InvalidSpecField(field,
                          absl::StrCat("is ", value, "; it must be >= 0"));
}

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
  RETURN_IF_ERROR(NonNegative("ps.staleness", ps.staleness()));
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
        absl::StrCat("is ", partition, "; use 0 (4 MiB) or a multiple of 4 in ",
                     kMinPsPartitionBytes, "..", kMaxPsPartitionBytes,
                     " (1 GiB)"));
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

// With steps 0 the job runs `epochs` passes over the dataset: that many
// steps must be at least one, and countable.
[[nodiscard]] absl::Status ValidateEpochs(const JobSpec& spec) {
  // (A synthetic dataset has no epochs; the worker says so.)
  if (spec.steps() != 0 || spec.epochs() == 0 ||
      spec.dataset().name() != "fashion-mnist") {
    return absl::OkStatus();
  }
  // The workers drop the last partial batch (worker/data/batcher.h).
  const int64_t per_epoch = kFashionMnistTrainExamples / spec.batch_size();
  const double steps =
      std::ceil(spec.epochs() * static_cast<double>(per_epoch));
  if (!(steps >= 1)) {
    return InvalidSpecField(
        "epochs",
        absl::StrCat("is ", spec.epochs(), " at batchSize ", spec.batch_size(),
                     " (", per_epoch, " steps per epoch of ",
                     kFashionMnistTrainExamples,
                     " examples): not one step; raise epochs or "
                     "lower batchSize"));
  }
  if (!(steps <= static_cast<double>(kMaxSteps))) {
    return InvalidSpecField(
        "epochs",
        absl::StrCat("is ", spec.epochs(), ", ", steps, " steps at batchSize ",
                     spec.batch_size(), "; at most ", kMaxSteps, " steps"));
  }
  return absl::OkStatus();
}

// ringBackend and ringAlgorithm, on `out` whose device is already set.
// As the worker resolves ringBackend "auto" (worker/train/
// train_config.cc): NCCL for an mlp on cuda.
bool RingRunsOnNccl(const JobSpec& spec) {
  return spec.ring_backend() == "nccl" ||
         (spec.ring_backend() == "auto" && spec.device() == "cuda" &&
          spec.model().kind() == "mlp");
}

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
  RETURN_IF_ERROR(ValidateGradDtype(*out, RingRunsOnNccl(*out)));
  out->set_grad_dtype(GradDtypeName(type));
  return absl::OkStatus();
}

}  // namespace

// The model, data, batch and length of a job of gradsync's own models
// (mlp, synthetic); `out` gets their defaults.
[[nodiscard]] absl::Status ValidateBuiltInModel(const JobSpec& spec,
                                                JobSpec* out_ptr) {
  JobSpec& out = *out_ptr;
  if (spec.dataset().name() != "fashion-mnist" &&
      spec.dataset().name() != "synthetic") {
    return InvalidSpecField(
        "dataset.name",
        absl::StrCat("is '", spec.dataset().name(),
                     "'; use \"fashion-mnist\" or \"synthetic\""));
  }
  RETURN_IF_ERROR(ValidateModel(spec));
  if (!spec.model().profile().empty() && spec.model().synthetic_floats() == 0) {
    ASSIGN_OR_RETURN(const int64_t floats, ProfileFloats(spec.model()));
    out.mutable_model()->set_synthetic_floats(floats);
  }
  RETURN_IF_ERROR(ValidateNumWorkers(spec, "one rank per device"));
  RETURN_IF_ERROR(
      NonNegative("gradAccumulationSteps", spec.grad_accumulation_steps()));
  if (out.grad_accumulation_steps() == 0) out.set_grad_accumulation_steps(1);
  const int64_t min_batch =
      int64_t{spec.num_workers()} * out.grad_accumulation_steps();
  if (spec.batch_size() < min_batch) {
    return InvalidSpecField(
        "batchSize",
        absl::StrCat("is ", spec.batch_size(),
                     "; it is the global batch, "
                     "split over numWorkers (",
                     spec.num_workers(), ") and gradAccumulationSteps (",
                     out.grad_accumulation_steps(),
                     "), so it must be >= ", min_batch));
  }
  RETURN_IF_ERROR(NonNegative("steps", spec.steps()));
  if (!(spec.epochs() >= 0) || !std::isfinite(spec.epochs())) {
    return InvalidSpecField("epochs",
                            absl::StrCat("is ", spec.epochs(),
                                         "; it must be a finite number >= 0"));
  }
  if (spec.steps() == 0 && spec.epochs() == 0) {
    return InvalidSpecField("steps",
                            "and epochs are both 0; set steps (or epochs) > 0");
  }
  RETURN_IF_ERROR(ValidateEpochs(spec));
  return absl::OkStatus();
}

absl::StatusOr<JobSpec> ValidateJobSpec(const JobSpec& spec) {
  JobSpec out = spec;
  const bool entrypoint = spec.model().kind() == kEntrypointModelKind;
  const bool probe = IsLinkProbe(spec);
  if (entrypoint) {
    RETURN_IF_ERROR(ValidateEntrypoint(spec));
  } else if (probe) {
    RETURN_IF_ERROR(ValidateNumWorkers(spec, "one rank per host"));
    RETURN_IF_ERROR(ValidateLinkProbe(spec, &out));
  } else {
    RETURN_IF_ERROR(ValidateBuiltInModel(spec, &out));
  }
  RETURN_IF_ERROR(NonNegative("restartCount", spec.restart_count()));
  RETURN_IF_ERROR(ValidateName(spec.name()));
  if ((!entrypoint && !probe) || !spec.optimizer().name().empty()) {
    RETURN_IF_ERROR(ValidateOptimizer(out.mutable_optimizer()));
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
  RETURN_IF_ERROR(NonNegative("bucketBytes", spec.bucket_bytes()));
  if (out.bucket_bytes() == 0) out.set_bucket_bytes(kDefaultBucketBytes);
  RETURN_IF_ERROR(NonNegative("blasThreads", spec.blas_threads()));
  if (out.blas_threads() == 0) out.set_blas_threads(1);
  RETURN_IF_ERROR(NonNegative("evalEverySteps", spec.eval_every_steps()));
  RETURN_IF_ERROR(
      NonNegative("checkpoint.everySteps", spec.checkpoint().every_steps()));
  if (spec.checkpoint().on_every_host() &&
      spec.checkpoint().directory().empty()) {
    return InvalidSpecField(
        "checkpoint.onEveryHost",
        "is set without checkpoint.directory; name the directory "
        "each host writes its copy to");
  }
  RETURN_IF_ERROR(NonNegative("maxRestarts", spec.max_restarts()));
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

absl::StatusOr<JobSpec> ParseJobSpecJson(absl::string_view json) {
  JobSpec spec;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &spec, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job spec JSON could not be parsed: ", std::string(status.message()),
        "; see proto/job.proto for the fields (camelCase)"));
  }
  return spec;
}

}  // namespace gradsync
