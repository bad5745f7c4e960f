// Loading a checkpoint for a resumed job without shared storage: the ranks
// agree on one that can read the file and it broadcasts the contents, so
// the file needs to be on one worker's host only (rank 0 writes them on
// its own host), and every rank starts from the same bits even if another
// host holds an older file under the same name. This is Horovod's "load on
// one rank, then broadcast_parameters" and what DDP does with the module's
// state at construction.
//
// Collective: every rank of `comm` calls it with the same path. Costs one
// small all-reduce (who can read it), a small broadcast (the shapes) and a
// broadcast of the parameters and of each optimizer buffer.
//
// Errors: when no rank can read the file, NOT_FOUND (DATA_LOSS if some
// rank found it but it is corrupt) naming the path and this rank's own
// reason; a communicator error (a peer gone, the deadline) as the
// communicator reports it, naming the operation. Nothing else changes.
#ifndef GRADSYNC_WORKER_TRAIN_CHECKPOINT_SHARE_H_
#define GRADSYNC_WORKER_TRAIN_CHECKPOINT_SHARE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "collectives/communicator.h"
#include "worker/train/checkpoint.h"

namespace gradsync {

struct SharedCheckpoint {
  Checkpoint checkpoint;
  // The rank whose file every rank now holds: the lowest that could read it.
  int source_rank = 0;
};

// The vectors go in broadcasts of at most this many floats (64 MiB): each
// collective waits until comm->timeout() from its start, and a
// billion-parameter model's state would take longer than that on a slow
// link in one piece.
inline constexpr size_t kShareChunkFloats = size_t{16} << 20;

// Each rank reads its own copy as `roots` (the worker's --checkpoint-root)
// allow: ReadCheckpointUnderRoots, no link followed below the root.
[[nodiscard]] absl::StatusOr<SharedCheckpoint> ShareCheckpoint(
    Communicator* comm, const std::string& path,
    size_t chunk_floats = kShareChunkFloats,
    const std::vector<std::string>& roots = {});

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_TRAIN_CHECKPOINT_SHARE_H_
