#include "common/model_init/mlp_layout.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/model_init/portable_random.h"

namespace gradsync {
namespace {

constexpr size_t kMaxSize = std::numeric_limits<size_t>::max();

// a + b, or an error when it overflows.
bool AddOverflows(size_t a, size_t b, size_t* sum) {
  if (a > kMaxSize - b) return true;
  *sum = a + b;
  return false;
}

// Fills out[0..n) with elements [first, first + n) of a U(-bound, bound)
// stream.
void FillUniform(uint64_t stream_seed, float bound, size_t first, size_t n,
                 float* out) {
  for (size_t j = 0; j < n; ++j) {
    const float u = BitsToFloat01(SplitMix64At(stream_seed, first + j));
    // 2u - 1 is exact on the 2^-24 grid; the result lies in [-bound, bound).
    out[j] = (2.0f * u - 1.0f) * bound;
  }
}

}  // namespace

absl::StatusOr<MlpLayout> MlpLayout::Create(
    absl::Span<const size_t> layer_sizes) {
  const std::string shown = absl::StrJoin(layer_sizes, ", ");
  if (layer_sizes.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("an MLP needs at least an input and an output size, got {",
                     shown, "}"));
  }
  MlpLayout layout;
  layout.sizes_.assign(layer_sizes.begin(), layer_sizes.end());
  for (size_t i = 0; i < layer_sizes.size(); ++i) {
    const size_t n = layer_sizes[i];
    if (n == 0 || n > static_cast<size_t>(INT_MAX)) {
      return absl::InvalidArgumentError(
          absl::StrCat("MLP layer size ", i, " is ", n, " in {", shown,
                       "}: each size must be in [1, ", INT_MAX, "]"));
    }
    layout.max_width_ = std::max(layout.max_width_, n);
  }
  size_t offset = 0;
  for (size_t l = 0; l + 1 < layer_sizes.size(); ++l) {
    LayerSlice slice;
    slice.in = layer_sizes[l];
    slice.out = layer_sizes[l + 1];
    slice.weight_offset = offset;
    const bool overflow =
        slice.out > kMaxSize / slice.in ||
        AddOverflows(offset, slice.out * slice.in, &slice.bias_offset) ||
        AddOverflows(slice.bias_offset, slice.out, &offset);
    if (overflow) {
      return absl::InvalidArgumentError(absl::StrCat(
          "MLP {", shown, "} has more parameters than size_t can count"));
    }
    layout.layers_.push_back(slice);
  }
  layout.num_parameters_ = offset;
  return layout;
}

absl::Status InitializeParameters(const MlpLayout& layout, uint64_t seed,
                                  size_t begin, absl::Span<float> out) {
  const size_t total = layout.num_parameters();
  if (begin > total || out.size() > total - begin) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter slice [", begin, ", ", begin + out.size(),
                     ") is not inside the model's [0, ", total, ")"));
  }
  const size_t end = begin + out.size();
  for (size_t l = 0; l < layout.num_layers(); ++l) {
    const LayerSlice& s = layout.layer(l);
    if (s.end() <= begin || s.begin() >= end) continue;
    const float bound =
        static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.in)));
    // Intersect [begin, end) with W_l = [weight_offset, bias_offset) and
    // b_l = [bias_offset, end()).
    const size_t w_lo = std::max(begin, s.weight_offset);
    const size_t w_hi = std::min(end, s.bias_offset);
    if (w_lo < w_hi) {
      FillUniform(DeriveSeed(seed, 2 * l), bound, w_lo - s.weight_offset,
                  w_hi - w_lo, out.data() + (w_lo - begin));
    }
    const size_t b_lo = std::max(begin, s.bias_offset);
    const size_t b_hi = std::min(end, s.end());
    if (b_lo < b_hi) {
      FillUniform(DeriveSeed(seed, 2 * l + 1), bound, b_lo - s.bias_offset,
                  b_hi - b_lo, out.data() + (b_lo - begin));
    }
  }
  return absl::OkStatus();
}

}  // namespace gradsync
