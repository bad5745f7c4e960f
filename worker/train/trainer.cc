#include "worker/train/trainer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "models/model_builders.h"
#include "study/alpha_beta/sync_bandwidth.h"
#include "worker/train/checkpoint.h"
#include "worker/train/checkpoint_share.h"
#include "worker/train/param_hash.h"

namespace gradsync {
namespace {

// Indices of the evaluation's reduction.
enum EvalScalar { kEvalLossSum = 0, kEvalCorrect, kEvalCount, kNumEvalScalars };

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

}  // namespace

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(
    const TrainerConfig& config, const TrainData& data, Communicator* comm,
    MetricsSink sink, const std::atomic<bool>* cancelled, SwitchSource switches,
    DeviceCommFactory device_comms) {
  if (comm == nullptr) {
    return absl::InvalidArgumentError("the trainer needs a communicator");
  }
  RETURN_IF_ERROR(ValidateTrainerConfig(config));
  ASSIGN_OR_RETURN(const ModelBuilder* builder, FindModelBuilder(config.model));
  if (builder->data_shape != nullptr) {
    if (data.train == nullptr || data.test == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("the ", config.model,
                       " model needs training and test data (LoadTrainData)"));
    }
    const DataShape shape = builder->data_shape(config);
    for (const Dataset* d : {data.train.get(), data.test.get()}) {
      if (d->feature_size != shape.features ||
          d->num_classes != shape.classes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the data has ", d->feature_size, " features and ", d->num_classes,
            " classes, but the ", config.model, " model takes ", shape.features,
            " features and ", shape.classes, " classes"));
      }
    }
  }
  if (config.ring_backend == RingBackend::kNccl && !device_comms) {
    return absl::FailedPreconditionError(
        config.cuda_device < 0
            ? "ringBackend nccl: this rank is on the CPU, and NCCL needs every "
              "rank on a GPU; a job mixing GPU and CPU ranks uses ringBackend "
              "\"tcp\" or the PS"
            : "ringBackend nccl: this rank has no way to build an NCCL "
              "communicator (its worker was built without NCCL?); submit the "
              "job with ringBackend \"tcp\"");
  }
  std::unique_ptr<Trainer> trainer(
      new Trainer(config, data, comm, std::move(sink), cancelled,
                  std::move(switches), std::move(device_comms)));
  RETURN_IF_ERROR(trainer->Init());
  return trainer;
}

Trainer::Trainer(const TrainerConfig& config, const TrainData& data,
                 Communicator* comm, MetricsSink sink,
                 const std::atomic<bool>* cancelled, SwitchSource switches,
                 DeviceCommFactory device_comms)
    : config_(config),
      data_(data),
      comm_(comm),
      sink_(std::move(sink)),
      cancelled_(cancelled),
      rank_(comm->rank()),
      world_(comm->size()),
      switches_(std::move(switches)),
      device_comms_(std::move(device_comms)) {}

Trainer::~Trainer() = default;

absl::Status Trainer::Init() {
  ASSIGN_OR_RETURN(model_, CreateTrainModel(config_, rank_));
  ASSIGN_OR_RETURN(paths_,
                   SyncPathController::Create(
                       config_, comm_, model_.get(), std::move(switches_),
                       std::move(device_comms_), kNumStepScalars, &operation_));
  num_steps_ = config_.steps;
  if (model_->uses_data()) {
    BatcherConfig bc;
    bc.global_batch_size = config_.global_batch_size;
    bc.seed = config_.seed;
    bc.num_ranks = static_cast<size_t>(world_);
    bc.rank = static_cast<size_t>(rank_);
    bc.drop_last = true;
    ASSIGN_OR_RETURN(Batcher batcher,
                     Batcher::Create(data_.train->num_examples, bc));
    batcher_.emplace(std::move(batcher));
    if (num_steps_ == 0) {
      const double steps = std::ceil(
          config_.epochs * static_cast<double>(batcher_->steps_per_epoch()));
      if (!(steps < static_cast<double>(std::numeric_limits<int64_t>::max()))) {
        return absl::InvalidArgumentError(
            absl::StrCat("epochs ", config_.epochs, " gives too many steps"));
      }
      num_steps_ = static_cast<int64_t>(steps);
    }
  }
  if (num_steps_ <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the job has no step to run (steps ", config_.steps,
                     ", epochs ", config_.epochs, ")"));
  }
  RETURN_IF_ERROR(ChooseCheckpointWriters());
  if (!config_.resume_from.empty()) RETURN_IF_ERROR(Resume());
  if (writes_checkpoints_ && !config_.checkpoint_dir.empty()) {
    // Once, for the whole run: every checkpoint goes through this
    // descriptor, and is refused once its path leads elsewhere.
    absl::StatusOr<RootedDir> dir = RootedDir::OpenUnderRoots(
        "checkpoint.directory", config_.checkpoint_dir,
        config_.checkpoint_roots, /*create=*/true);
    if (!dir.ok()) {
      return absl::Status(
          dir.status().code(),
          absl::StrCat("checkpoint.directory: ", dir.status().message()));
    }
    checkpoint_dir_.emplace(*std::move(dir));
  }
  return absl::OkStatus();
}

