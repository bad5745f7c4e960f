// What the coordinator feeds `--mode auto`'s policy (study/auto_mode_policy.h)
// and what it reports of it: the ranks' step metrics gathered into finished
// steps (AutoStepCollector), and each of the policy's decisions as the
// ModeDecision that `gradsync status` shows (ModeDecisionOf). The policy
// itself knows no protos; job_auto.h runs it and asks for its switches.
//
// Not thread-safe (a part of Job, under the coordinator's lock).
#ifndef GRADSYNC_SERVER_COORDINATOR_AUTO_MODE_IO_H_
#define GRADSYNC_SERVER_COORDINATOR_AUTO_MODE_IO_H_

#include <cstdint>
#include <map>
#include <vector>

#include "proto/coordinator.pb.h"
#include "study/auto_mode_policy.h"

namespace gradsync {

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

// `decision` as JobStatus.mode_decisions reports it.
ModeDecision ModeDecisionOf(const AutoDecision& decision);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_AUTO_MODE_IO_H_
