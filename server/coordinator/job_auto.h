// `--mode auto` on the coordinator's side (the policy, its decisions, is
// the study's: study/auto_mode_policy.h; auto_mode_io.h gathers its steps):
// every step all ranks reported goes to the job's policy, with the
// alpha-beta model's view of its two paths (study/alpha_beta/sync_model.h, from
// the config's link facts), and the switches the policy wants are asked for
// like `gradsync switch` asks (JobLifecycle::RequestSwitchLocked).
//
// Threading: with the state's mutex held.
#ifndef GRADSYNC_SERVER_COORDINATOR_JOB_AUTO_H_
#define GRADSYNC_SERVER_COORDINATOR_JOB_AUTO_H_

#include <cstdint>

#include "server/coordinator/auto_mode_io.h"
#include "server/coordinator/coordinator_state.h"
#include "server/coordinator/job.h"
#include "server/coordinator/job_lifecycle.h"

namespace gradsync {

// The model's view of `job`'s paths at `sync_bytes`: the ring over its
// ranks' hosts, and its PS (separate or colocated, K servers, the spec's
// partitions). Unknown without link facts (state.links).
AutoModelView AutoModelViewLocked(const CoordinatorState& state, const Job& job,
                                  int64_t sync_bytes)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.mu);

// Feeds `job`'s newly finished steps to its policy (a job without
// JobSpec.auto_mode: nothing) and asks for the switches it wants; a
// switch that cannot be asked for is logged.
void RunAutoModeLocked(CoordinatorState& state, JobLifecycle& lifecycle,
                       Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.mu);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_JOB_AUTO_H_
