#include "common/optimizer.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

// This file is compiled with -ffp-contract=off (see common/CMakeLists.txt):
// a fused multiply-add would round differently from the separate multiply
// and add that other builds (and the tests) perform.

namespace gradsync {
namespace {

bool Finite(double x) { return std::isfinite(x); }

absl::Status CheckRange(absl::string_view field, double value, double lo,
                        bool lo_open, double hi, bool hi_open) {
  const bool ok = Finite(value) && (lo_open ? value > lo : value >= lo) &&
                  (hi_open ? value < hi : value <= hi);
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "optimizer ", field, " = ", value, " is out of range: expected ",
      lo_open ? "(" : "[", lo, ", ", hi, hi_open ? ")" : "]"));
}

// x^n by repeated squaring: only IEEE multiplications, so the result is the
// same on every platform (std::pow's last bit is library-defined).
double PowInt(double x, uint64_t n) {
  double result = 1.0;
  while (n > 0) {
    if (n & 1) result *= x;
    x *= x;
    n >>= 1;
  }
  return result;
}

// The update loops below are the hot path of every optimizer step (a rank's
// in ring mode, a PS shard's). Each loop is branch-free, with the
// invariant choices (weight decay, Nesterov, the lerp's side) made once
// outside it by a template argument, and its pointers restrict-qualified,
// so that the compiler vectorises it. Vector sqrt and division round
// exactly as the scalar ones (IEEE), so the results are bitwise those of
// the plain loops; this file is compiled with -fno-math-errno so that
// std::sqrt is the bare instruction (v >= 0 here: no errno to set).

template <bool kWeightDecay>
void SgdLoop(float neg_lr, float wd, float* __restrict p,
             const float* __restrict g, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float d = kWeightDecay ? g[i] + wd * p[i] : g[i];
    p[i] = p[i] + neg_lr * d;
  }
}

void SgdStep(const OptimizerConfig& c, float* p, const float* g, size_t n) {
  const float neg_lr = static_cast<float>(-c.lr);
  const float wd = static_cast<float>(c.weight_decay);
  if (wd != 0.0f) {
    SgdLoop<true>(neg_lr, wd, p, g, n);
  } else {
    SgdLoop<false>(neg_lr, wd, p, g, n);
  }
}

struct MomentumConstants {
  float neg_lr, wd, mu, keep;
};

template <bool kWeightDecay, bool kFirst, bool kNesterov>
void MomentumLoop(const MomentumConstants k, float* __restrict p,
                  const float* __restrict g, float* __restrict buf, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float d = kWeightDecay ? g[i] + k.wd * p[i] : g[i];
    // PyTorch starts the buffer as a copy of the first gradient.
    const float b = kFirst ? d : k.mu * buf[i] + k.keep * d;
    buf[i] = b;
    d = kNesterov ? d + k.mu * b : b;
    p[i] = p[i] + k.neg_lr * d;
  }
}

template <bool kWeightDecay>
void MomentumDispatch(const MomentumConstants& k, bool first, bool nesterov,
                      float* p, const float* g, float* buf, size_t n) {
  if (first) {
    nesterov ? MomentumLoop<kWeightDecay, true, true>(k, p, g, buf, n)
             : MomentumLoop<kWeightDecay, true, false>(k, p, g, buf, n);
  } else {
    nesterov ? MomentumLoop<kWeightDecay, false, true>(k, p, g, buf, n)
             : MomentumLoop<kWeightDecay, false, false>(k, p, g, buf, n);
  }
}

void MomentumStep(const OptimizerConfig& c, bool first_step, float* p,
                  const float* g, float* buf, size_t n) {
  const MomentumConstants k{
      static_cast<float>(-c.lr), static_cast<float>(c.weight_decay),
      static_cast<float>(c.momentum), static_cast<float>(1.0 - c.dampening)};
  if (k.wd != 0.0f) {
    MomentumDispatch<true>(k, first_step, c.nesterov, p, g, buf, n);
  } else {
    MomentumDispatch<false>(k, first_step, c.nesterov, p, g, buf, n);
  }
}

