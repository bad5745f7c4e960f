// SyncPathController: which of a rank's gradient syncs is live (the TCP
// ring, the NCCL ring on device buffers, or the parameter server), the
// switch requests the ranks agreed on and not yet acted on, and the
// switches themselves. The Trainer asks it, before each step, to take that
// step's path, and after each step's sync, to note the decision the sync
// returned; everything that depends on where the parameters and the
// optimizer state live (the optimizer step, the parameter hash on the
// device, the state of a checkpoint) goes through it.
//
// Paths and switches (the protocol is in docs/parameter-server.md, "Switch
// protocol", and proto/coordinator.proto, "Switching a running job"): the
// job's communicator stays connected the whole run, so a switch reconnects
// nothing. Before step b the rank takes the path step b uses: the spec's
// mode at the first step, a scripted switch at b, or a runtime decision
// for b that the previous step's sync returned (it wins over a script at
// the same step). Entering the PS at b: rank r creates shard k for every
// k = r (mod N) and seeds it from its parameters and optimizer state
// (identical on every rank), then a barrier; leaving the PS at b: every
// rank fetches the shards' state for step b (async and SSP: after every
// rank's pushes before b are applied), a barrier, then rank 0 releases the
// shards. The NCCL ring starts at the first step or on leaving the PS, and
// ends on entering it (after moving the state to the host for the shards).
//
// Errors: what the path's operations return; `operation` (given at
// construction) names the one in progress for the Trainer's failure
// reports. Threading: the rank's thread, except Abort (any thread).
#ifndef GRADSYNC_WORKER_TRAIN_SYNC_PATH_H_
#define GRADSYNC_WORKER_TRAIN_SYNC_PATH_H_

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
#include "absl/time/time.h"
#include "collectives/communicator.h"
#include "common/model_init/parameter_state.h"
#include "common/optimizer.h"
#include "proto/coordinator.pb.h"
#include "security/rooted_dir.h"
#include "worker/train/device_ring.h"
#include "worker/train/ps_sync.h"
#include "worker/train/sync_strategy.h"
#include "worker/train/train_config.h"
#include "worker/train/train_model.h"

namespace gradsync {

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

class SyncPathController {
 public:
  // The ring path over `comm` with a fresh host optimizer; each step's
  // sync sums `step_scalars` scalars across the ranks. `config`, `comm`,
  // `model` and `operation` must outlive the controller.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<SyncPathController>>
  Create(const TrainerConfig& config, Communicator* comm, TrainModel* model,
         SwitchSource switches, DeviceCommFactory device_comms,
         int step_scalars, std::string* operation);

  SyncPathController(const SyncPathController&) = delete;
  SyncPathController& operator=(const SyncPathController&) = delete;
  ~SyncPathController();

  // The live path's sync.
  GradientSync& sync() { return *sync_; }
  SyncPath path() const { return path_; }
  // On the PS path, how its steps' tensors travel (PsClient::transport);
  // "" on the ring. The trainer's thread.
  std::string PsTransport() const;
  // The newest runtime request this rank has heard of.
  int64_t HeardEpoch() const;

  // Takes the path of step `step` (`first_step`: the run's first, where the
  // spec's mode and the scripted switches up to it apply). Sets *epoch to
  // the runtime request acted on (0: none).
  [[nodiscard]] absl::Status TakePathOf(int64_t step, int64_t first_step,
                                        int64_t* epoch);
  // Notes the decision step `step`'s sync returned (stats.switch_*).
  [[nodiscard]] absl::Status NoteDecision(int64_t step, const SyncStats& stats);

  // The optimizer step, where the path runs it on the rank (the ring:
  // on the host or the device).
  [[nodiscard]] absl::Status OptimizerStep();
  // True while the parameters live on the device (the NCCL ring).
  bool on_device() const { return device_ring_ != nullptr; }
  // The device ring's parameter hash and host copy (on_device() only).
  [[nodiscard]] absl::StatusOr<uint64_t> DeviceHash();
  [[nodiscard]] absl::Status DownloadParams();
  // After the last step in PS mode: every rank takes the final parameters
  // and optimizer state of step `num_steps` from the shards, which rank 0
  // releases.
  [[nodiscard]] absl::Status FinishPs(int64_t num_steps);

