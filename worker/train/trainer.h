// Trainer: one rank's step loop of a data-parallel job. Per step: the
// rank's share of global batch `step` (batcher.h) in micro-batches; forward
// and backward, the last micro-batch handing ready gradient ranges to the
// sync strategy as backward produces them (DDP's no_sync and bucketing);
// FinishStep (ring: the bucket all-reduces; PS: the shards' replies); the
// optimizer step (locally on the ring, at the shards on the PS); metrics
// to the sink (gradsync::StepMetrics), evaluation when asked. After the
// last step every rank evaluates the test set (sharded, counts summed).
// A resumed job (config.resume_from) continues the run that wrote the
// checkpoint exactly.
//
// The sync path (ring over TCP, ring over NCCL on device buffers, or the
// parameter server) can change between steps: the spec's mode, scripted
// switches, and runtime switches all take effect for every rank at the
// same step, moving the parameters and optimizer state with them
// (sync_path.h). The full protocol, and what each step metric
// means, are in docs/parameter-server.md ("Switch protocol").
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
#include "security/rooted_dir.h"
#include "worker/data/batcher.h"
#include "worker/train/device_ring.h"
#include "worker/train/sync_path.h"
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
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Trainer>> Create(
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
  SyncPath path() const { return paths_->path(); }

 private:
  // Indices of the scalars each step sums across ranks (FinishStep).
  enum StepScalar { kLossSum = 0, kNumStepScalars };

  Trainer(const TrainerConfig& config, const TrainData& data,
          Communicator* comm, MetricsSink sink,
          const std::atomic<bool>* cancelled, SwitchSource switches,
          DeviceCommFactory device_comms);

  [[nodiscard]] absl::Status Init();
  // Init's part for config.resume_from: loads the checkpoint's parameters
  // and optimizer state and sets first_step_.
  [[nodiscard]] absl::Status Resume();
  // One step; fills `metrics`. On error sets operation_.
  [[nodiscard]] absl::Status Step(int64_t step, StepMetrics* metrics);
  // Test loss and accuracy, sharded over the ranks and summed.
  [[nodiscard]] absl::Status Evaluate(double* loss, double* accuracy);
  bool Cancelled() const;

  // Init's part for config.checkpoint_on_every_host: sets
  // writes_checkpoints_ on the lowest rank of each host (and on rank 0).
  [[nodiscard]] absl::Status ChooseCheckpointWriters();
  // The checkpoint after `step`, written by the writing ranks (PS mode:
  // fetched from the shards); rank 0 sets *written to the file's path.
  [[nodiscard]] absl::Status Checkpoint(int64_t step, std::string* written);
  // Records the failure of `step` during operation_ and returns the
  // prefixed status (CANCELLED instead when cancellation caused it).
  [[nodiscard]] absl::Status Fail(int64_t step, const absl::Status& cause);

  const TrainerConfig config_;
  const TrainData data_;
  Communicator* const comm_;
  const MetricsSink sink_;
  const std::atomic<bool>* const cancelled_;
  const int rank_;
  const int world_;

  SwitchSource switches_;           // moved into paths_ by Init
  DeviceCommFactory device_comms_;  // moved into paths_ by Init

  std::unique_ptr<TrainModel> model_;
  // Which sync is live, the switches, and the optimizer state's place.
  std::unique_ptr<SyncPathController> paths_;
  std::optional<Batcher> batcher_;
  int64_t num_steps_ = 0;
  int64_t first_step_ = 0;
  // This rank writes checkpoints: rank 0, and with checkpoint_on_every_host
  // the lowest rank of each host.
  bool writes_checkpoints_ = false;
  // Where it writes them: config.checkpoint_dir, opened by Init (after
  // Resume) beneath its root for the whole run (security/rooted_dir.h; a link
  // below the root fails Create with FAILED_PRECONDITION naming
  // checkpoint.directory). Empty on the other ranks.
  std::optional<RootedDir> checkpoint_dir_;
  bool ran_ = false;

  // The operation in progress, for failure reports.
  std::string operation_;
  TrainFailure failure_;
  Batch batch_;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_TRAIN_TRAINER_H_
