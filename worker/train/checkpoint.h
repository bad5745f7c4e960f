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
// survives a crash. No call throws; every filesystem error is a Status.
#ifndef GRADSYNC_WORKER_TRAIN_CHECKPOINT_H_
#define GRADSYNC_WORKER_TRAIN_CHECKPOINT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/optimizer.h"

namespace gradsync {

struct Checkpoint {
  int64_t steps_done = 0;
  std::vector<float> params;
  OptimizerState optimizer;
};

// "<directory>/step-<steps_done>.ckpt".
std::string CheckpointPath(const std::string& directory, int64_t steps_done);

// Creates the file's directory if needed. Errors name the file:
// INVALID_ARGUMENT for a path without a file name, INTERNAL on I/O.
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

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_TRAIN_CHECKPOINT_H_
