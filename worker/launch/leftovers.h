// Leftovers: processes of entrypoint jobs that outlived the daemon that
// started them. A rank's own process dies with the daemon
// (PR_SET_PDEATHSIG), but what it started (DataLoader workers, a shell's
// children) is reparented and keeps running. Every process a daemon starts
// carries GRADSYNC_AGENT=<daemon pid>:<its start time>:<coordinator> in
// its environment, which its children inherit; a daemon starting up kills
// (SIGKILL, with their process groups) the processes whose tag names the
// same coordinator and a daemon that no longer runs.
//
//   const std::string tag = AgentTag(coordinator);   // for rank_env.h
//   KillLeftovers(coordinator, log);                 // once, at start
//
// Reads /proc; processes it may not read are skipped.
// Threading: thread-safe (no state).
#ifndef GRADSYNC_WORKER_LAUNCH_LEFTOVERS_H_
#define GRADSYNC_WORKER_LAUNCH_LEFTOVERS_H_

#include <sys/types.h>

#include <functional>
#include <string>

#include "absl/strings/string_view.h"

namespace gradsync {

// This process's tag: "<pid>:<start time in clock ticks>:<coordinator>".
std::string AgentTag(absl::string_view coordinator);

// The start time (/proc/PID/stat field 22) of `pid`; -1 when it is gone.
long long ProcessStartTime(pid_t pid);

// Kills the leftovers of dead daemons of `coordinator`, each with its
// process group; returns how many it killed (a process that went with a
// group killed before it does not count), logging each.
int KillLeftovers(absl::string_view coordinator,
                  const std::function<void(absl::string_view)>& log);

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_LAUNCH_LEFTOVERS_H_