// kDecay: 0 none, 1 L2 (Adam's weight decay), 2 decoupled (AdamW).
template <int kDecay, bool kSmallW>
void AdamLoop(const AdamStepScalars k, float* __restrict p,
              const float* __restrict g, float* __restrict m,
              float* __restrict v, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float grad = g[i];
    float param = p[i];
    if (kDecay == 2) param = param * k.decay;
    if (kDecay == 1) grad = grad + k.wd * param;
    // torch.lerp's two-sided formula, exact at both ends.
    const float mi = kSmallW ? m[i] + k.w * (grad - m[i])
                             : grad - (grad - m[i]) * (1.0f - k.w);
    const float vi = k.b2 * v[i] + (k.one_minus_b2 * grad) * grad;
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) / k.bc2_sqrt + k.eps;
    p[i] = param + k.neg_step_size * (mi / denom);
  }
}

template <int kDecay>
void AdamDispatch(const AdamStepScalars& k, float* p, const float* g, float* m,
                  float* v, size_t n) {
  if (k.w < 0.5f) {
    AdamLoop<kDecay, true>(k, p, g, m, v, n);
  } else {
    AdamLoop<kDecay, false>(k, p, g, m, v, n);
  }
}

void AdamStep(const OptimizerConfig& c, uint64_t t, float* p, const float* g,
              float* m, float* v, size_t n) {
  const AdamStepScalars k = AdamStepScalarsAt(c, t);
  if (c.kind == OptimizerKind::kAdamW) {
    AdamDispatch<2>(k, p, g, m, v, n);
  } else if (k.wd != 0.0f) {
    AdamDispatch<1>(k, p, g, m, v, n);
  } else {
    AdamDispatch<0>(k, p, g, m, v, n);
  }
}

}  // namespace

absl::string_view OptimizerKindName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd:
      return "sgd";
    case OptimizerKind::kMomentum:
      return "momentum";
    case OptimizerKind::kAdam:
      return "adam";
    case OptimizerKind::kAdamW:
      return "adamw";
    case OptimizerKind::kSum:
      return "sum";
  }
  return "unknown";
}

absl::StatusOr<OptimizerKind> ParseOptimizerKind(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (OptimizerKind kind :
       {OptimizerKind::kSgd, OptimizerKind::kMomentum, OptimizerKind::kAdam,
        OptimizerKind::kAdamW, OptimizerKind::kSum}) {
    if (lower == OptimizerKindName(kind)) return kind;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown optimizer \"", name,
                   "\": expected one of sgd, momentum, adam, adamw, sum"));
}

AdamStepScalars AdamStepScalarsAt(const OptimizerConfig& c, uint64_t t) {
  const double bc1 = 1.0 - PowInt(c.beta1, t);
  const double bc2 = 1.0 - PowInt(c.beta2, t);
  AdamStepScalars k;
  k.neg_step_size = static_cast<float>(-(c.lr / bc1));
  k.bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  k.w = static_cast<float>(1.0 - c.beta1);
  k.b2 = static_cast<float>(c.beta2);
  k.one_minus_b2 = static_cast<float>(1.0 - c.beta2);
  k.eps = static_cast<float>(c.eps);
  k.wd = static_cast<float>(c.weight_decay);
  k.decay = static_cast<float>(1.0 - c.lr * c.weight_decay);
  return k;
}

bool FloatSpansOverlap(const float* a, size_t na, const float* b, size_t nb) {
  const std::less<const float*> lt;
  return na > 0 && nb > 0 && lt(a, b + nb) && lt(b, a + na);
}

size_t NumStateBuffers(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd:
    case OptimizerKind::kSum:
      return 0;
    case OptimizerKind::kMomentum:
      return 1;
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      return 2;
  }
  return 0;
}