absl::Status Trainer::ChooseCheckpointWriters() {
  writes_checkpoints_ = rank_ == 0;
  if (config_.checkpoint_dir.empty() || !config_.checkpoint_on_every_host) {
    return absl::OkStatus();
  }
  // Every rank's host name as a 53-bit FNV-1a fingerprint (exact in a
  // double, the same in every build): a rank writes when no lower rank
  // shares its host.
  uint64_t fnv = 14695981039346656037ULL;
  for (const char c : config_.host) {
    fnv = (fnv ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  const double mine = static_cast<double>(fnv >> 11);
  std::vector<double> hosts(static_cast<size_t>(world_));
  RETURN_IF_ERROR(Annotate(
      comm_->AllGather(&mine, hosts.data(), 1, DataType::kFloat64),
      "finding the lowest rank of each host (checkpoint.onEveryHost)"));
  writes_checkpoints_ = std::find(hosts.begin(), hosts.begin() + rank_, mine) ==
                        hosts.begin() + rank_;
  return absl::OkStatus();
}

absl::Status Trainer::Resume() {
  const std::string& path = config_.resume_from;
  // One rank that can read the file broadcasts it: it needs to be on one
  // worker's host only, and every rank starts from the same bits.
  absl::StatusOr<SharedCheckpoint> shared =
      ShareCheckpoint(comm_, path, kShareChunkFloats, config_.checkpoint_roots);
  if (!shared.ok()) {
    return absl::Status(
        shared.status().code(),
        absl::StrCat("cannot resume: ", shared.status().message()));
  }
  // (gradsync::Checkpoint: Trainer::Checkpoint writes one.)
  const gradsync::Checkpoint* checkpoint = &shared->checkpoint;
  const absl::Span<float> params = model_->params();
  if (checkpoint->params.size() != params.size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot resume from ", path, ": it holds ", checkpoint->params.size(),
        " parameters, but the job's model has ", params.size(),
        "; resume with the model spec that wrote it"));
  }
  if (checkpoint->steps_done < 0 || checkpoint->steps_done >= num_steps_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot resume from ", path, ": it was written after step ",
        checkpoint->steps_done, " and the job has ", num_steps_,
        " steps; ask for more steps (or epochs) than the checkpoint has "
        "done"));
  }
  const absl::Status imported =
      paths_->ImportOptimizerState(checkpoint->optimizer);
  if (!imported.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot resume from ", path,
        ": its optimizer state does not fit the job's optimizer (",
        imported.message(), "); resume with the optimizer that wrote it"));
  }
  std::copy(checkpoint->params.begin(), checkpoint->params.end(),
            params.begin());
  first_step_ = checkpoint->steps_done;
  return absl::OkStatus();
}

bool Trainer::Cancelled() const {
  return cancelled_ != nullptr && cancelled_->load();
}

absl::Status Trainer::Fail(int64_t step, const absl::Status& cause) {
  failure_.step = step;
  failure_.operation = operation_;
  failure_.cause =
      Cancelled() ? absl::CancelledError("the rank was cancelled") : cause;
  // The peers may be waiting in a collective for this rank: closing its
  // connections makes them fail at once, naming this rank.
  paths_->AbortAfterFailure(failure_.cause);
  return absl::Status(
      failure_.cause.code(),
      absl::StrCat("rank ", rank_, ", step ", step, ", ", failure_.operation,
                   ": ", failure_.cause.message()));
}

