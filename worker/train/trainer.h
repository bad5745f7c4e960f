// Trainer: one rank's step loop of a data-parallel job (DESIGN.md, "Step
// loop"). Per step:
//   1. batch: rank r's share of global batch `step` (batcher.h), split into
//      grad_accumulation_steps contiguous micro-batches; the union over
//      ranks and micro-batches is exactly the 1-rank global batch;
//   2. forward/backward of each micro-batch with loss_normalizer = B (the
//      global batch), accumulating gradients; only the LAST micro-batch
//      reports ready ranges to the sync strategy (DDP's no_sync), whose
//      bucket all-reduces then overlap the rest of that backward;
//   3. FinishStep: wait for the buckets (ring) or the shards' replies
//      (PS), and sum the loss numerator across ranks in the same breath;
//   4. the optimizer step, locally on every rank (ring; on PS the shards
//      ran it and the reply brought the new parameters);
//   5. metrics to the sink (gradsync::StepMetrics), evaluation every
//      eval_every_steps if asked.
// A resumed job (config.resume_from, a checkpoint.h file) starts at the
// checkpoint's step with its parameters and optimizer state on every rank,
// in the path the spec gives that step (the mode, then the scripted
// switches up to it); the data order, the evaluations and the checkpoints
// go by the step number, so it continues the run that wrote the file
// exactly.
// Paths and switches (trainer_switch.cc; the protocol is in
// proto/coordinator.proto, "Switching a running job"): the job's
// communicator stays connected the whole run, so a switch reconnects
// nothing. Before step b the trainer takes the path that step b uses: the
// spec's mode at b = 0, a scripted switch at b, or a runtime decision for
// b that the previous step's synchronisation returned (it wins over a
// script at the same step). Entering PS at step b: rank r creates shard k
// for every k = r (mod N) and seeds it from its parameters and optimizer
// state (identical on every rank), then a barrier; leaving PS at b: every
// rank fetches the shards' parameters and optimizer state for step b
// (async and SSP: after every rank's pushes before b are applied), a
// barrier, then rank 0 releases the shards. A job that ends in PS mode
// fetches the final parameters the same way, so every rank evaluates and
// hashes the same model.
//
// The NCCL ring (config.ring_backend kNccl, an mlp on a CUDA device on
// every rank): the ring path then runs on a DeviceRing (device_ring.h) with
// parameters, gradients and optimizer state in device memory, all-reducing
// buckets with NCCL as backward produces them; `device_comms` builds its
// NCCL communicator each time the ring path starts (step 0 or a switch
// from the PS), and a switch to the PS destroys it after moving the
// parameters and optimizer state to the host for the shards. The step's
// scalars still travel over `comm` (TCP), which stays up all job.
//
// After the last step the test set is evaluated (sharded over the ranks,
// counts summed), so every rank returns the same test accuracy and loss.
//
// Metrics of a step, per rank (times in seconds, the step's wall time
// split three ways):
//   loss        mean cross-entropy over the GLOBAL batch (equal on every
//               rank, and equal to a 1-rank run's loss up to rounding);
//   compute_s   data gathering, forward/backward, optimizer;
//   comm_s      time blocked waiting for communication after backward
//               (exposed, not overlapped; includes waiting for slower
//               peers, which a ring cannot tell apart);
//   idle_s      the rest of the step: hashing and bookkeeping;
//   step_s      the whole step (evaluation excluded);
//   bytes_*     payload moved by this rank (ring_sync.h);
//   sync_bytes, sync_busy_s, algbw_gbps, busbw_gbps
//               the gradient's synchronisation in nccl-tests' terms
//               (SyncStats in sync_strategy.h, common/sync_bandwidth.h);
//   samples     examples in this rank's share;
//   param_hash  HashParameters of the parameters after the step, equal on
//               every rank of a synchronous job;
//   test_accuracy on evaluation steps only.
//
// Cancellation: `cancelled` is polled before every step and micro-batch;
// to unblock a rank stuck in a collective or a PS call, also call Abort
// (the daemon does both). A cancelled run returns CANCELLED.
//
// Errors: Create returns INVALID_ARGUMENT for a bad config, a null
// communicator, or a dataset that does not fit the model; Run returns the
// first failure as "rank R, step S, <operation>: <cause>" with the cause's
// code (DEADLINE_EXCEEDED / UNAVAILABLE / ABORTED from communication,
// naming the peer rank when the backend knows it), and failure() gives the
// parts separately for ReportRank.
// Threading: Create and Run on the rank's thread; `cancelled` may be set
// from any thread. The communicator and the data must outlive the Trainer.
//
// Example:
//   ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer,
//                    Trainer::Create(config, data, comm.get(), sink,
//                                    &cancelled));
//   ASSIGN_OR_RETURN(TrainResult result, trainer->Run());
#ifndef GRADSYNC_WORKER_TRAIN_TRAINER_H_
#define GRADSYNC_WORKER_TRAIN_TRAINER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "collectives/communicator.h"
#include "common/model_init/parameter_state.h"
#include "common/optimizer.h"
#include "proto/coordinator.pb.h"
#include "worker/data/batcher.h"
#include "worker/train/device_ring.h"
#include "worker/train/ps_sync.h"
#include "worker/train/sync_strategy.h"
#include "worker/train/train_config.h"
#include "worker/train/train_data.h"
#include "worker/train/train_model.h"

