#include "worker/train/train_config.h"

#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "jobspec/grad_dtype.h"
#include "jobspec/job_spec.h"
#include "jobspec/optimizer_spec.h"
#include "models/model_builders.h"

namespace gradsync {
namespace {

SyncPath PathOf(SyncMode mode) {
  return mode == SYNC_MODE_PS ? SyncPath::kPs : SyncPath::kRing;
}

// The PS settings and scripted switches of a checked spec.
void PsFromSpec(const JobSpec& spec, TrainerConfig* config) {
  const PsSpec& ps = spec.ps();
  config->ps.update = ps.sync() == "async" ? PsUpdate::kAsync
                      : ps.sync() == "ssp" ? PsUpdate::kSsp
                                           : PsUpdate::kSync;
  config->ps.staleness = ps.staleness();
  config->ps.partition_bytes = static_cast<size_t>(PsPartitionBytes(ps));
  if (ps.chunk_bytes() > 0) {
    config->ps.chunk_bytes = static_cast<size_t>(ps.chunk_bytes());
  }
  config->ps.optimizer = spec.optimizer();
  for (const SwitchSpec& sw : spec.switches()) {
    config->switches.push_back({sw.step(), PathOf(sw.mode())});
  }
}

}  // namespace

absl::Status ValidateTrainerConfig(const TrainerConfig& config) {
  ASSIGN_OR_RETURN(const ModelBuilder* builder, FindModelBuilder(config.model));
  if (builder->validate != nullptr) RETURN_IF_ERROR(builder->validate(config));
  if (config.cuda_device < -1) {
    return InvalidTrainerConfigField(
        "cuda_device", absl::StrCat("is ", config.cuda_device,
                                    "; use a CUDA device index, or -1 for the "
                                    "CPU"));
  }
  if (config.global_batch_size == 0) {
    return InvalidTrainerConfigField("batchSize", "is 0; it must be > 0");
  }
  if (config.steps < 0) {
    return InvalidTrainerConfigField(
        "steps", absl::StrCat("is ", config.steps, "; need >= 0"));
  }
  if (!(config.epochs >= 0) || !std::isfinite(config.epochs)) {
    return InvalidTrainerConfigField("epochs", "must be finite and >= 0");
  }
  if (config.steps == 0 && config.epochs == 0) {
    return InvalidTrainerConfigField(
        "steps", "and epochs are both 0; set one of them > 0");
  }
  if (config.steps == 0 && builder->data_shape == nullptr) {
    return InvalidTrainerConfigField(
        "steps", absl::StrCat("is 0; a ", config.model,
                              " model has no dataset to count "
                              "epochs over, so set steps"));
  }
  if (config.bucket_bytes < sizeof(float)) {
    return InvalidTrainerConfigField(
        "bucketBytes", absl::StrCat("is ", config.bucket_bytes,
                                    "; a bucket holds at least one float (4)"));
  }
  if (config.grad_accumulation_steps < 1) {
    return InvalidTrainerConfigField(
        "gradAccumulationSteps",
        absl::StrCat("is ", config.grad_accumulation_steps,
                     "; it must be >= 1"));
  }
  if (config.eval_every_steps < 0) {
    return InvalidTrainerConfigField("evalEverySteps", "must be >= 0");
  }
  if (config.eval_batch_size == 0) {
    return InvalidTrainerConfigField("eval_batch_size", "is 0; it must be > 0");
  }
  if (config.blas_threads < 1) {
    return InvalidTrainerConfigField(
        "blasThreads",
        absl::StrCat("is ", config.blas_threads, "; it must be >= 1"));
  }
  if (config.comm_timeout <= absl::ZeroDuration()) {
    return InvalidTrainerConfigField("comm_timeout", "must be positive");
  }
  absl::Status optimizer = ValidateOptimizerConfig(config.optimizer);
  if (!optimizer.ok()) return Annotate(optimizer, "training config optimizer");
  return absl::OkStatus();
}

absl::StatusOr<TrainerConfig> TrainerConfigFromJobSpec(
    const JobSpec& received) {
  // The coordinator's rules, again: what it would refuse is refused here
  // with its message, and every default comes from the checked copy.
  ASSIGN_OR_RETURN(const JobSpec spec, ValidateJobSpec(received));
  TrainerConfig config;
  config.model = spec.model().kind();
  config.model_spec = spec.model();
  ASSIGN_OR_RETURN(const ModelBuilder* builder, FindModelBuilder(config.model));
  RETURN_IF_ERROR(builder->configure(spec.model(), &config));
  config.dataset = spec.dataset().name() == "synthetic"
                       ? DatasetKind::kSynthetic
                       : DatasetKind::kFashionMnist;
  config.dataset_path = spec.dataset().path();
  ASSIGN_OR_RETURN(config.optimizer, OptimizerConfigFromSpec(spec.optimizer()));
  config.global_batch_size = static_cast<size_t>(spec.batch_size());
  config.steps = spec.steps();
  config.epochs = spec.epochs();
  config.seed = spec.seed();
  config.bucket_bytes = static_cast<size_t>(spec.bucket_bytes());
  config.grad_accumulation_steps = spec.grad_accumulation_steps();
  config.eval_every_steps = spec.eval_every_steps();
  config.checkpoint_dir = spec.checkpoint().directory();
  config.checkpoint_every = spec.checkpoint().every_steps();
  config.checkpoint_on_every_host = spec.checkpoint().on_every_host();
  config.resume_from = spec.checkpoint().resume_from();
  config.blas_threads = spec.blas_threads();
  config.initial_path = PathOf(spec.mode());
  PsFromSpec(spec, &config);
  // The placement (which rank on which device) comes with the Assignment.
  config.ring_backend =
      RingRunsOnNccl(spec) ? RingBackend::kNccl : RingBackend::kTcp;
  ASSIGN_OR_RETURN(config.ring_algorithm,
                   ParseAllReduceAlgorithm(spec.ring_algorithm()));
  ASSIGN_OR_RETURN(config.grad_dtype, ParseGradDtype(spec.grad_dtype()));
  RETURN_IF_ERROR(ValidateTrainerConfig(config));
  return config;
}

}  // namespace gradsync
