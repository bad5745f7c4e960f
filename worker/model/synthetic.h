// SyntheticWorkload: a stand-in for a model in communication studies. It
// "computes" a flat fp32 gradient of any size with content known in
// advance, takes a configurable time to do it, and reports ready ranges
// exactly like Mlp's backward (gradient_ready.h): chunks of chunk_floats
// from the end of the buffer toward its beginning.
//
// Content: element i of rank r at step s is a small integer in [-8, 8]
// (Value()). Sums of up to 2^20 ranks are exact in fp32, so a collective's
// result can be checked bit for bit against ExpectedSum() (as nccl-tests'
// verifiable inputs).
//
// Compute time: compute_time is spread over the chunks in proportion to
// their size; chunk k is reported no earlier than start + compute_time *
// (floats done / num_floats). kSleep sleeps (frees the core, as a GPU rank
// would); kBusyWait spins (occupies the core, as a CPU rank would).
//
// Errors: INVALID_ARGUMENT for a negative or infinite compute_time, layers
// that do not add up to num_floats (or costs of another count, or
// negative), or a gradient span whose size is not num_floats. Threading: a
// SyntheticWorkload is immutable; Backward may run on many threads at once
// (each with its own gradient buffer).
//
// Example:
//   SyntheticConfig config;
//   config.num_floats = 25'000'000;
//   config.chunk_floats = 1 << 20;
//   config.compute_time = absl::Milliseconds(40);
//   ASSIGN_OR_RETURN(SyntheticWorkload work,
//   SyntheticWorkload::Create(config)); RETURN_IF_ERROR(work.Backward(rank,
//   step, absl::MakeSpan(grads),
//                                 GradMode::kOverwrite, on_ready));
#ifndef GRADSYNC_WORKER_MODEL_SYNTHETIC_H_
#define GRADSYNC_WORKER_MODEL_SYNTHETIC_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "worker/model/gradient_ready.h"

namespace gradsync {

enum class EmulatedWait {
  kSleep,
  kBusyWait,
};

struct SyntheticConfig {
  size_t num_floats = 0;    // gradient length
  size_t chunk_floats = 0;  // callback granularity; 0 = one chunk
  // A network's layers instead of chunks (study/model_profiles.h): their
  // sizes in forward order (summing to num_floats), reported last first,
  // each when its share of `layer_cost` (e.g. FLOPs; all zero or empty:
  // its share of the floats) of compute_time has passed since the start.
  std::vector<size_t> layer_floats;
  std::vector<double> layer_cost;
  absl::Duration compute_time = absl::ZeroDuration();  // per backward
  EmulatedWait wait = EmulatedWait::kSleep;
};

class SyntheticWorkload {
 public:
  [[nodiscard]] static absl::StatusOr<SyntheticWorkload> Create(
      const SyntheticConfig& config);

  const SyntheticConfig& config() const { return config_; }
  // Number of ranges one Backward reports.
  size_t num_chunks() const;

  // Fills `grads` (num_floats) with Value(rank, step, i) (kOverwrite) or
  // adds it (kAccumulate), taking compute_time, and calls `ready` (may be
  // empty) for each chunk, last chunk first.
  [[nodiscard]] absl::Status Backward(uint64_t rank, uint64_t step,
                                      absl::Span<float> grads, GradMode mode,
                                      const GradReadyCallback& ready) const;

  // The gradient element `index` of `rank` at `step`: an integer in [-8, 8].
  static float Value(uint64_t rank, uint64_t step, size_t index);
  // Sum of Value over ranks 0..num_ranks-1 (exact for num_ranks <= 2^20).
  static float ExpectedSum(uint64_t num_ranks, uint64_t step, size_t index);

 private:
  explicit SyntheticWorkload(const SyntheticConfig& config) : config_(config) {}

  SyntheticConfig config_;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_MODEL_SYNTHETIC_H_