namespace gradsync {

// Receives each step's metrics on the rank's thread; must return quickly
// (queue them).
using MetricsSink = std::function<void(const StepMetrics&)>;

// Where runtime switch requests come from (the daemon: the coordinator's
// heartbeat notices and its job store). Unset: scripted switches only.
struct SwitchSource {
  // The newest request epoch this worker has heard of; read every step.
  const std::atomic<int64_t>* heard_epoch = nullptr;
  // The directive of `epoch` (the job-store key "switch/<epoch>").
  std::function<absl::StatusOr<SwitchDirective>(int64_t epoch,
                                                absl::Time deadline)>
      directive;
};

struct TrainResult {
  int64_t steps = 0;        // steps completed
  double final_loss = 0.0;  // global-batch loss of the last step
  bool evaluated = false;   // false for the synthetic model
  double test_accuracy = 0.0;
  double test_loss = 0.0;
  uint64_t param_hash = 0;  // after the last step
};

// Where a failed Run stopped.
struct TrainFailure {
  int64_t step = 0;       // the step that failed (0-based)
  std::string operation;  // e.g. "gradient all-reduce", "forward/backward"
  absl::Status cause;     // the error, without the rank/step prefix
};

class Trainer {
 public:
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(
      const TrainerConfig& config, const TrainData& data, Communicator* comm,
      MetricsSink sink, const std::atomic<bool>* cancelled,
      SwitchSource switches = SwitchSource(),
      DeviceCommFactory device_comms = nullptr);

  ~Trainer();

  // Runs every step; may be called once.
  [[nodiscard]] absl::StatusOr<TrainResult> Run();

  // Makes the run fail soon with `reason`: aborts the communicator and the
  // PS calls in flight (a rank may wait in a shard for a dead peer's push).
  // Thread-safe; the daemon calls it on cancellation.
  void Abort(const absl::Status& reason);

  // Valid after Run returned an error.
  const TrainFailure& failure() const { return failure_; }

  int rank() const { return rank_; }
  int world_size() const { return world_; }
  int64_t num_steps() const { return num_steps_; }
  // The step Run starts at: 0, or the steps a resumed checkpoint had done.
  int64_t first_step() const { return first_step_; }
  absl::Span<const float> params() const { return model_->params(); }
  SyncPath path() const { return path_; }

 private:
  // Indices of the scalars each step sums across ranks (FinishStep).
  enum StepScalar { kLossSum = 0, kNumStepScalars };

  // A runtime switch the ranks agreed on, not yet acted on.
  struct Decision {
    int64_t epoch = 0;
    int64_t step = 0;
  };

  Trainer(const TrainerConfig& config, const TrainData& data,
          Communicator* comm, MetricsSink sink,
          const std::atomic<bool>* cancelled, SwitchSource switches,
          DeviceCommFactory device_comms);