  // The host optimizer's state (a resumed checkpoint's, before the run).
  [[nodiscard]] absl::Status ImportOptimizerState(const OptimizerState& state);
  OptimizerState ExportOptimizerState() const;
  // Writes the checkpoint of `done` steps to file `name` in `dir`, the
  // job's checkpoint directory, where this rank writes (`dir` not null; see
  // WriteCheckpoint); on the PS path every rank takes part (a barrier keeps
  // the next step's pushes out while the writers fetch the shards' state).
  // `last`: the run's last step (the device ring downloaded already).
  [[nodiscard]] absl::Status Checkpoint(int64_t done, bool last,
                                        const RootedDir* dir,
                                        const std::string& name);

  // Makes the live path's calls fail soon with `reason` (any thread).
  void Abort(const absl::Status& reason);
  // After a failure: aborts the live sync and the ring (so that the peers
  // waiting in a collective for this rank fail at once, naming it).
  void AbortAfterFailure(const absl::Status& cause);

 private:
  // A runtime switch the ranks agreed on, not yet acted on.
  struct Decision {
    int64_t epoch = 0;
    int64_t step = 0;
  };

  SyncPathController(const TrainerConfig& config, Communicator* comm,
                     TrainModel* model, SwitchSource switches,
                     DeviceCommFactory device_comms, int step_scalars,
                     std::string* operation, Optimizer optimizer);

  [[nodiscard]] absl::Status EnterPs(int64_t step);
  // Rank r's part of entering the PS at `step`: creates shards r, r + N,
  // ... through `client` and seeds them with the parameters and
  // `optimizer_state` (identical on every rank).
  [[nodiscard]] absl::Status SeedShards(int64_t step, int num_shards,
                                        OptimizerState optimizer_state,
                                        PsClient* client);
  // `resume`: the ring path runs the next steps (false after the last
  // step: only the final parameters and optimizer state come back).
  [[nodiscard]] absl::Status LeavePs(int64_t step, bool resume);
  // The NCCL ring (config.ring_backend kNccl) from before step `step`,
  // continuing from `state` (null: a fresh optimizer); and its end.
  [[nodiscard]] absl::Status StartDeviceRing(int64_t step,
                                             const OptimizerState* state);
  void StopDeviceRing();
  // The shards' parameters and optimizer state of `step` (drained).
  [[nodiscard]] absl::StatusOr<ParameterState> FetchPsState(int64_t step);

  const TrainerConfig& config_;
  Communicator* const comm_;
  TrainModel* const model_;
  const SwitchSource switches_;
  const DeviceCommFactory device_comms_;
  const int step_scalars_;
  std::string* const operation_;
  const int rank_;
  const int world_;

  // The ring strategy lives the whole run; the PS one while in PS mode.
  std::unique_ptr<GradientSync> ring_;
  // Set and reset by the rank's thread under abort_mu_, so that Abort from
  // another thread reaches the PS calls of the moment.
  std::unique_ptr<PsSync> ps_;
  // The NCCL ring while the device ring path runs (set and reset like
  // ps_): the model is device-resident then, and optimizer_ is idle.
  std::unique_ptr<DeviceRing> device_ring_;
  absl::Mutex abort_mu_;
  absl::Status aborted_ ABSL_GUARDED_BY(abort_mu_);
  // EnterPs's client while it creates and seeds the shards (before a
  // PsSync owns it), so that Abort cancels the seeding too.
  PsClient* seeding_ ABSL_GUARDED_BY(abort_mu_) = nullptr;
  GradientSync* sync_ = nullptr;  // the live one
  SyncPath path_ = SyncPath::kRing;
  std::vector<std::string> ps_addresses_;
  // The newest runtime decision seen, and the one still to act on.
  int64_t decided_epoch_ = 0;
  std::optional<Decision> pending_;
  // The ring path's optimizer on the host.
  Optimizer optimizer_;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_TRAIN_SYNC_PATH_H_
