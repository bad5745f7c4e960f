// The names of a job's sync modes (proto SyncMode), as users type them
// (`gradsync submit --mode`, `--switch-at STEP:MODE`, `gradsync switch`)
// and as the CLI, the logs and the metrics show them: "ring" and "ps".
// One mapping, both ways, for the coordinator, the workers and the CLI;
// the names themselves are the study's (SyncPathName, study/sync_path.h),
// and SyncPathOf / SyncModeOf map the proto's modes onto its paths.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_JOBSPEC_SYNC_MODE_NAME_H_
#define GRADSYNC_JOBSPEC_SYNC_MODE_NAME_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/job.pb.h"
#include "study/sync_path.h"

namespace gradsync {

// "ps" for SYNC_MODE_PS; "ring" for SYNC_MODE_RING and for
// SYNC_MODE_UNSPECIFIED (which the coordinator reads as the ring); "mode
// <n>" for a value this build does not know.
std::string SyncModeName(SyncMode mode);

// The inverse, for "ring" and "ps" only: INVALID_ARGUMENT "<what> is
// '<name>'; use ps or ring" otherwise.
[[nodiscard]] absl::StatusOr<SyncMode> ParseSyncModeName(
    absl::string_view name, absl::string_view what = "the sync mode");

// The study's path of `mode`: kPs for SYNC_MODE_PS, kRing for every other
// value (SYNC_MODE_UNSPECIFIED is the ring).
SyncPath SyncPathOf(SyncMode mode);

// The proto's mode of `path`.
SyncMode SyncModeOf(SyncPath path);

}  // namespace gradsync

#endif  // GRADSYNC_JOBSPEC_SYNC_MODE_NAME_H_
