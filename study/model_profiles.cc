#include "study/model_profiles.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gradsync {
namespace {

class Builder {
 public:
  // A convolution's weight (k x k x cin x cout, no bias) at an output of
  // out x out.
  void Conv(std::string name, int64_t k, int64_t cin, int64_t cout,
            int64_t out) {
    const int64_t params = k * k * cin * cout;
    Add(std::move(name), params, static_cast<double>(params) * out * out);
  }
  // A norm's weight and bias (or a layer's bias): no FLOPs counted.
  void Vector(std::string name, int64_t n) { Add(std::move(name), n, 0); }
  // A linear layer's weight applied to `tokens` positions.
  void Linear(std::string name, int64_t in, int64_t out, int64_t tokens) {
    Add(std::move(name), in * out, static_cast<double>(in) * out * tokens);
  }
  void Add(std::string name, int64_t params, double flops) {
    tensors_.push_back({std::move(name), params, flops});
  }
  ProfileTensor& back() { return tensors_.back(); }
  std::vector<ProfileTensor> Take() { return std::move(tensors_); }

 private:
  std::vector<ProfileTensor> tensors_;
};

void Norm(Builder& b, const std::string& name, int64_t channels) {
  b.Vector(absl::StrCat(name, ".weight"), channels);
  b.Vector(absl::StrCat(name, ".bias"), channels);
}

std::vector<ProfileTensor> ResNet50() {
  Builder b;
  b.Conv("conv1.weight", 7, 3, 64, 112);
  Norm(b, "bn1", 64);
  const int64_t blocks[] = {3, 4, 6, 3};
  const int64_t planes[] = {64, 128, 256, 512};
  const int64_t size[] = {56, 28, 14, 7};
  int64_t inplanes = 64;
  int64_t in_size = 56;
  for (int layer = 0; layer < 4; ++layer) {
    const int64_t p = planes[layer];
    for (int64_t i = 0; i < blocks[layer]; ++i) {
      const std::string block = absl::StrCat("layer", layer + 1, ".", i);
      // v1.5: the 1x1 runs before the stride, the 3x3 takes it.
      b.Conv(absl::StrCat(block, ".conv1.weight"), 1, inplanes, p,
             i == 0 ? in_size : size[layer]);
      Norm(b, absl::StrCat(block, ".bn1"), p);
      b.Conv(absl::StrCat(block, ".conv2.weight"), 3, p, p, size[layer]);
      Norm(b, absl::StrCat(block, ".bn2"), p);
      b.Conv(absl::StrCat(block, ".conv3.weight"), 1, p, 4 * p, size[layer]);
      Norm(b, absl::StrCat(block, ".bn3"), 4 * p);
      if (i == 0) {
        b.Conv(absl::StrCat(block, ".downsample.0.weight"), 1, inplanes, 4 * p,
               size[layer]);
        Norm(b, absl::StrCat(block, ".downsample.1"), 4 * p);
      }
      inplanes = 4 * p;
    }
    in_size = size[layer];
  }
  b.Linear("fc.weight", 2048, 1000, 1);
  b.Vector("fc.bias", 1000);
  return b.Take();
}

std::vector<ProfileTensor> Vgg16() {
  Builder b;
  // (output channels, output size) per conv; 3x3 convs with bias.
  const std::pair<int64_t, int64_t> convs[] = {
      {64, 224}, {64, 224}, {128, 112}, {128, 112}, {256, 56},
      {256, 56}, {256, 56}, {512, 28},  {512, 28},  {512, 28},
      {512, 14}, {512, 14}, {512, 14}};
  // torchvision's indices in `features` (the ReLUs and pools between).
  const int index[] = {0, 2, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28};
  int64_t cin = 3;
  for (int i = 0; i < 13; ++i) {
    const auto [cout, out] = convs[i];
    const std::string name = absl::StrCat("features.", index[i]);
    b.Conv(absl::StrCat(name, ".weight"), 3, cin, cout, out);
    b.Vector(absl::StrCat(name, ".bias"), cout);
    cin = cout;
  }
  const int64_t fc[][2] = {{512 * 7 * 7, 4096}, {4096, 4096}, {4096, 1000}};
  const int fc_index[] = {0, 3, 6};
  for (int i = 0; i < 3; ++i) {
    const std::string name = absl::StrCat("classifier.", fc_index[i]);
    b.Linear(absl::StrCat(name, ".weight"), fc[i][0], fc[i][1], 1);
    b.Vector(absl::StrCat(name, ".bias"), fc[i][1]);
  }
  return b.Take();
}

std::vector<ProfileTensor> BertLarge() {
  constexpr int64_t kVocab = 30522, kHidden = 1024, kLayers = 24, kInner = 4096,
                    kPositions = 512, kTypes = 2, kSequence = 128;
  Builder b;
  b.Add("embeddings.word_embeddings.weight", kVocab * kHidden, 0);
  b.Add("embeddings.position_embeddings.weight", kPositions * kHidden, 0);
  b.Add("embeddings.token_type_embeddings.weight", kTypes * kHidden, 0);
  Norm(b, "embeddings.LayerNorm", kHidden);
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string layer = absl::StrCat("encoder.layer.", l);
    for (const char* proj : {"query", "key", "value"}) {
      const std::string name = absl::StrCat(layer, ".attention.self.", proj);
      b.Linear(absl::StrCat(name, ".weight"), kHidden, kHidden, kSequence);
      b.Vector(absl::StrCat(name, ".bias"), kHidden);
    }
    const std::string out = absl::StrCat(layer, ".attention.output");
    b.Linear(absl::StrCat(out, ".dense.weight"), kHidden, kHidden, kSequence);
    // Q K^T and the attention-weighted V: 2 L^2 H multiply-adds.
    b.back().flops += 2.0 * kSequence * kSequence * kHidden;
    b.Vector(absl::StrCat(out, ".dense.bias"), kHidden);
    Norm(b, absl::StrCat(out, ".LayerNorm"), kHidden);
    b.Linear(absl::StrCat(layer, ".intermediate.dense.weight"), kHidden, kInner,
             kSequence);
    b.Vector(absl::StrCat(layer, ".intermediate.dense.bias"), kInner);
    b.Linear(absl::StrCat(layer, ".output.dense.weight"), kInner, kHidden,
             kSequence);
    b.Vector(absl::StrCat(layer, ".output.dense.bias"), kHidden);
    Norm(b, absl::StrCat(layer, ".output.LayerNorm"), kHidden);
  }
  b.Linear("pooler.dense.weight", kHidden, kHidden, 1);
  b.Vector("pooler.dense.bias", kHidden);
  return b.Take();
}

}  // namespace

