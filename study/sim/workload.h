// What one worker computes in a step, for the simulator: the layers of a
// network in forward order, each with its gradient's element count and its
// backward time, and when each gradient element becomes final.
//
// From a model profile (study/model_profiles.h), compute is one of:
//   - derived from FLOPs: the profile counts forward multiply-adds per
//     sample (2 FLOPs each); backward costs twice the forward (the
//     gradients of the inputs and of the weights), so a layer's backward
//     takes 2 * 2 * MACs * batch / (sustained TFLOP/s * 1e12) seconds, and
//     the forward 2 * MACs * batch / (TFLOP/s * 1e12) in all;
//   - a given backward total (the lab's --compute-ms), spread over the
//     layers by their FLOP share (by their element share when the profile
//     counts no FLOPs), with no forward: what the synthetic model emulates
//     (worker/model/synthetic.h).
// --profile-scale multiplies every layer's parameters (rounded, at least
// one: common's ScaledLayerFloats) and its FLOPs.
//
// Timeline: the step starts with the forward at t = 0; backward then runs
// the layers from the last to the first, and a layer's gradient is final
// when its own backward ends.
//
// Errors: INVALID_ARGUMENT for a scale outside (0, 1], a batch < 1, no
// compute source or a negative one, an unknown GPU name.
// Threading: plain data and pure functions; thread-safe.
#ifndef GRADSYNC_STUDY_SIM_WORKLOAD_H_
#define GRADSYNC_STUDY_SIM_WORKLOAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "study/model_profiles.h"

namespace gradsync {
namespace sim {

struct SimLayer {
  std::string name;
  int64_t elements = 0;   // of its gradient
  double backward_s = 0;  // its share of backward
};

struct SimWorkload {
  std::vector<SimLayer> layers;  // forward order
  double forward_s = 0;

  double backward_s() const;
  int64_t elements() const;
};

struct ProfileCompute {
  double scale = 1;  // (0, 1]
  int batch = 32;    // samples per worker per step
  // > 0: compute from FLOPs at this sustained rate (the top).
  double sustained_tflops = 0;
  // >= 0: this backward in all, by FLOP share, no forward (the top);
  // takes precedence over sustained_tflops.
  double backward_total_s = -1;
};

// The profile's layers with `compute` (the top). INVALID_ARGUMENT as at
// the top, or when neither compute source is set.
[[nodiscard]] absl::StatusOr<SimWorkload> WorkloadFromProfile(
    const std::vector<ProfileTensor>& tensors, const ProfileCompute& compute);

// Dense bf16/fp16 tensor-core peaks from the vendors' datasheets, in
// TFLOP/s: "v100" 125 (SXM2, fp16), "a100" 312 (SXM, bf16), "h100" 989
// (SXM, bf16). A step sustains a fraction of its peak (the model FLOPs
// utilisation); the caller multiplies. INVALID_ARGUMENT naming the known
// GPUs for any other name.
[[nodiscard]] absl::StatusOr<double> GpuPeakTflops(absl::string_view name);
std::vector<std::string> GpuNames();

// When each gradient element is final, for a workload laid out flat in
// forward order (layer 0 at element 0), as the trainer's flat buffer is.
class GradientTimeline {
 public:
  explicit GradientTimeline(const SimWorkload& workload);

  int64_t elements() const { return total_; }
  double forward_s() const { return forward_s_; }
  // When the backward of every layer has ended.
  double backward_end_s() const { return backward_end_s_; }
  // When element `e` (0 <= e < elements()) is final: the end of the
  // backward of the layer holding it.
  double ReadyAt(int64_t e) const;
  // The layers' backward spans, [start, end), in forward order.
  struct Span {
    double start_s = 0;
    double end_s = 0;
  };
  const std::vector<Span>& layer_spans() const { return spans_; }
  // Each layer's first element, in forward order.
  const std::vector<int64_t>& layer_begins() const { return begin_; }

 private:
  std::vector<int64_t> begin_;  // each layer's first element
  std::vector<Span> spans_;
  int64_t total_ = 0;
  double forward_s_ = 0;
  double backward_end_s_ = 0;
};

// A slice [begin, end) of the flat gradient and when all of it is final.
struct GradRange {
  int64_t begin = 0;
  int64_t end = 0;
  double ready_s = 0;
  int64_t size() const { return end - begin; }
};

// The all-reduce buckets in launch order: slices cut from the end of the
// gradient toward its start, the first of at most `first_elements` (0:
// `elements` like the others), the others of at most `elements` (>= 1),
// as the trainer's Bucketer cuts them; each is ready when its lowest
// element is (backward finishes the higher ones first).
std::vector<GradRange> CutBuckets(const GradientTimeline& timeline,
                                  int64_t elements, int64_t first_elements);

}  // namespace sim
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_SIM_WORKLOAD_H_
