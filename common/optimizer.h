// Optimizers over gradsync's flat fp32 parameter buffer, shared by the
// parameter-server shards (each owns a slice [begin, end) of the flat vector)
// and the workers in ring mode (each owns the whole vector).
//
// An Optimizer covers `size` consecutive elements. Step() reads a gradient
// slice of that length and updates the parameter slice of the same length in
// place. Every rule is elementwise, so optimizers on the slices [0, k) and
// [k, n) together produce bitwise the same parameters and state as one
// optimizer on [0, n): a PS shard is simply an Optimizer of the shard's size.
//
// Update rules follow PyTorch's torch.optim (single-tensor implementation):
//   "sgd"       g' = g + wd*p;                      p -= lr*g'
//   "momentum"  g' = g + wd*p; buf = g' on the first step, else
//               buf = mu*buf + (1 - dampening)*g';
//               d = nesterov ? g' + mu*buf : buf;   p -= lr*d
//   "adam"      t += 1; g' = g + wd*p (L2, as torch.optim.Adam);
//               m = lerp(m, g', 1 - beta1); v = beta2*v + (1 - beta2)*g'*g';
//               p -= (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t)
//               + eps)
//   "adamw"     as "adam" with decoupled decay: p *= 1 - lr*wd first, and
//               g' = g.
//   "sum"       p = g: no optimizer at all. The PS's sum-only flavour
//               (BytePS's servers): a shard's "parameters" are the step's
//               summed gradient, which the ranks pull and hand to their own
//               optimizer (python/gradsync/torch/ps.py). The built-in
//               models refuse it (their ranks would train on gradients).
// Hyper-parameters are doubles (as Python floats in PyTorch); scalar
// factors such as bias corrections are computed in double and rounded to
// float once per step; the per-element arithmetic is fp32 and compiled
// without FMA contraction, so results are deterministic: the same inputs
// give bitwise the same outputs on every rank and every run.
//
// State ("momentum" buffer; Adam's m and v; the step count t) lives in flat
// buffers laid out like the parameters. ExportState()/ImportState() move it
// exactly (a mode switch, a checkpoint), and SliceOptimizerState() /
// ConcatOptimizerStates() cut a whole-vector state into shard states and
// back.
//
// Errors: INVALID_ARGUMENT for bad hyper-parameters, an unknown name,
// buffers of the wrong length or a state that does not match (kind, size,
// buffer count); nothing is modified when an error is returned.
// Threading: an Optimizer is not thread-safe; use one per thread (shard or
// rank). Distinct Optimizers never share memory.
//
// Example (a PS shard owning elements [b, e) of the flat vector):
//   OptimizerConfig config;
//   config.lr = 1e-3;
//   ASSIGN_OR_RETURN(Optimizer adam,
//                    Optimizer::CreateByName("adam", config, e - b));
//   RETURN_IF_ERROR(adam.Step(absl::MakeSpan(shard_params),
//                             absl::MakeConstSpan(summed_grads)));
//   OptimizerState state = adam.ExportState();   // hand over on a switch
#ifndef GRADSYNC_COMMON_OPTIMIZER_H_
#define GRADSYNC_COMMON_OPTIMIZER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/adam_step_scalars.h"
#include "common/compute_pool.h"

namespace gradsync {

enum class OptimizerKind : uint8_t {
  kSgd = 0,
  kMomentum = 1,
  kAdam = 2,
  kAdamW = 3,
  kSum = 4,
};

// "sgd", "momentum", "adam", "adamw", "sum".
absl::string_view OptimizerKindName(OptimizerKind kind);
// Parses the names above (case-insensitive); INVALID_ARGUMENT otherwise.
[[nodiscard]] absl::StatusOr<OptimizerKind> ParseOptimizerKind(
    absl::string_view name);
// How many per-element state buffers `kind` keeps: 0, 1 or 2.
size_t NumStateBuffers(OptimizerKind kind);

// Hyper-parameters; the fields a kind does not use are ignored (but must
// still be finite).
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  double lr = 0.01;           // >= 0
  double weight_decay = 0.0;  // >= 0
  double momentum = 0.9;      // kMomentum: in (0, 1)
  double dampening = 0.0;     // kMomentum: in [0, 1]; 0 with nesterov
  bool nesterov = false;      // kMomentum
  double beta1 = 0.9;         // Adam: in [0, 1)
  double beta2 = 0.999;       // Adam: in [0, 1)
  double eps = 1e-8;          // Adam: >= 0
};

// OK, or INVALID_ARGUMENT naming the first bad field and its allowed range.
[[nodiscard]] absl::Status ValidateOptimizerConfig(
    const OptimizerConfig& config);

