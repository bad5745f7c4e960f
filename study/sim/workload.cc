#include "study/sim/workload.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace gradsync {
namespace sim {
namespace {

struct GpuPeak {
  const char* name;
  double tflops;
};

// Datasheet dense tensor-core peaks (workload.h).
constexpr GpuPeak kGpuPeaks[] = {
    {"v100", 125},
    {"a100", 312},
    {"h100", 989},
};

}  // namespace

double SimWorkload::backward_s() const {
  double total = 0;
  for (const SimLayer& l : layers) total += l.backward_s;
  return total;
}

int64_t SimWorkload::elements() const {
  int64_t total = 0;
  for (const SimLayer& l : layers) total += l.elements;
  return total;
}

absl::StatusOr<SimWorkload> WorkloadFromProfile(
    const std::vector<ProfileTensor>& tensors, const ProfileCompute& compute) {
  if (compute.batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch is ", compute.batch, "; it must be >= 1"));
  }
  const bool given = compute.backward_total_s >= 0;
  if (!given && !(compute.sustained_tflops > 0)) {
    return absl::InvalidArgumentError(
        "no compute for the profile: give a sustained TFLOP/s (> 0) or a "
        "backward time (>= 0)");
  }
  if (!std::isfinite(compute.backward_total_s) ||
      !std::isfinite(compute.sustained_tflops)) {
    return absl::InvalidArgumentError("the compute must be finite");
  }
  ASSIGN_OR_RETURN(const std::vector<size_t> floats,
                   ScaledLayerFloats(tensors, compute.scale));
  double total_macs = 0;
  double total_elements = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    total_macs += tensors[i].flops * compute.scale;
    total_elements += static_cast<double>(floats[i]);
  }
  SimWorkload w;
  w.layers.reserve(tensors.size());
  const double flop_s = compute.sustained_tflops * 1e12;
  for (size_t i = 0; i < tensors.size(); ++i) {
    SimLayer layer;
    layer.name = tensors[i].name;
    layer.elements = static_cast<int64_t>(floats[i]);
    const double macs = tensors[i].flops * compute.scale;
    if (given) {
      const double share = total_macs > 0 ? macs / total_macs
                                          : static_cast<double>(floats[i]) /
                                                std::max(1.0, total_elements);
      layer.backward_s = compute.backward_total_s * share;
    } else {
      // 2 FLOPs per multiply-add, backward = 2 x forward.
      layer.backward_s = 4 * macs * compute.batch / flop_s;
      w.forward_s += 2 * macs * compute.batch / flop_s;
    }
    w.layers.push_back(std::move(layer));
  }
  return w;
}

absl::StatusOr<double> GpuPeakTflops(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (const GpuPeak& gpu : kGpuPeaks) {
    if (lower == gpu.name) return gpu.tflops;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown GPU '", name, "'; use ", absl::StrJoin(GpuNames(), ", "),
      " or give its sustained TFLOP/s"));
}

std::vector<std::string> GpuNames() {
  std::vector<std::string> names;
  for (const GpuPeak& gpu : kGpuPeaks) names.push_back(gpu.name);
  return names;
}

GradientTimeline::GradientTimeline(const SimWorkload& workload)
    : forward_s_(workload.forward_s) {
  const size_t n = workload.layers.size();
  begin_.resize(n);
  spans_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    begin_[i] = total_;
    total_ += workload.layers[i].elements;
  }
  double t = forward_s_;
  for (size_t i = n; i-- > 0;) {
    spans_[i].start_s = t;
    t += workload.layers[i].backward_s;
    spans_[i].end_s = t;
  }
  backward_end_s_ = t;
}

double GradientTimeline::ReadyAt(int64_t e) const {
  if (begin_.empty()) return forward_s_;
  // The last layer whose first element is <= e.
  const auto it = std::upper_bound(begin_.begin(), begin_.end(), e);
  const size_t layer = it == begin_.begin() ? 0 : (it - begin_.begin()) - 1;
  return spans_[layer].end_s;
}

std::vector<GradRange> CutBuckets(const GradientTimeline& timeline,
                                  int64_t elements, int64_t first_elements) {
  std::vector<GradRange> buckets;
  int64_t end = timeline.elements();
  const int64_t size = std::max<int64_t>(1, elements);
  int64_t cap = first_elements > 0 ? first_elements : size;
  while (end > 0) {
    const int64_t begin = std::max<int64_t>(0, end - cap);
    buckets.push_back({begin, end, timeline.ReadyAt(begin)});
    end = begin;
    cap = size;
  }
  return buckets;
}

}  // namespace sim
}  // namespace gradsync
