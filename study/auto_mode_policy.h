// AutoModePolicy: the decisions of a job submitted with `--mode auto`. It
// measures both synchronisation paths for a few steps each, settles on the
// faster one, and measures again every `recheck_every` steps or as soon as
// the settled path's step time moves by more than `change_threshold`. It
// only decides *when* to ask for a switch; the switch itself is the
// coordinator's ordinary runtime switch (server/coordinator/job_auto.h
// feeds the policy and asks for what it wants, as `gradsync switch` does).
//
//   measure(current) --probe_steps--> ask for the other --its steps-->
//   measure(other) --probe_steps--> decide: faster one
//        ^                               |  (ask for it back if it was
//        |                               v   the first)
//        +---- recheck / step time moved -- settled
//
// Steps right after a path takes effect (and the first steps of the job)
// are left out (`settle_steps`): they carry the switch's own cost and the
// warm-up. The figure per step is the slowest rank's step time (what the
// job waits for); the alpha-beta model's predicted sync time of each path
// (study/alpha_beta/sync_model.h), when the coordinator knows the links,
// rides along in each decision's reason, with the PS's transport: the
// model predicts the links' time, which the tensor plane reaches and gRPC
// streams may not on a host short of CPU, so a PS on gRPC measured well
// above its prediction is named as such.
//
// Its settings (AutoModeConfig) come from the job's spec
// (JobSpec.auto_mode, read by jobspec/auto_mode_spec.h).
//
// Not thread-safe (the coordinator holds it under its lock). Pure: no
// clock, no I/O, no protos.
#ifndef GRADSYNC_STUDY_AUTO_MODE_POLICY_H_
#define GRADSYNC_STUDY_AUTO_MODE_POLICY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "study/sync_path.h"

namespace gradsync {

// The policy's settings, with their defaults.
struct AutoModeConfig {
  int settle_steps = 2;
  int probe_steps = 5;
  int64_t recheck_every = 200;  // 0: never re-measure on a schedule
  double change_threshold = 0.25;
};

// One step every rank has finished.
struct AutoStep {
  int64_t step = 0;
  SyncPath mode = SyncPath::kRing;
  double step_s = 0;       // the slowest rank's
  double sync_s = 0;       // the slowest rank's sync_busy_s
  int64_t sync_bytes = 0;  // S, the gradient's bytes
  // PS steps: how the tensors travelled ("plane", "grpc"; "mixed" when the
  // ranks differ); "" on the ring or from older workers.
  std::string ps_transport;
};

// The model's predicted sync time of each path, when the links are known.
struct AutoModelView {
  bool known = false;
  double ring_s = 0;
  double ps_s = 0;
};

// A switch the policy asks for.
struct AutoSwitch {
  SyncPath mode = SyncPath::kRing;
  std::string reason;
};

// One decision (a measurement, a choice or a re-measurement); the
// coordinator reports it as a ModeDecision (proto/coordinator.proto).
struct AutoDecision {
  int64_t step = 0;                   // the last step it saw
  SyncPath chosen = SyncPath::kRing;  // the path asked for, or kept
  std::string reason;                 // measured times and the model's
  double ring_step_s = 0;             // median slowest-rank step time; 0: none
  double ps_step_s = 0;
  double ring_model_s = 0;  // predicted sync time; 0: links unknown
  double ps_model_s = 0;
  bool switch_requested = false;
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
  const std::vector<AutoDecision>& decisions() const { return decisions_; }

 private:
  enum class Phase {
    kMeasuringFirst,  // the path the job runs on now
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
  void Record(int64_t step, SyncPath chosen, std::string reason,
              const AutoModelView& model);

  const AutoModeConfig config_;
  Phase phase_ = Phase::kMeasuringFirst;
  int64_t last_step_ = -1;
  std::optional<SyncPath> mode_;  // of the last step fed; none before
  int64_t mode_since_ = 0;        // steps fed in mode_
  SyncPath first_ = SyncPath::kRing;
  std::vector<double> first_times_;
  std::vector<double> second_times_;
  SyncPath settled_ = SyncPath::kRing;
  double baseline_s_ = 0;
  int64_t settled_at_ = 0;
  std::vector<double> window_;         // settled: the newest step times
  std::string ps_transport_;           // of the newest PS step fed
  std::vector<double> ps_sync_times_;  // the newest PS steps' sync_s
  std::vector<AutoDecision> decisions_;
};

}  // namespace gradsync

#endif  // GRADSYNC_STUDY_AUTO_MODE_POLICY_H_
