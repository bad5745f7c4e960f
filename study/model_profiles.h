// The parameter tensors of published networks, for the synthetic model's
// `--model-profile`: per tensor, its parameter count (the size of its
// gradient) and its forward FLOPs per sample (the share of backward time
// spent before its gradient is ready). With a profile, a synthetic job's
// gradient has the network's layer sizes in its order, and backward
// reports them last layer first at the times the network's compute would,
// so bucketing, overlap and PS sharding behave as they do for the real
// network, without its compute.
//
// The tensors are computed from each architecture's definition, not
// typed in:
//   resnet50    torchvision's ResNet-50 (v1.5: stride on the 3x3), 224x224
//               input: 161 tensors, 25,557,032 parameters (the published
//               25.6M);
//   vgg16       torchvision's VGG-16 (no batch norm), 224x224: 32 tensors,
//               138,357,544 parameters (138M);
//   bert-large  BERT-large, uncased (30,522 words, 24 layers of 1,024, 16
//               heads, 4,096 wide, 512 positions), the encoder and pooler,
//               sequence length 128: 391 tensors, 335,141,888 parameters
//               (published as 340M).
// Biases and norm parameters count their elements and no FLOPs; BERT's
// embeddings are lookups (no FLOPs); its attention's two sequence-by-
// sequence products are counted with the attention output projection.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_STUDY_MODEL_PROFILES_H_
#define GRADSYNC_STUDY_MODEL_PROFILES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

struct ProfileTensor {
  std::string name;    // "layer3.2.conv2.weight"
  int64_t params = 0;  // elements of the tensor (and its gradient)
  double flops = 0;    // forward multiply-adds per sample
};

// "resnet50", "vgg16", "bert-large".
std::vector<std::string> ModelProfileNames();

// The tensors of `name` in forward order. INVALID_ARGUMENT naming the
// known profiles for any other name.
[[nodiscard]] absl::StatusOr<std::vector<ProfileTensor>> ModelProfile(
    absl::string_view name);

// Each tensor's parameters times `scale`, rounded, at least 1 (so every
// layer keeps its place in the order). INVALID_ARGUMENT for a scale that
// is not in (0, 1].
[[nodiscard]] absl::StatusOr<std::vector<size_t>> ScaledLayerFloats(
    const std::vector<ProfileTensor>& tensors, double scale);

// The sum of the tensors' parameters.
int64_t TotalParams(const std::vector<ProfileTensor>& tensors);

}  // namespace gradsync

#endif  // GRADSYNC_STUDY_MODEL_PROFILES_H_
