// Trainer: one rank's step loop of a data-parallel job (DESIGN.md, "Step
// loop"). Per step:
//   1. batch: rank r's share of global batch `step` (batcher.h), split into
//      grad_accumulation_steps contiguous micro-batches; the union over
//      ranks and micro-batches is exactly the 1-rank global batch;
//   2. forward/backward of each micro-batch with loss_normalizer = B (the
//      global batch), accumulating gradients; only the LAST micro-batch
//      reports ready ranges to the sync strategy (DDP's no_sync), whose
//      bucket all-reduces then overlap the rest of that backward;
//   3. FinishStep: wait for the buckets, and sum the loss numerator
//      across ranks in the same breath;
//   4. the optimizer step, locally on every rank (ring);
//   5. metrics to the sink (gradsync::StepMetrics), evaluation every
//      eval_every_steps if asked.
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
//   samples     examples in this rank's share;
//   param_hash  HashParameters of the parameters after the step, equal on
//               every rank of a synchronous job;
//   test_accuracy on evaluation steps only.
//
// Cancellation: `cancelled` is polled before every step and micro-batch;
// to unblock a rank stuck in a collective, also Abort its communicator (the
// daemon does both). A cancelled run returns CANCELLED.
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

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "collectives/communicator.h"
#include "common/optimizer.h"
#include "proto/coordinator.pb.h"
#include "worker/data/batcher.h"
#include "worker/train/sync_strategy.h"
#include "worker/train/train_config.h"
#include "worker/train/train_data.h"
#include "worker/train/train_model.h"

namespace gradsync {

// Receives each step's metrics on the rank's thread; must return quickly
// (queue them).
using MetricsSink = std::function<void(const StepMetrics&)>;

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
      MetricsSink sink, const std::atomic<bool>* cancelled);

  ~Trainer();

  // Runs every step; may be called once.
  [[nodiscard]] absl::StatusOr<TrainResult> Run();

  // Valid after Run returned an error.
  const TrainFailure& failure() const { return failure_; }

  int rank() const { return rank_; }
  int world_size() const { return world_; }
  int64_t num_steps() const { return num_steps_; }
  absl::Span<const float> params() const { return model_->params(); }

 private:
  Trainer(const TrainerConfig& config, const TrainData& data,
          Communicator* comm, MetricsSink sink,
          const std::atomic<bool>* cancelled);

  absl::Status Init();
  // One step; fills `metrics`. On error sets operation_.
  absl::Status Step(int64_t step, StepMetrics* metrics);
  // Test loss and accuracy, sharded over the ranks and summed.
  absl::Status Evaluate(double* loss, double* accuracy);
  bool Cancelled() const;
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

  std::unique_ptr<TrainModel> model_;
  std::unique_ptr<GradientSync> sync_;
  std::optional<Optimizer> optimizer_;
  std::optional<Batcher> batcher_;
  int64_t num_steps_ = 0;
  bool ran_ = false;

  // The operation in progress, for failure reports.
  std::string operation_;
  TrainFailure failure_;
  Batch batch_;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_TRAIN_TRAINER_H_
