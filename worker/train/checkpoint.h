// Checkpoints: the flat parameter vector and the optimizer state (the only
// state a replica has, see docs/architecture.md) after a given number of steps,
// in one binary file. Rank 0 writes them (all ranks hold the same bits); a PS
// job will write the same format from its shards.
//
// Format (little-endian): "GSCKPT02", int64 steps done, uint64 parameter
// count, the parameters (fp32), uint8 optimizer kind, uint64 optimizer
// step, uint32 buffer count, then per buffer uint64 length and fp32 data,
// and a uint64 checksum of all of it (a corrupt copy is DATA_LOSS, and
// resuming takes another rank's). "GSCKPT01" files, without the checksum,
// still load.
// Files are written to a fresh temporary name in the same directory
// (created with O_EXCL | O_NOFOLLOW, so never through a planted file or
// link), synced, renamed over the final name, and the directory synced:
// a reader never sees a half-written checkpoint, and a written one
// survives a crash. A job's writes go through its checkpoint directory's
// descriptor, opened once beneath the worker's --checkpoint-root
// (security/rooted_dir.h) and verified before and after each file. No call
// throws; every filesystem error is a Status.
#ifndef GRADSYNC_WORKER_TRAIN_CHECKPOINT_H_
#define GRADSYNC_WORKER_TRAIN_CHECKPOINT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/optimizer.h"
#include "security/rooted_dir.h"

namespace gradsync {

struct Checkpoint {
  int64_t steps_done = 0;
  std::vector<float> params;
  OptimizerState optimizer;
};

// "step-<steps_done>.ckpt", the file's name in its directory.
std::string CheckpointFileName(int64_t steps_done);
// "<directory>/step-<steps_done>.ckpt".
std::string CheckpointPath(const std::string& directory, int64_t steps_done);

// Writes file `name` (one path component) in `dir`, every step through the
// directory's descriptor. dir.Verify() first: when the directory's path no
// longer leads to it (a link swapped in, the directory moved), nothing is
// written and its FAILED_PRECONDITION comes back, naming the file. Verified
// again once the file is in place; if the directory moved meanwhile the
// file is removed again and that error returned. Otherwise INVALID_ARGUMENT
// for a name that is not one component, INTERNAL on I/O, naming the file.
[[nodiscard]] absl::Status WriteCheckpoint(const RootedDir& dir,
                                           const std::string& name,
                                           int64_t steps_done,
                                           absl::Span<const float> params,
                                           const OptimizerState& optimizer);

// The same to `path`, creating its directory if needed (opened as named).
[[nodiscard]] absl::Status WriteCheckpoint(const std::string& path,
                                           int64_t steps_done,
                                           absl::Span<const float> params,
                                           const OptimizerState& optimizer);

// NOT_FOUND if missing or unreadable; INVALID_ARGUMENT for a symbolic
// link or anything but a regular file (a directory, a FIFO: refused at
// once, never waited on); DATA_LOSS if truncated, corrupt (checksum) or
// not a checkpoint.
[[nodiscard]] absl::StatusOr<Checkpoint> ReadCheckpoint(
    const std::string& path);

// ReadCheckpoint of file `name` in `dir`, opened through its descriptor.
[[nodiscard]] absl::StatusOr<Checkpoint> ReadCheckpoint(
    const RootedDir& dir, const std::string& name);

// ReadCheckpoint of `path` as `roots` (--checkpoint-root) allow: its
// directory opened beneath the root that holds it without following any
// link (RootedDir::OpenUnderRoots), then the file through it. A path
// outside the roots is INVALID_ARGUMENT, a link on the way
// FAILED_PRECONDITION naming it, a missing directory NOT_FOUND. Without
// roots, ReadCheckpoint(path).
[[nodiscard]] absl::StatusOr<Checkpoint> ReadCheckpointUnderRoots(
    const std::string& path, const std::vector<std::string>& roots);

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_TRAIN_CHECKPOINT_H_
