// ModeHistory: which sync mode (ring or PS) a job ran each step in, read
// from its lead rank's (rank 0's) step metrics, and the switches between
// them (JobStatus.mode and JobStatus.switches).
//
// Metrics may arrive out of step order or in batches: the history is kept
// by step, so the switches are those between consecutive recorded steps
// whatever the arrival order. A switch is recorded at the first step in
// the new mode, with that step's StepMetrics.switch_epoch (0: a scripted
// switch from JobSpec.switches).
//
//   ModeHistory modes(SYNC_MODE_RING);
//   modes.Record(/*step=*/0, SYNC_MODE_RING, 0);
//   modes.Record(/*step=*/1, SYNC_MODE_PS, /*epoch=*/1);
//   modes.current();   // SYNC_MODE_PS
//   modes.Switches();  // {step 1, RING -> PS, epoch 1}
//
// Not thread-safe (a part of Job).
#ifndef GRADSYNC_SERVER_COORDINATOR_MODE_HISTORY_H_
#define GRADSYNC_SERVER_COORDINATOR_MODE_HISTORY_H_

#include <cstdint>
#include <map>
#include <vector>

#include "proto/coordinator.pb.h"

namespace gradsync {

class ModeHistory {
 public:
  // `initial`: the mode before any step is recorded (the spec's mode);
  // UNSPECIFIED reads as RING, here and in Record.
  explicit ModeHistory(SyncMode initial);

  // Records the mode of `step` (and the seconds spent switching to it,
  // StepMetrics.switch_s); a step recorded again replaces the earlier
  // record. O(log steps).
  void Record(int64_t step, SyncMode mode, int64_t epoch, double switch_s = 0);

  // The mode of the highest step recorded; the initial mode before any.
  SyncMode current() const;

  // The switches in step order.
  std::vector<SwitchRecord> Switches() const;

 private:
  struct StepMode {
    SyncMode mode = SYNC_MODE_RING;
    int64_t epoch = 0;
    double switch_s = 0;
  };
  using Steps = std::map<int64_t, StepMode>;

  // Recomputes whether the step at `it` starts a switch (compared with the
  // step before it).
  void Refresh(Steps::const_iterator it);

  SyncMode initial_;
  Steps steps_;
  std::map<int64_t, SwitchRecord> switches_;  // by step
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_MODE_HISTORY_H_