  absl::Status Init();
  // Init's part for config.resume_from: loads the checkpoint's parameters
  // and optimizer state and sets first_step_.
  absl::Status Resume();
  // One step; fills `metrics`. On error sets operation_.
  absl::Status Step(int64_t step, StepMetrics* metrics);
  // Test loss and accuracy, sharded over the ranks and summed.
  absl::Status Evaluate(double* loss, double* accuracy);
  bool Cancelled() const;

  // trainer_switch.cc. Takes the path of step `step`; sets *epoch to the
  // runtime request acted on (0: none).
  absl::Status TakePathOf(int64_t step, int64_t* epoch);
  absl::Status EnterPs(int64_t step);
  // Rank r's part of entering the PS at `step`: creates shards r, r + N,
  // ... through `client` and seeds them with the parameters and
  // `optimizer_state` (identical on every rank).
  absl::Status SeedShards(int64_t step, int num_shards,
                          OptimizerState optimizer_state, PsClient* client);
  // `resume`: the ring path runs the next steps (false after the last
  // step: only the final parameters and optimizer state come back).
  absl::Status LeavePs(int64_t step, bool resume);
  // The NCCL ring (config_.ring_backend kNccl) from before step `step`,
  // continuing from `state` (null: a fresh optimizer); and its end.
  absl::Status StartDeviceRing(int64_t step, const OptimizerState* state);
  void StopDeviceRing();
  // Notes the decision a step's synchronisation returned.
  absl::Status NoteDecision(int64_t step, const SyncStats& stats);
  // The shards' parameters and optimizer state of `step` (drained).
  absl::StatusOr<ParameterState> FetchPsState(int64_t step);
  // Last step in PS mode: every rank takes the final parameters.
  absl::Status FinishPs();
  // Init's part for config.checkpoint_on_every_host: sets
  // writes_checkpoints_ on the lowest rank of each host (and on rank 0).
  absl::Status ChooseCheckpointWriters();
  // The checkpoint after `step`, written by the writing ranks (PS mode:
  // fetched from the shards); rank 0 sets *written to the file's path.
  absl::Status Checkpoint(int64_t step, std::string* written);
  int64_t HeardEpoch() const;
  // Records the failure of `step` during operation_ and returns the
  // prefixed status (CANCELLED instead when cancellation caused it).
  absl::Status Fail(int64_t step, const absl::Status& cause);

  const TrainerConfig config_;
  const TrainData data_;
  Communicator* const comm_;
  const MetricsSink sink_;
  const std::atomic<bool>* const cancelled_;
  const int rank_;
  const int world_;

  const SwitchSource switches_;
  const DeviceCommFactory device_comms_;

  std::unique_ptr<TrainModel> model_;
  // The ring strategy lives the whole run; the PS one while in PS mode.
  std::unique_ptr<GradientSync> ring_;
  // Set and reset by the rank's thread under abort_mu_, so that Abort from
  // another thread reaches the PS calls of the moment.
  std::unique_ptr<PsSync> ps_;
  // The NCCL ring while the device ring path runs (set and reset like ps_):
  // the model is device-resident then, and optimizer_ is idle.
  std::unique_ptr<DeviceRing> device_ring_;
  absl::Mutex abort_mu_;
  absl::Status aborted_ ABSL_GUARDED_BY(abort_mu_);
  // EnterPs's client while it creates and seeds the shards (before a
  // PsSync owns it), so that Abort cancels the seeding too.
  PsClient* seeding_ ABSL_GUARDED_BY(abort_mu_) = nullptr;
  GradientSync* sync_ = nullptr;  // the current one
  SyncPath path_ = SyncPath::kRing;
  std::vector<std::string> ps_addresses_;
  // The newest runtime decision seen, and the one still to act on.
  int64_t decided_epoch_ = 0;
  std::optional<Decision> pending_;
  std::optional<Optimizer> optimizer_;
  std::optional<Batcher> batcher_;
  int64_t num_steps_ = 0;
  int64_t first_step_ = 0;
  // This rank writes checkpoints: rank 0, and with checkpoint_on_every_host
  // the lowest rank of each host.
  bool writes_checkpoints_ = false;
  bool ran_ = false;

  // The operation in progress, for failure reports.
  std::string operation_;
  TrainFailure failure_;
  Batch batch_;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_TRAIN_TRAINER_H_