absl::Status ValidateOptimizerConfig(const OptimizerConfig& c) {
  if (OptimizerKindName(c.kind) == "unknown") {
    return absl::InvalidArgumentError(absl::StrCat(
        "optimizer kind ", static_cast<int>(c.kind), " is not a known kind"));
  }
  constexpr double kInf = HUGE_VAL;
  RETURN_IF_ERROR(CheckRange("lr", c.lr, 0, false, kInf, true));
  RETURN_IF_ERROR(
      CheckRange("weight_decay", c.weight_decay, 0, false, kInf, true));
  if (c.kind == OptimizerKind::kMomentum) {
    RETURN_IF_ERROR(CheckRange("momentum", c.momentum, 0, true, 1, true));
    RETURN_IF_ERROR(CheckRange("dampening", c.dampening, 0, false, 1, false));
    if (c.nesterov && c.dampening != 0) {
      return absl::InvalidArgumentError(
          "optimizer nesterov momentum requires dampening = 0");
    }
  } else if (c.nesterov) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer nesterov = true needs kind momentum, not ",
                     OptimizerKindName(c.kind)));
  }
  if (c.kind == OptimizerKind::kAdam || c.kind == OptimizerKind::kAdamW) {
    RETURN_IF_ERROR(CheckRange("beta1", c.beta1, 0, false, 1, true));
    RETURN_IF_ERROR(CheckRange("beta2", c.beta2, 0, false, 1, true));
    RETURN_IF_ERROR(CheckRange("eps", c.eps, 0, false, kInf, true));
  }
  return absl::OkStatus();
}

absl::Status ValidateOptimizerState(const OptimizerState& state) {
  if (OptimizerKindName(state.kind) == "unknown") {
    return absl::InvalidArgumentError("optimizer state has an unknown kind");
  }
  const size_t want = NumStateBuffers(state.kind);
  if (state.buffers.size() != want) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer state for ", OptimizerKindName(state.kind),
                     " needs ", want, " buffers, got ", state.buffers.size()));
  }
  for (size_t i = 0; i < want; ++i) {
    if (state.buffers[i].size() != state.size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "optimizer state buffer ", i, " holds ", state.buffers[i].size(),
          " floats, expected size ", state.size));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<OptimizerState> SliceOptimizerState(const OptimizerState& state,
                                                   size_t begin, size_t end) {
  RETURN_IF_ERROR(ValidateOptimizerState(state));
  if (begin > end || end > state.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer state slice [", begin, ", ", end,
                     ") is not inside [0, ", state.size, ")"));
  }
  OptimizerState out;
  out.kind = state.kind;
  out.step = state.step;
  out.size = end - begin;
  for (const std::vector<float>& buf : state.buffers) {
    out.buffers.emplace_back(buf.begin() + begin, buf.begin() + end);
  }
  return out;
}

absl::StatusOr<OptimizerState> ConcatOptimizerStates(
    absl::Span<const OptimizerState> parts) {
  if (parts.empty()) {
    return absl::InvalidArgumentError("no optimizer states to concatenate");
  }
  OptimizerState out;
  out.kind = parts[0].kind;
  out.step = parts[0].step;
  for (size_t k = 0; k < parts.size(); ++k) {
    RETURN_IF_ERROR(ValidateOptimizerState(parts[k]));
    if (parts[k].kind != out.kind || parts[k].step != out.step) {
      return absl::InvalidArgumentError(absl::StrCat(
          "optimizer state part ", k, " is ", OptimizerKindName(parts[k].kind),
          " at step ", parts[k].step, " but part 0 is ",
          OptimizerKindName(out.kind), " at step ", out.step));
    }
    out.size += parts[k].size;
  }
  out.buffers.resize(NumStateBuffers(out.kind));
  for (size_t i = 0; i < out.buffers.size(); ++i) {
    out.buffers[i].reserve(out.size);
    for (const OptimizerState& part : parts) {
      out.buffers[i].insert(out.buffers[i].end(), part.buffers[i].begin(),
                            part.buffers[i].end());
    }
  }
  return out;
}

Optimizer::Optimizer(const OptimizerConfig& config, size_t size)
    : config_(config), size_(size) {}

