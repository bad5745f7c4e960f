// AutoModePolicy: the decisions of a job submitted with `--mode auto`. It
// measures both synchronisation paths for a few steps each, settles on the
// faster one, and measures again every `recheck_every` steps or as soon as
// the settled path's step time moves by more than `change_threshold`. It
// only decides *when* to ask for a switch; the switch itself is the
// ordinary runtime switch (CoordinatorService::SwitchJob), so the state
// moves exactly as for `gradsync switch`.
//
//   measure(current) --probe_steps--> ask for the other --its steps-->
//   measure(other) --probe_steps--> decide: faster one
//        ^                               |  (ask for it back if it was
//        |                               v   the first)
//        +---- recheck / step time moved -- settled
//
// Steps right after a mode takes effect (and the first steps of the job)
// are left out (`settle_steps`): they carry the switch's own cost and the
// warm-up. The figure per step is the slowest rank's step time (what the
// job waits for); the model's predicted sync time of each path, when the
// coordinator knows the links, rides along in each decision's reason,
// with the PS's transport: the model predicts the links' time, which the
// tensor plane reaches and gRPC streams may not on a host short of CPU, so
// a PS on gRPC measured well above its prediction is named as such.
//
// Its settings (AutoModeConfig, from JobSpec.auto_mode) are the spec's:
// jobspec/auto_mode_spec.h.
//
// Not thread-safe (a part of Job, under the coordinator's lock). Pure: no
// clock, no I/O.
#ifndef GRADSYNC_SERVER_COORDINATOR_AUTO_MODE_H_
#define GRADSYNC_SERVER_COORDINATOR_AUTO_MODE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jobspec/auto_mode_spec.h"
#include "proto/coordinator.pb.h"
#include "proto/job.pb.h"

namespace gradsync {

// One step every rank has finished.
struct AutoStep {
  int64_t step = 0;
  SyncMode mode = SYNC_MODE_RING;
  double step_s = 0;       // the slowest rank's
  double sync_s = 0;       // the slowest rank's sync_busy_s
  int64_t sync_bytes = 0;  // S, the gradient's bytes
  // PS steps: how the tensors travelled (StepMetrics.ps_transport; "mixed"
  // when the ranks differ); "" on the ring or from older workers.
  std::string ps_transport;
};

// Gathers the ranks' step metrics (in any order) into finished steps.
class AutoStepCollector {
 public:
  explicit AutoStepCollector(int world_size) : world_size_(world_size) {}
  void Add(const StepMetrics& metrics);
  // The steps every rank has reported since the last call, ascending.
  std::vector<AutoStep> TakeFinished();

 private:
  struct Partial {
    int ranks = 0;
    AutoStep step;
  };
  const int world_size_;
  std::map<int64_t, Partial> partial_;
};

// The model's predicted sync time of each path, when the links are known.
struct AutoModelView {
  bool known = false;
  double ring_s = 0;
  double ps_s = 0;
};

// A switch the policy asks for.
struct AutoSwitch {
  SyncMode mode = SYNC_MODE_RING;
  std::string reason;
};

class AutoModePolicy {
 public:
  explicit AutoModePolicy(AutoModeConfig config);

  // Feeds the next finished step (steps at or below the last one fed are
  // ignored). Returns the switch to ask for now, if any. `model` is the
  // model's view at this moment.
  std::optional<AutoSwitch> Observe(const AutoStep& step,
                                    const AutoModelView& model);

  // Every decision so far (measurements, choices, re-measurements), oldest
  // first.
  const std::vector<ModeDecision>& decisions() const { return decisions_; }

 private:
  enum class Phase {
    kMeasuringFirst,  // the mode the job runs in now
    kAwaitingSecond,  // asked for the other; its steps have not come
    kMeasuringSecond,
    kAwaitingChoice,  // asked to go back to the first
    kSettled,
  };

  // Steps of `mode` fed since it took effect, minus the settle steps.
  bool Settled(const AutoStep& step);
  std::optional<AutoSwitch> Decide(const AutoStep& step,
                                   const AutoModelView& model);
  std::optional<AutoSwitch> Remeasure(const AutoStep& step, std::string why);
  void Record(int64_t step, SyncMode chosen, std::string reason,
              const AutoModelView& model);

  const AutoModeConfig config_;
  Phase phase_ = Phase::kMeasuringFirst;
  int64_t last_step_ = -1;
  SyncMode mode_ = SYNC_MODE_UNSPECIFIED;  // of the last step fed
  int64_t mode_since_ = 0;                 // steps fed in mode_
  SyncMode first_ = SYNC_MODE_RING;
  std::vector<double> first_times_;
  std::vector<double> second_times_;
  SyncMode settled_ = SYNC_MODE_RING;
  double baseline_s_ = 0;
  int64_t settled_at_ = 0;
  std::vector<double> window_;         // settled: the newest step times
  std::string ps_transport_;           // of the newest PS step fed
  std::vector<double> ps_sync_times_;  // the newest PS steps' sync_s
  std::vector<ModeDecision> decisions_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_AUTO_MODE_H_
