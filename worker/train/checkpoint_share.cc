#include "worker/train/checkpoint_share.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gradsync {
namespace {

// A checkpoint holds at most this many optimizer buffers (ReadCheckpoint's
// bound; Adam has two).
constexpr size_t kMaxBuffers = 8;

// The broadcast shape: steps done, parameter count, optimizer kind,
// optimizer step, buffer count, then each buffer's length. Doubles hold
// these integers exactly (all below 2^53).
enum ShapeSlot : size_t {
  kStepsDone = 0,
  kParams,
  kKind,
  kOptimizerStep,
  kBuffers,
  kBufferLengths,
  kShapeSize = kBufferLengths + kMaxBuffers
};

std::vector<double> ShapeOf(const Checkpoint& c) {
  std::vector<double> shape(kShapeSize, 0.0);
  shape[kStepsDone] = static_cast<double>(c.steps_done);
  shape[kParams] = static_cast<double>(c.params.size());
  shape[kKind] = static_cast<double>(c.optimizer.kind);
  shape[kOptimizerStep] = static_cast<double>(c.optimizer.step);
  shape[kBuffers] = static_cast<double>(c.optimizer.buffers.size());
  for (size_t i = 0; i < c.optimizer.buffers.size() && i < kMaxBuffers; ++i) {
    shape[kBufferLengths + i] =
        static_cast<double>(c.optimizer.buffers[i].size());
  }
  return shape;
}

bool IsCount(double v) {
  return v >= 0 && v < 9007199254740992.0 && std::floor(v) == v;
}

// Sizes the receiving ranks' checkpoint from the source's shape.
[[nodiscard]] absl::Status ShapeInto(const std::vector<double>& shape,
                                     int source, Checkpoint* c) {
  for (double v : shape) {
    if (!IsCount(v)) {
      return absl::DataLossError(absl::StrCat(
          "rank ", source, " sent a checkpoint shape with the value ", v));
    }
  }
  if (shape[kBuffers] > kMaxBuffers) {
    return absl::DataLossError(
        absl::StrCat("rank ", source, " sent a checkpoint with ",
                     shape[kBuffers], " optimizer buffers"));
  }
  c->steps_done = static_cast<int64_t>(shape[kStepsDone]);
  c->params.resize(static_cast<size_t>(shape[kParams]));
  c->optimizer.kind = static_cast<OptimizerKind>(shape[kKind]);
  c->optimizer.step = static_cast<uint64_t>(shape[kOptimizerStep]);
  c->optimizer.size = c->params.size();
  c->optimizer.buffers.resize(static_cast<size_t>(shape[kBuffers]));
  for (size_t i = 0; i < c->optimizer.buffers.size(); ++i) {
    c->optimizer.buffers[i].resize(
        static_cast<size_t>(shape[kBufferLengths + i]));
  }
  return Annotate(ValidateOptimizerState(c->optimizer),
                  absl::StrCat("the checkpoint rank ", source, " sent"));
}

[[nodiscard]] absl::Status BroadcastFloats(Communicator* comm,
                                           std::vector<float>* values,
                                           int source, size_t chunk_floats) {
  for (size_t at = 0; at < values->size(); at += chunk_floats) {
    const size_t n = std::min(chunk_floats, values->size() - at);
    RETURN_IF_ERROR(comm->Broadcast(values->data() + at, values->data() + at, n,
                                    DataType::kFloat32, source));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SharedCheckpoint> ShareCheckpoint(
    Communicator* comm, const std::string& path, size_t chunk_floats,
    const std::vector<std::string>& roots) {
  if (chunk_floats == 0) {
    return absl::InvalidArgumentError("ShareCheckpoint: chunk_floats is 0");
  }
  const int world = comm->size();
  const int rank = comm->rank();
  absl::StatusOr<Checkpoint> local = ReadCheckpointUnderRoots(path, roots);

  // Slots [0, world): rank r read the file; [world, 2 world): rank r found
  // it but it is corrupt.
  std::vector<double> readable(2 * static_cast<size_t>(world), 0.0);
  if (local.ok()) {
    readable[rank] = 1;
  } else if (local.status().code() == absl::StatusCode::kDataLoss) {
    readable[world + rank] = 1;
  }
  RETURN_IF_ERROR(Annotate(
      comm->AllReduce(readable.data(), readable.data(), readable.size(),
                      DataType::kFloat64, ReduceOp::kSum),
      absl::StrCat("asking which ranks can read ", path)));
  int source = -1;
  bool corrupt = false;
  for (int r = 0; r < world; ++r) {
    if (source < 0 && readable[r] > 0) source = r;
    if (readable[world + r] > 0) corrupt = true;
  }
  if (source < 0) {
    return absl::Status(
        corrupt ? absl::StatusCode::kDataLoss : absl::StatusCode::kNotFound,
        absl::StrCat("no worker could read the checkpoint ", path, " (rank ",
                     rank, ": ", local.status().message(),
                     "); put the file on the host of any one worker: the "
                     "others receive it from that rank"));
  }

  SharedCheckpoint shared;
  shared.source_rank = source;
  if (rank == source) shared.checkpoint = *std::move(local);
  // A rank that read its own copy drops it now: it takes the source's, and
  // holding both would double its memory while the broadcast runs.
  local = absl::StatusOr<Checkpoint>();
  const std::string context =
      absl::StrCat("receiving ", path, " from rank ", source);
  std::vector<double> shape = rank == source ? ShapeOf(shared.checkpoint)
                                             : std::vector<double>(kShapeSize);
  RETURN_IF_ERROR(
      Annotate(comm->Broadcast(shape.data(), shape.data(), shape.size(),
                               DataType::kFloat64, source),
               context));
  Checkpoint& c = shared.checkpoint;
  if (rank != source) RETURN_IF_ERROR(ShapeInto(shape, source, &c));
  RETURN_IF_ERROR(Annotate(
      BroadcastFloats(comm, &c.params, source, chunk_floats), context));
  for (std::vector<float>& buffer : c.optimizer.buffers) {
    RETURN_IF_ERROR(Annotate(
        BroadcastFloats(comm, &buffer, source, chunk_floats), context));
  }
  return shared;
}

}  // namespace gradsync