absl::StatusOr<Optimizer> Optimizer::Create(const OptimizerConfig& config,
                                            size_t size) {
  RETURN_IF_ERROR(ValidateOptimizerConfig(config));
  Optimizer opt(config, size);
  try {
    opt.buffers_.assign(NumStateBuffers(config.kind),
                        std::vector<float>(size, 0.0f));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot allocate optimizer state for ", size, " parameters"));
  }
  return opt;
}

absl::StatusOr<Optimizer> Optimizer::CreateByName(absl::string_view name,
                                                  OptimizerConfig config,
                                                  size_t size) {
  ASSIGN_OR_RETURN(config.kind, ParseOptimizerKind(name));
  return Create(config, size);
}

absl::Status Optimizer::Step(absl::Span<float> params,
                             absl::Span<const float> grads, ComputePool* pool) {
  if (params.size() != size_ || grads.size() != size_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "optimizer step over ", size_, " parameters got ", params.size(),
        " parameters and ", grads.size(), " gradients"));
  }
  if (FloatSpansOverlap(params.data(), params.size(), grads.data(),
                        grads.size())) {
    return absl::InvalidArgumentError(
        "optimizer step: parameter and gradient buffers overlap");
  }
  // Elements [b, e): every update is element-wise, so how the range is cut
  // does not change a bit.
  ParallelFor(pool, size_, kMinPartElements, [&](size_t b, size_t e) {
    UpdateRange(b, params.data() + b, grads.data() + b, e - b);
  });
  ++step_;
  return absl::OkStatus();
}

absl::Status Optimizer::StepRange(size_t begin, absl::Span<float> params,
                                  absl::Span<const float> grads) {
  if (params.size() != grads.size() || begin > size_ ||
      params.size() > size_ - begin) {
    return absl::InvalidArgumentError(absl::StrCat(
        "optimizer step over ", size_, " parameters got a range of ",
        params.size(), " parameters and ", grads.size(),
        " gradients at element ", begin));
  }
  if (FloatSpansOverlap(params.data(), params.size(), grads.data(),
                        grads.size())) {
    return absl::InvalidArgumentError(
        "optimizer step: parameter and gradient buffers overlap");
  }
  UpdateRange(begin, params.data(), grads.data(), params.size());
  return absl::OkStatus();
}

void Optimizer::UpdateRange(size_t begin, float* p, const float* g, size_t n) {
  switch (config_.kind) {
    case OptimizerKind::kSgd:
      SgdStep(config_, p, g, n);
      break;
    case OptimizerKind::kMomentum:
      MomentumStep(config_, step_ == 0, p, g, buffers_[0].data() + begin, n);
      break;
    case OptimizerKind::kAdam:
    case OptimizerKind::kAdamW:
      AdamStep(config_, step_ + 1, p, g, buffers_[0].data() + begin,
               buffers_[1].data() + begin, n);
      break;
    case OptimizerKind::kSum:
      std::memcpy(p, g, n * sizeof(float));
      break;
  }
}

absl::Status Optimizer::SetLearningRate(double lr) {
  OptimizerConfig next = config_;
  next.lr = lr;
  RETURN_IF_ERROR(ValidateOptimizerConfig(next));
  config_ = next;
  return absl::OkStatus();
}

absl::Span<const float> Optimizer::state_buffer(size_t i) const {
  if (i >= buffers_.size()) return {};
  return absl::MakeConstSpan(buffers_[i]);
}

OptimizerState Optimizer::ExportState() const {
  OptimizerState state;
  state.kind = config_.kind;
  state.step = step_;
  state.size = size_;
  state.buffers = buffers_;
  return state;
}

absl::Status Optimizer::ImportState(const OptimizerState& state) {
  RETURN_IF_ERROR(ValidateOptimizerState(state));
  if (state.kind != config_.kind || state.size != size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer state is ", OptimizerKindName(state.kind),
                     " over ", state.size, " parameters; this optimizer is ",
                     OptimizerKindName(config_.kind), " over ", size_));
  }
  std::vector<std::vector<float>> copy;
  try {
    copy = state.buffers;
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot allocate optimizer state for ", size_, " parameters"));
  }
  buffers_ = std::move(copy);
  step_ = state.step;
  return absl::OkStatus();
}

}  // namespace gradsync