absl::StatusOr<TrainResult> Trainer::Run() {
  if (ran_) {
    return absl::FailedPreconditionError("Trainer::Run may be called once");
  }
  ran_ = true;
  TrainResult result;
  for (int64_t step = first_step_; step < num_steps_; ++step) {
    operation_ = "step start";
    if (Cancelled()) return Fail(step, absl::CancelledError("cancelled"));
    int64_t epoch = 0;
    const SyncPath before = paths_->path();
    const absl::Time switch_start = absl::Now();
    absl::Status status = paths_->TakePathOf(step, first_step_, &epoch);
    if (!status.ok()) return Fail(step, status);
    const absl::Duration switching = absl::Now() - switch_start;
    StepMetrics metrics;
    status = Step(step, &metrics);
    if (!status.ok()) return Fail(step, status);
    metrics.set_switch_epoch(epoch);
    const SyncPath path = paths_->path();
    if (path != before || (step == first_step_ && path == SyncPath::kPs)) {
      metrics.set_switch_s(Seconds(switching));
    }
    const bool last = step + 1 == num_steps_;
    if (last && paths_->on_device()) {
      // The run's result is the host mirror (params()).
      operation_ = "parameter download";
      status = paths_->DownloadParams();
      if (!status.ok()) return Fail(step, status);
    }
    if (last && path == SyncPath::kPs) {
      // Every rank takes the final parameters (and the optimizer state,
      // for the checkpoint) from the shards, which are then released.
      status = paths_->FinishPs(num_steps_);
      if (!status.ok()) return Fail(step, status);
      metrics.set_param_hash(HashParameters(model_->params()));
    }
    if (model_->uses_data() &&
        (last || (config_.eval_every_steps > 0 &&
                  (step + 1) % config_.eval_every_steps == 0))) {
      operation_ = "evaluation";
      status = Evaluate(&result.test_loss, &result.test_accuracy);
      if (!status.ok()) return Fail(step, status);
      result.evaluated = last;
      metrics.set_test_accuracy(result.test_accuracy);
    }
    if (!config_.checkpoint_dir.empty() &&
        (last || (config_.checkpoint_every > 0 &&
                  (step + 1) % config_.checkpoint_every == 0))) {
      operation_ = "checkpoint";
      std::string written;
      status = Checkpoint(step, &written);
      if (!status.ok()) return Fail(step, status);
      metrics.set_checkpoint(written);
    }
    metrics.set_wall_time(
        absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
    result.steps = step + 1;
    result.final_loss = metrics.loss();
    result.param_hash = metrics.param_hash();
    if (sink_) sink_(metrics);
  }
  return result;
}

absl::Status Trainer::Step(int64_t step, StepMetrics* metrics) {
  const absl::Time start = absl::Now();
  const size_t global_batch = config_.global_batch_size;
  const int micro_batches = config_.grad_accumulation_steps;
  std::vector<size_t> indices;
  size_t share = Batcher::ShareOf(global_batch, static_cast<size_t>(world_),
                                  static_cast<size_t>(rank_))
                     .size();
  if (batcher_.has_value()) {
    operation_ = "batch selection";
    ASSIGN_OR_RETURN(indices, batcher_->Indices(static_cast<uint64_t>(step)));
    share = indices.size();
  }
  // Async and SSP shards apply each push alone: it must be the mean over
  // the rank's own share. Otherwise the ranks' gradients add up to the
  // global batch's (ring_sync.h).
  const SyncPath path = paths_->path();
  GradientSync& sync = paths_->sync();
  const bool local_mean =
      path == SyncPath::kPs && config_.ps.update != PsUpdate::kSync;
  const size_t normalizer =
      local_mean ? std::max<size_t>(share, 1) : global_batch;
  operation_ = "gradient sync setup";
  RETURN_IF_ERROR(sync.BeginStep(step, paths_->HeardEpoch()));
  double scalars[kNumStepScalars] = {0.0};
  const GradReadyCallback on_ready = [&sync](size_t begin, size_t end) {
    sync.OnGradReady(begin, end);
  };
  const GradReadyCallback no_sync;
  for (int m = 0; m < micro_batches; ++m) {
    if (m > 0 && Cancelled()) return absl::CancelledError("cancelled");
    const ShareRange part = Batcher::ShareOf(
        share, static_cast<size_t>(micro_batches), static_cast<size_t>(m));
    if (batcher_.has_value()) {
      operation_ = "batch gathering";
      RETURN_IF_ERROR(GatherExamples(
          *data_.train,
          absl::MakeConstSpan(indices).subspan(part.begin, part.size()),
          &batch_));
    }
    operation_ = micro_batches == 1
                     ? "forward/backward"
                     : absl::StrCat("forward/backward of micro-batch ", m + 1,
                                    " of ", micro_batches);
    const bool sync_pass = m + 1 == micro_batches;
    ASSIGN_OR_RETURN(
        PassStats pass,
        model_->ForwardBackward(
            batch_, step, m == 0 ? GradMode::kOverwrite : GradMode::kAccumulate,
            normalizer, sync_pass ? on_ready : no_sync));
    scalars[kLossSum] += pass.loss_sum;
  }
  const absl::Time backward_done = absl::Now();

  operation_ = path == SyncPath::kPs ? "gradient push/pull with the PS"
                                     : "gradient all-reduce";
  ASSIGN_OR_RETURN(SyncStats stats,
                   sync.FinishStep(absl::MakeSpan(scalars),
                                   absl::Now() + config_.comm_timeout));
  operation_ = "switch agreement";
  RETURN_IF_ERROR(paths_->NoteDecision(step, stats));
  const absl::Time synced = absl::Now();
  if (sync.optimizer_runs_locally()) {
    operation_ = "optimizer step";
    RETURN_IF_ERROR(paths_->OptimizerStep());
  }
  uint64_t hash = 0;
  const bool on_device = paths_->on_device();
  if (on_device) {
    // Hashed where the parameters are; waiting for it ends the step's
    // device work, so its time counts as compute.
    operation_ = "parameter hash on the device";
    ASSIGN_OR_RETURN(hash, paths_->DeviceHash());
  }
  const absl::Time updated = absl::Now();
  if (!on_device) hash = HashParameters(model_->params());
  const absl::Time end = absl::Now();

  metrics->set_rank(rank_);
  metrics->set_step(step);
  metrics->set_loss(scalars[kLossSum] / static_cast<double>(normalizer));
  const absl::Duration compute = (backward_done - start) + (updated - synced);
  metrics->set_compute_s(Seconds(compute));
  metrics->set_comm_s(Seconds(stats.exposed));
  metrics->set_step_s(Seconds(end - start));
  metrics->set_idle_s(
      std::max(0.0, Seconds(end - start - compute - stats.exposed)));
  metrics->set_bytes_sent(stats.bytes_sent);
  metrics->set_bytes_received(stats.bytes_received);
  metrics->set_sync_bytes(stats.payload_bytes);
  metrics->set_sync_busy_s(Seconds(stats.busy));
  const double algbw = AlgorithmBandwidth(stats.payload_bytes, stats.busy);
  metrics->set_algbw_gbps(algbw);
  metrics->set_busbw_gbps(algbw * stats.bus_factor);
  metrics->set_samples(static_cast<int64_t>(share));
  metrics->set_param_hash(hash);
  metrics->set_mode(path == SyncPath::kPs ? SYNC_MODE_PS : SYNC_MODE_RING);
  if (path == SyncPath::kPs) metrics->set_ps_transport(paths_->PsTransport());
  return absl::OkStatus();
}

absl::Status Trainer::Evaluate(double* loss, double* accuracy) {
  const Dataset& test = *data_.test;
  const ShareRange mine =
      Batcher::ShareOf(test.num_examples, static_cast<size_t>(world_),
                       static_cast<size_t>(rank_));
  ASSIGN_OR_RETURN(PassStats pass,
                   model_->Evaluate(test, mine.begin, mine.end));
  double sums[kNumEvalScalars];
  sums[kEvalLossSum] = pass.loss_sum;
  sums[kEvalCorrect] = static_cast<double>(pass.correct);
  sums[kEvalCount] = static_cast<double>(pass.count);
  RETURN_IF_ERROR(paths_->sync().AllReduceScalars(
      absl::MakeSpan(sums), absl::Now() + config_.comm_timeout));
  if (sums[kEvalCount] <= 0) {
    return absl::FailedPreconditionError("the test set is empty");
  }
  *loss = sums[kEvalLossSum] / sums[kEvalCount];
  *accuracy = sums[kEvalCorrect] / sums[kEvalCount];
  return absl::OkStatus();
}

void Trainer::Abort(const absl::Status& reason) { paths_->Abort(reason); }

absl::Status Trainer::Checkpoint(int64_t step, std::string* written) {
  const int64_t done = step + 1;
  if (rank_ == 0) *written = CheckpointPath(config_.checkpoint_dir, done);
  return paths_->Checkpoint(
      done, done == num_steps_,
      checkpoint_dir_.has_value() ? &*checkpoint_dir_ : nullptr,
      CheckpointFileName(done));
}

}  // namespace gradsync