// Adam's (and AdamW's) fp32 scalars for step t >= 1, derived from `config`
// in double precision. The CPU loops (optimizer.cc) and the CUDA kernels
// (worker/model/cuda/cuda_optimizer.cc) both take them from here, so that
// a GPU rank's update rounds exactly as a CPU rank's.
AdamStepScalars AdamStepScalarsAt(const OptimizerConfig& config, uint64_t t);

// Whether [a, a + na) and [b, b + nb) share memory (an optimizer's
// parameters must not alias its gradients).
bool FloatSpansOverlap(const float* a, size_t na, const float* b, size_t nb);

// The complete state of an Optimizer over `size` elements. `buffers` holds
// NumStateBuffers(kind) vectors of `size` floats: {} for kSgd, {momentum}
// for kMomentum, {exp_avg, exp_avg_sq} for kAdam and kAdamW. `step` counts
// the steps taken (it selects the first-step rule of momentum and Adam's
// bias correction).
struct OptimizerState {
  OptimizerKind kind = OptimizerKind::kSgd;
  uint64_t step = 0;
  size_t size = 0;
  std::vector<std::vector<float>> buffers;
};

// OK when `state` is self-consistent (buffer count and lengths).
[[nodiscard]] absl::Status ValidateOptimizerState(const OptimizerState& state);

// The state of elements [begin, end) of `state` (for a PS shard).
[[nodiscard]] absl::StatusOr<OptimizerState> SliceOptimizerState(
    const OptimizerState& state, size_t begin, size_t end);

// The concatenation of consecutive slices (shards back into one vector).
// All parts must have the same kind and step.
[[nodiscard]] absl::StatusOr<OptimizerState> ConcatOptimizerStates(
    absl::Span<const OptimizerState> parts);

class Optimizer {
 public:
  // An optimizer of config.kind over `size` elements, state zeroed, step 0.
  [[nodiscard]] static absl::StatusOr<Optimizer> Create(
      const OptimizerConfig& config, size_t size);
  // As Create, with the kind given by name ("sgd", "momentum", "adam",
  // "adamw"); config.kind is ignored.
  [[nodiscard]] static absl::StatusOr<Optimizer> CreateByName(
      absl::string_view name, OptimizerConfig config, size_t size);

  Optimizer(Optimizer&&) = default;
  Optimizer& operator=(Optimizer&&) = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of `params` with `grads`; both must hold exactly size()
  // floats and must not overlap. Increments step_count(). With a `pool`
  // the update runs in element ranges on its threads at once, bitwise the
  // same as without.
  [[nodiscard]] absl::Status Step(absl::Span<float> params,
                                  absl::Span<const float> grads,
                                  ComputePool* pool = nullptr);

  // Step in pieces, for callers that make the gradient block by block (a
  // parameter-server shard sums its ranks' gradients a few KiB at a time
  // and updates those parameters while the sums are still in L1, instead
  // of writing a whole summed gradient out and reading it back):
  // StepRange() over disjoint element ranges that together cover
  // [0, size()) exactly once, from several threads at once if wanted, then
  // EndStep() once. Bitwise the same parameters and state as one Step().
  // StepRange: `params` and `grads` hold elements [begin, begin + n) and
  // must not overlap; INVALID_ARGUMENT (nothing changed) otherwise.
  [[nodiscard]] absl::Status StepRange(size_t begin, absl::Span<float> params,
                                       absl::Span<const float> grads);
  void EndStep() { ++step_; }

  // The least elements Step gives one thread of a pool.
  static constexpr size_t kMinPartElements = 128 * 1024;

  // Changes the learning rate for later steps (schedules); INVALID_ARGUMENT
  // if negative or not finite.
  [[nodiscard]] absl::Status SetLearningRate(double lr);

  OptimizerKind kind() const { return config_.kind; }
  const OptimizerConfig& config() const { return config_; }
  size_t size() const { return size_; }
  uint64_t step_count() const { return step_; }
  // State buffer `i` < NumStateBuffers(kind()) (read-only view, for
  // streaming it without a copy).
  absl::Span<const float> state_buffer(size_t i) const;

  // A deep copy of the state.
  OptimizerState ExportState() const;
  // Replaces the state; it must be valid and match kind() and size().
  [[nodiscard]] absl::Status ImportState(const OptimizerState& state);

 private:
  Optimizer(const OptimizerConfig& config, size_t size);
  // The update of elements [begin, begin + n) at p, g (checked by callers).
  void UpdateRange(size_t begin, float* p, const float* g, size_t n);

  OptimizerConfig config_;
  size_t size_;
  uint64_t step_ = 0;
  std::vector<std::vector<float>> buffers_;
};

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_OPTIMIZER_H_
