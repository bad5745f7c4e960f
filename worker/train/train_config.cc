#include "worker/train/train_config.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/model_profiles.h"
#include "common/status_macros.h"
#include "jobspec/grad_dtype.h"

namespace gradsync {
namespace {

[[nodiscard]] absl::Status Invalid(absl::string_view field,
                                   absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("training config field ", field, " ", problem));
}

// The coordinator's defaults (jobspec/job_spec.h).
constexpr double kDefaultMomentum = 0.9;
constexpr double kDefaultBeta1 = 0.9;
constexpr double kDefaultBeta2 = 0.999;
constexpr double kDefaultEpsilon = 1e-8;

[[nodiscard]] absl::Status ModelFromSpec(const ModelSpec& model,
                                         TrainerConfig* config) {
  if (model.kind() == "mlp") {
    config->model = ModelKind::kMlp;
    for (int i = 0; i < model.layer_sizes_size(); ++i) {
      if (model.layer_sizes(i) <= 0) {
        return Invalid(absl::StrCat("model.layerSizes[", i, "]"),
                       absl::StrCat("is ", model.layer_sizes(i),
                                    "; widths must be positive"));
      }
      config->layer_sizes.push_back(static_cast<size_t>(model.layer_sizes(i)));
    }
    return absl::OkStatus();
  }
  if (model.kind() == "synthetic") {
    config->model = ModelKind::kSynthetic;
    if (model.synthetic_floats() <= 0) {
      return Invalid(
          "model.syntheticFloats",
          absl::StrCat("is ", model.synthetic_floats(), "; it must be > 0"));
    }
    const double ms = model.synthetic_compute_ms();
    if (!(ms >= 0) || !std::isfinite(ms)) {
      return Invalid("model.syntheticComputeMs",
                     absl::StrCat("is ", ms, "; it must be finite and >= 0"));
    }
    config->synthetic_floats = static_cast<size_t>(model.synthetic_floats());
    config->synthetic_compute = absl::Microseconds(std::llround(ms * 1000));
    if (!model.profile().empty()) {
      absl::StatusOr<std::vector<ProfileTensor>> tensors =
          ModelProfile(model.profile());
      if (!tensors.ok())
        return Invalid("model.profile", tensors.status().message());
      absl::StatusOr<std::vector<size_t>> layers = ScaledLayerFloats(
          *tensors, model.profile_scale() == 0 ? 1 : model.profile_scale());
      if (!layers.ok()) {
        return Invalid("model.profileScale", layers.status().message());
      }
      size_t total = 0;
      for (size_t f : *layers) total += f;
      if (total != config->synthetic_floats) {
        return Invalid("model.syntheticFloats",
                       absl::StrCat("is ", config->synthetic_floats, " but ",
                                    model.profile(), " has ", total));
      }
      config->synthetic_layers = *std::move(layers);
      config->synthetic_layer_cost.clear();
      for (const ProfileTensor& t : *tensors) {
        config->synthetic_layer_cost.push_back(t.flops);
      }
    }
    return absl::OkStatus();
  }
  return Invalid("model.kind", absl::StrCat("is '", model.kind(),
                                            "'; use \"mlp\" or \"synthetic\""));
}

[[nodiscard]] absl::Status OptimizerFromSpec(const OptimizerSpec& spec,
                                             OptimizerConfig* config) {
  absl::StatusOr<OptimizerKind> kind = ParseOptimizerKind(spec.name());
  // "sum" is the torch PS path's sum-only flavour: a built-in model's
  // ranks would train on the summed gradient as their parameters.
  if (!kind.ok() || *kind == OptimizerKind::kSum) {
    return Invalid("optimizer.name",
                   absl::StrCat("is '", spec.name(),
                                "'; use \"sgd\", \"momentum\", \"adam\" or "
                                "\"adamw\""));
  }
  config->kind = *kind;
  config->lr = spec.learning_rate();
  config->weight_decay = spec.weight_decay();
  config->nesterov = spec.nesterov();
  config->momentum = spec.momentum() == 0 ? kDefaultMomentum : spec.momentum();
  config->beta1 = spec.beta1() == 0 ? kDefaultBeta1 : spec.beta1();
  config->beta2 = spec.beta2() == 0 ? kDefaultBeta2 : spec.beta2();
  config->eps = spec.epsilon() == 0 ? kDefaultEpsilon : spec.epsilon();
  return absl::OkStatus();
}

[[nodiscard]] absl::StatusOr<SyncPath> PathFromMode(absl::string_view field,
                                                    SyncMode mode) {
  switch (mode) {
    case SYNC_MODE_UNSPECIFIED:
    case SYNC_MODE_RING:
      return SyncPath::kRing;
    case SYNC_MODE_PS:
      return SyncPath::kPs;
    default:
      return Invalid(field, absl::StrCat("is ", static_cast<int>(mode),
                                         "; use SYNC_MODE_RING or "
                                         "SYNC_MODE_PS"));
  }
}

[[nodiscard]] absl::Status PsFromSpec(const JobSpec& spec,
                                      TrainerConfig* config) {
  const PsSpec& ps = spec.ps();
  if (ps.sync().empty() || ps.sync() == "sync") {
    config->ps.update = PsUpdate::kSync;
  } else if (ps.sync() == "async") {
    config->ps.update = PsUpdate::kAsync;
  } else if (ps.sync() == "ssp") {
    config->ps.update = PsUpdate::kSsp;
  } else {
    return Invalid("ps.sync", absl::StrCat("is '", ps.sync(),
                                           "'; use \"sync\", \"async\" "
                                           "or \"ssp\""));
  }
  if (ps.staleness() < 0) return Invalid("ps.staleness", "must be >= 0");
  config->ps.staleness = ps.staleness();
  if (ps.partition_bytes() < 0) {
    return Invalid("ps.partitionBytes", "must be >= 0");
  }
  if (ps.partition_bytes() > 0) {
    config->ps.partition_bytes = static_cast<size_t>(ps.partition_bytes());
  }
  if (ps.chunk_bytes() < 0) return Invalid("ps.chunkBytes", "must be >= 0");
  if (ps.chunk_bytes() > 0) {
    config->ps.chunk_bytes = static_cast<size_t>(ps.chunk_bytes());
  }
  config->ps.optimizer = spec.optimizer();
  int64_t last = 0;
  for (int i = 0; i < spec.switches_size(); ++i) {
    const SwitchSpec& sw = spec.switches(i);
    const std::string field = absl::StrCat("switches[", i, "]");
    if (sw.step() <= last) {
      return Invalid(absl::StrCat(field, ".step"),
                     absl::StrCat("is ", sw.step(),
                                  "; switch steps must be "
                                  ">= 1 and increasing"));
    }
    last = sw.step();
    ASSIGN_OR_RETURN(SyncPath path,
                     PathFromMode(absl::StrCat(field, ".mode"), sw.mode()));
    config->switches.push_back({sw.step(), path});
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateTrainerConfig(const TrainerConfig& config) {
  if (config.model == ModelKind::kMlp) {
    if (config.layer_sizes.size() < 2) {
      return Invalid("model.layerSizes",
                     absl::StrCat("has ", config.layer_sizes.size(),
                                  " entries; an mlp needs at least 2"));
    }
    for (size_t w : config.layer_sizes) {
      if (w == 0) return Invalid("model.layerSizes", "has a zero width");
    }
  } else if (config.synthetic_floats == 0) {
    return Invalid("model.syntheticFloats", "is 0; it must be > 0");
  }
  if (config.cuda_device < -1) {
    return Invalid("cuda_device",
                   absl::StrCat("is ", config.cuda_device,
                                "; use a CUDA device index, or -1 for the "
                                "CPU"));
  }
  if (config.synthetic_compute < absl::ZeroDuration() ||
      config.synthetic_compute == absl::InfiniteDuration()) {
    return Invalid("model.syntheticComputeMs", "must be finite and >= 0");
  }
  if (config.global_batch_size == 0) {
    return Invalid("batchSize", "is 0; it must be > 0");
  }
  if (config.steps < 0) {
    return Invalid("steps", absl::StrCat("is ", config.steps, "; need >= 0"));
  }
  if (!(config.epochs >= 0) || !std::isfinite(config.epochs)) {
    return Invalid("epochs", "must be finite and >= 0");
  }
  if (config.steps == 0 && config.epochs == 0) {
    return Invalid("steps", "and epochs are both 0; set one of them > 0");
  }
  if (config.steps == 0 && config.model == ModelKind::kSynthetic) {
    return Invalid("steps",
                   "is 0; a synthetic model has no dataset to count "
                   "epochs over, so set steps");
  }
  if (config.bucket_bytes < sizeof(float)) {
    return Invalid("bucketBytes",
                   absl::StrCat("is ", config.bucket_bytes,
                                "; a bucket holds at least one float (4)"));
  }
  if (config.grad_accumulation_steps < 1) {
    return Invalid("gradAccumulationSteps",
                   absl::StrCat("is ", config.grad_accumulation_steps,
                                "; it must be >= 1"));
  }
  if (config.eval_every_steps < 0) {
    return Invalid("evalEverySteps", "must be >= 0");
  }
  if (config.eval_batch_size == 0) {
    return Invalid("eval_batch_size", "is 0; it must be > 0");
  }
  if (config.blas_threads < 1) {
    return Invalid("blasThreads", absl::StrCat("is ", config.blas_threads,
                                               "; it must be >= 1"));
  }
  if (config.comm_timeout <= absl::ZeroDuration()) {
    return Invalid("comm_timeout", "must be positive");
  }
  absl::Status optimizer = ValidateOptimizerConfig(config.optimizer);
  if (!optimizer.ok()) return Annotate(optimizer, "training config optimizer");
  return absl::OkStatus();
}

absl::StatusOr<TrainerConfig> TrainerConfigFromJobSpec(const JobSpec& spec) {
  TrainerConfig config;
  RETURN_IF_ERROR(ModelFromSpec(spec.model(), &config));
  const std::string& dataset = spec.dataset().name();
  if (dataset == "fashion-mnist" || dataset.empty()) {
    config.dataset = DatasetKind::kFashionMnist;
  } else if (dataset == "synthetic") {
    config.dataset = DatasetKind::kSynthetic;
  } else {
    return Invalid("dataset.name",
                   absl::StrCat("is '", dataset,
                                "'; use \"fashion-mnist\" or \"synthetic\""));
  }
  config.dataset_path = spec.dataset().path();
  RETURN_IF_ERROR(OptimizerFromSpec(spec.optimizer(), &config.optimizer));
  if (spec.batch_size() <= 0) {
    return Invalid("batchSize",
                   absl::StrCat("is ", spec.batch_size(), "; it must be > 0"));
  }
  config.global_batch_size = static_cast<size_t>(spec.batch_size());
  config.steps = spec.steps();
  config.epochs = spec.epochs();
  config.seed = spec.seed();
  if (spec.bucket_bytes() < 0) {
    return Invalid("bucketBytes", "must be >= 0 (0: 25 MiB)");
  }
  if (spec.bucket_bytes() > 0) {
    config.bucket_bytes = static_cast<size_t>(spec.bucket_bytes());
  }
  if (spec.grad_accumulation_steps() > 0) {
    config.grad_accumulation_steps = spec.grad_accumulation_steps();
  } else if (spec.grad_accumulation_steps() < 0) {
    return Invalid("gradAccumulationSteps", "must be >= 0 (0: 1)");
  }
  config.eval_every_steps = spec.eval_every_steps();
  config.checkpoint_dir = spec.checkpoint().directory();
  if (spec.checkpoint().every_steps() < 0) {
    return Invalid("checkpoint.everySteps", "must be >= 0 (0: at the end)");
  }
  config.checkpoint_every = spec.checkpoint().every_steps();
  config.checkpoint_on_every_host = spec.checkpoint().on_every_host();
  config.resume_from = spec.checkpoint().resume_from();
  if (spec.blas_threads() > 0) {
    config.blas_threads = spec.blas_threads();
  } else if (spec.blas_threads() < 0) {
    return Invalid("blasThreads", "must be >= 0 (0: 1)");
  }
  ASSIGN_OR_RETURN(config.initial_path, PathFromMode("mode", spec.mode()));
  RETURN_IF_ERROR(PsFromSpec(spec, &config));
  // The placement (which rank on which device) comes with the Assignment.
  if (!spec.device().empty() && spec.device() != "cpu" &&
      spec.device() != "cuda") {
    return Invalid("device", absl::StrCat("is '", spec.device(),
                                          "'; use \"cpu\" or \"cuda\""));
  }
  const bool mlp_on_cuda =
      spec.device() == "cuda" && config.model == ModelKind::kMlp;
  if (spec.ring_backend() == "nccl") {
    if (!mlp_on_cuda) {
      return Invalid("ringBackend",
                     "is \"nccl\", which needs an mlp on device \"cuda\"");
    }
    config.ring_backend = RingBackend::kNccl;
  } else if (spec.ring_backend().empty() || spec.ring_backend() == "auto") {
    config.ring_backend = mlp_on_cuda ? RingBackend::kNccl : RingBackend::kTcp;
  } else if (spec.ring_backend() != "tcp") {
    return Invalid("ringBackend", absl::StrCat("is '", spec.ring_backend(),
                                               "'; use auto, tcp or nccl"));
  }
  if (!spec.ring_algorithm().empty()) {
    absl::StatusOr<AllReduceAlgorithm> algorithm =
        ParseAllReduceAlgorithm(spec.ring_algorithm());
    if (!algorithm.ok()) {
      return Invalid("ringAlgorithm",
                     absl::StrCat("is '", spec.ring_algorithm(),
                                  "'; use auto, ring, hd or hierarchical"));
    }
    config.ring_algorithm = *algorithm;
  }
  if (config.ring_algorithm != AllReduceAlgorithm::kAuto &&
      config.ring_backend == RingBackend::kNccl) {
    return Invalid("ringAlgorithm",
                   absl::StrCat("is '", spec.ring_algorithm(),
                                "', an algorithm of the TCP ring, but this "
                                "job runs on NCCL, which picks its own; use "
                                "ringBackend \"tcp\""));
  }
  RETURN_IF_ERROR(
      ValidateGradDtype(spec, config.ring_backend == RingBackend::kNccl));
  ASSIGN_OR_RETURN(config.grad_dtype, ParseGradDtype(spec.grad_dtype()));
  RETURN_IF_ERROR(ValidateTrainerConfig(config));
  return config;
}

}  // namespace gradsync