std::vector<std::string> ModelProfileNames() {
  return {"resnet50", "vgg16", "bert-large"};
}

absl::StatusOr<std::vector<ProfileTensor>> ModelProfile(
    absl::string_view name) {
  if (name == "resnet50") return ResNet50();
  if (name == "vgg16") return Vgg16();
  if (name == "bert-large") return BertLarge();
  return absl::InvalidArgumentError(
      absl::StrCat("unknown model profile '", name, "'; use one of ",
                   absl::StrJoin(ModelProfileNames(), ", ")));
}

absl::StatusOr<std::vector<size_t>> ScaledLayerFloats(
    const std::vector<ProfileTensor>& tensors, double scale) {
  if (!(scale > 0 && scale <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile scale ", scale,
                     " is not in (0, 1]; it shrinks every layer "
                     "in proportion"));
  }
  std::vector<size_t> floats;
  floats.reserve(tensors.size());
  for (const ProfileTensor& t : tensors) {
    floats.push_back(static_cast<size_t>(
        std::max<long long>(1, std::llround(t.params * scale))));
  }
  return floats;
}

int64_t TotalParams(const std::vector<ProfileTensor>& tensors) {
  int64_t total = 0;
  for (const ProfileTensor& t : tensors) total += t.params;
  return total;
}

}  // namespace gradsync
