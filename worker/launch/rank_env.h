// The environment of an entrypoint job's process: torchrun's variables, so
// that a script written for torchrun runs unchanged, plus GRADSYNC_* for
// the gradsync package (python/gradsync/), on top of the daemon's own
// environment (PATH, HOME, ...).
//
//   RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE   as torchrun sets them
//   GROUP_RANK, GROUP_WORLD_SIZE    this worker's place among the job's
//                                   workers (exact when each holds the
//                                   same number of consecutive ranks, as
//                                   the coordinator places them)
//   ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME ("default")
//   TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS,
//   TORCHELASTIC_RUN_ID (the job id)
//   OMP_NUM_THREADS                 JobSpec.blas_threads (torchrun: 1)
//   GRADSYNC_JOB_ID, GRADSYNC_COORDINATOR, GRADSYNC_TLS_DIR (empty:
//   plaintext), GRADSYNC_DEVICE ("cpu:0", "cuda:1"), GRADSYNC_RANK_FILE
//   (the 0600 file with the job's credentials: rank_file.h),
//   GRADSYNC_REPORT_FD (where step metrics go: report_wire.h),
//   GRADSYNC_AGENT (the daemon that started it: leftovers.h)
//   PYTHONPATH                      the gradsync package's directory first
//
// Secrets never appear here: they are in the rank file.
// Pure functions; thread-safe.
#ifndef GRADSYNC_WORKER_LAUNCH_RANK_ENV_H_
#define GRADSYNC_WORKER_LAUNCH_RANK_ENV_H_

#include <string>
#include <vector>

#include "proto/coordinator.pb.h"

namespace gradsync {

struct RankEnvInputs {
  const Assignment* assignment = nullptr;
  int index = 0;  // of the rank in assignment->ranks()
  std::string coordinator;
  std::string tls_dir;
  std::string rank_file;
  std::string agent_tag;
  std::string python_dir;  // prepended to PYTHONPATH; empty: none
  // The daemon's environment, "NAME=value" each (environ).
  std::vector<std::string> base;
};

// The child's whole environment, sorted by name, one entry per name.
std::vector<std::string> BuildRankEnvironment(const RankEnvInputs& in);

// The environment of this process, "NAME=value" each.
std::vector<std::string> ProcessEnvironment();

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_LAUNCH_RANK_ENV_H_
