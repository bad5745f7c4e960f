// The two ways a job synchronises its gradient, as the study reasons about
// them: the ring all-reduce and the parameter server. The proto's SyncMode
// (proto/job.proto) maps onto these in jobspec/sync_mode_name.h, which
// takes its names ("ring", "ps") from SyncPathName, so that the names are
// written once.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_STUDY_SYNC_PATH_H_
#define GRADSYNC_STUDY_SYNC_PATH_H_

#include "absl/strings/string_view.h"

namespace gradsync {

enum class SyncPath {
  kRing,  // the peer all-reduce
  kPs,    // the sharded parameter server
};

// "ring" or "ps".
constexpr absl::string_view SyncPathName(SyncPath path) {
  return path == SyncPath::kPs ? "ps" : "ring";
}

// The other path.
constexpr SyncPath OtherSyncPath(SyncPath path) {
  return path == SyncPath::kPs ? SyncPath::kRing : SyncPath::kPs;
}

}  // namespace gradsync

#endif  // GRADSYNC_STUDY_SYNC_PATH_H_
