// MlpLayout: where each layer of a multi-layer perceptron lives in gradsync's
// flat fp32 parameter buffer, and the deterministic initial values of any
// slice of that buffer.
//
// Layer l (0-based, L = layer_sizes.size() - 1 linear layers) maps
// layer_sizes[l] inputs to layer_sizes[l+1] outputs, with a weight matrix W_l
// stored row-major as [out][in] (PyTorch nn.Linear's layout) followed by its
// bias b_l [out]. Layers are stored in forward order:
//
//   | W_0 b_0 | W_1 b_1 | ... | W_{L-1} b_{L-1} |
//   0                                           num_parameters()
//
// Backward produces layer L-1's gradient first, so gradient readiness grows
// contiguously from the end of the buffer toward its beginning (see
// gradient_ready.h): the slice [layer(l).begin, num_parameters()) is final
// as soon as layers l..L-1 are done.
//
// Initialisation follows nn.Linear's default (Kaiming-uniform with
// a = sqrt(5)): W_l and b_l ~ U(-1/sqrt(in), 1/sqrt(in)), drawn from
// SplitMix64 streams (common/model_init/portable_random.h): element j of W_l is
// a pure function of (seed, 2l, j), of b_l of (seed, 2l+1, j). Every rank thus
// gets bitwise identical parameters, and a PS shard can generate just its
// slice with InitializeParameters.
//
// Sizes are size_t throughout (models up to billions of parameters); each
// single dimension must fit the BLAS's int.
//
// Errors: INVALID_ARGUMENT for fewer than two sizes, a zero size, a size
// over INT_MAX or a parameter count that overflows size_t; for slices
// outside [0, num_parameters()). Threading: an MlpLayout is immutable and
// may be shared.
//
// Example:
//   ASSIGN_OR_RETURN(MlpLayout layout, MlpLayout::Create({784, 256, 10}));
//   std::vector<float> shard(end - begin);
//   RETURN_IF_ERROR(InitializeParameters(layout, seed, begin,
//                                        absl::MakeSpan(shard)));
#ifndef GRADSYNC_COMMON_MODEL_INIT_MLP_LAYOUT_H_
#define GRADSYNC_COMMON_MODEL_INIT_MLP_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace gradsync {

// One linear layer's place in the flat buffer.
struct LayerSlice {
  size_t in = 0;             // fan-in
  size_t out = 0;            // fan-out
  size_t weight_offset = 0;  // W: out*in floats, row-major [out][in]
  size_t bias_offset = 0;    // b: out floats, right after W
  size_t begin() const { return weight_offset; }
  size_t end() const { return bias_offset + out; }
};

class MlpLayout {
 public:
  [[nodiscard]] static absl::StatusOr<MlpLayout> Create(
      absl::Span<const size_t> layer_sizes);

  const std::vector<size_t>& layer_sizes() const { return sizes_; }
  size_t num_layers() const { return layers_.size(); }
  const LayerSlice& layer(size_t l) const { return layers_[l]; }
  size_t num_parameters() const { return num_parameters_; }
  size_t input_size() const { return sizes_.front(); }
  size_t num_classes() const { return sizes_.back(); }
  size_t max_width() const { return max_width_; }

 private:
  MlpLayout() = default;

  std::vector<size_t> sizes_;
  std::vector<LayerSlice> layers_;
  size_t num_parameters_ = 0;
  size_t max_width_ = 0;
};

// Writes the initial values of flat elements [begin, begin + out.size())
// for `seed` into `out`.
[[nodiscard]] absl::Status InitializeParameters(const MlpLayout& layout,
                                                uint64_t seed, size_t begin,
                                                absl::Span<float> out);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_MODEL_INIT_MLP_LAYOUT_H_
