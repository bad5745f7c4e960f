// The contract between a backward pass and a gradient-sync strategy: the
// backward pass reports each range of the flat gradient buffer as soon as it
// is final, so that the strategy can start communicating it (DDP-style
// bucketing) while the rest of backward still runs.
//
// Ranges are half-open [begin, end) element offsets into the flat gradient
// buffer. Over one backward pass they are reported in order of readiness,
// they tile [0, num_parameters) exactly once, and they move from the END of
// the buffer toward its beginning: the first range ends at num_parameters,
// and each later range ends where the previous one began. A strategy can
// therefore cut "buckets in reverse layer order" as contiguous slices of the
// ready suffix [ready_begin, num_parameters).
//
// Threading: the callback runs on the backward thread, which waits for it
// to return (so it should only enqueue work). Backward never writes a range
// of gradients again after reporting it, nor reads the parameters of that
// range, so the strategy may read or reduce the gradients in place from
// any thread and write the next step's parameters into the range (the PS
// path's pull); the next backward pass must not start before that
// communication has finished.
#ifndef GRADSYNC_WORKER_MODEL_GRADIENT_READY_H_
#define GRADSYNC_WORKER_MODEL_GRADIENT_READY_H_

#include <cstddef>
#include <functional>

namespace gradsync {

// Called with [begin, end) each time that gradient range is complete.
using GradReadyCallback = std::function<void(size_t begin, size_t end)>;

// Whether a backward pass overwrites the gradient buffer or adds to it
// (gradient accumulation across micro-batches, DDP's no_sync).
enum class GradMode {
  kOverwrite,
  kAccumulate,
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_MODEL_GRADIENT_READY_H_
