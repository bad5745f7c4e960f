// CudaOptimizer: the optimizers of common/optimizer.h (SGD, momentum with
// dampening/Nesterov, Adam, AdamW, weight decay) on flat fp32 buffers in
// CUDA device memory, with their state (momentum buffer; Adam's m and v)
// on the device too.
//
// Same configuration (OptimizerConfig), same validation and same update
// rules as Optimizer: the per-step scalars are computed on the host exactly
// as Optimizer computes them and the kernels repeat its fp32 operations in
// the same order without FMA contraction, so a CudaOptimizer step gives
// bitwise the parameters and state an Optimizer step gives on the same
// inputs. The state moves through the host OptimizerState type
// (ExportState/ImportState), so it travels unchanged between a CPU
// Optimizer, a CudaOptimizer and the PS shards (SliceOptimizerState).
//
// Ordering: Step only enqueues the update on the caller's stream (the
// step counter advances on the host at once); ExportState/ImportState copy
// on the given stream and return after it has finished, so pass the stream
// of the last Step (or order other streams yourself).
//
// Errors: INVALID_ARGUMENT for a bad configuration or name (as
// Optimizer::Create), buffers of the wrong length, overlapping buffers,
// buffers that are not device memory of device(), or a state that does not
// match kind() and size(); FAILED_PRECONDITION when the device is not
// visible; RESOURCE_EXHAUSTED when device memory runs out; INTERNAL for
// other CUDA failures. Nothing is modified when an error is returned
// before any work was enqueued.
// Threading: not thread-safe; one CudaOptimizer per rank (or shard).
//
// Example (a GPU rank in ring mode):
//   ASSIGN_OR_RETURN(CudaOptimizer adam,
//                    CudaOptimizer::CreateByName("adam", config, n, device));
//   RETURN_IF_ERROR(adam.Step(mlp->params_device(), mlp->grads_device(),
//                             mlp->stream()));
//   ASSIGN_OR_RETURN(OptimizerState state, adam.ExportState(mlp->stream()));
#ifndef GRADSYNC_WORKER_MODEL_CUDA_CUDA_OPTIMIZER_H_
#define GRADSYNC_WORKER_MODEL_CUDA_CUDA_OPTIMIZER_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/optimizer.h"
#include "worker/model/cuda/cuda_resources.h"

namespace gradsync {

class CudaOptimizer {
 public:
  // An optimizer of config.kind over `size` elements on CUDA `device`,
  // state zeroed, step 0.
  [[nodiscard]] static absl::StatusOr<CudaOptimizer> Create(
      const OptimizerConfig& config, size_t size, int device);
  // As Create, with the kind given by name; config.kind is ignored.
  [[nodiscard]] static absl::StatusOr<CudaOptimizer> CreateByName(
      absl::string_view name, OptimizerConfig config, size_t size, int device);

  CudaOptimizer(CudaOptimizer&&) = default;
  CudaOptimizer& operator=(CudaOptimizer&&) = default;
  CudaOptimizer(const CudaOptimizer&) = delete;
  CudaOptimizer& operator=(const CudaOptimizer&) = delete;

  // Enqueues one update of `params` with `grads` on `stream`. Both spans
  // view DEVICE memory of device(), exactly size() floats each, not
  // overlapping. Increments step_count().
  [[nodiscard]] absl::Status Step(absl::Span<float> params,
                                  absl::Span<const float> grads,
                                  cudaStream_t stream);

  // Changes the learning rate for later steps; INVALID_ARGUMENT if
  // negative or not finite.
  [[nodiscard]] absl::Status SetLearningRate(double lr);

  OptimizerKind kind() const { return config_.kind; }
  const OptimizerConfig& config() const { return config_; }
  size_t size() const { return size_; }
  int device() const { return device_; }
  uint64_t step_count() const { return step_; }
  // State buffer `i` < NumStateBuffers(kind()) in device memory (for
  // streaming it without a host copy); empty otherwise.
  absl::Span<const float> device_state_buffer(size_t i) const;

  // A host copy of the state, after the work already on `stream`.
  [[nodiscard]] absl::StatusOr<OptimizerState> ExportState(
      cudaStream_t stream) const;
  // Replaces the state (copied in on `stream`); it must be valid and match
  // kind() and size().
  [[nodiscard]] absl::Status ImportState(const OptimizerState& state,
                                         cudaStream_t stream);

 private:
  CudaOptimizer(const OptimizerConfig& config, size_t size, int device)
      : config_(config), size_(size), device_(device) {}

  // OK when `span` is size() floats of device memory on device_.
  [[nodiscard]] absl::Status CheckDeviceSpan(const void* data, size_t n,
                                             absl::string_view what) const;

  OptimizerConfig config_;
  size_t size_ = 0;
  int device_ = 0;
  uint64_t step_ = 0;
  std::vector<gpu::DeviceMemory> buffers_;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_MODEL_CUDA_CUDA_OPTIMIZER_H_
