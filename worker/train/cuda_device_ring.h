// CudaDeviceRing: the DeviceRing (device_ring.h) of a CudaTrainModel: the
// NCCL ring over the model's device gradient buffer, with a CudaOptimizer
// whose state stays on the device. Built when both the CUDA kernels and the
// NCCL backend are (GRADSYNC_HAVE_CUDA_KERNELS and GRADSYNC_HAVE_NCCL);
// CudaTrainModel::StartDeviceRing creates it.
//
// Ordering, per step (no host round trip until FinishStep):
//   compute stream:  backward layer L ─► record ready ─► layer L-1 ─► ...
//                                  │
//   NCCL stream:                   └─(wait event)─► ncclAllReduce(bucket)
// A bucket is issued when its last layer is reported; the NCCL stream
// first waits for the model's ready event (NcclWaitEvent), recorded after
// every kernel that wrote the bucket. FinishStep waits on the host for the
// buckets' completion events, so the optimizer kernels, enqueued on the
// compute stream afterwards, read the summed gradients; the next step's
// passes follow them on the same stream.
//
// 16-bit gradients (options.wire_type kBFloat16 / kFloat16): a bucket is
// rounded into a 16-bit device copy by a kernel on the compute stream
// (half_kernels.h: half.h's rounding and fp16 clamp), after the backward
// kernels that wrote it; the ready event is recorded again after that
// kernel, so the ncclAllReduce (ncclBfloat16 / ncclFloat16) waits for it.
// Once FinishStep saw a bucket complete, a kernel on the compute stream
// widens its sums back into the fp32 gradient, before the optimizer
// kernels enqueued after it. NCCL's all-reduce leaves the same bits on
// every rank, so the ranks stay bitwise equal.
//
// Errors: Create returns the CUDA/NCCL error naming the device, or
// INVALID_ARGUMENT for a state of the wrong size or kind.
// Threading: as DeviceRing.
#ifndef GRADSYNC_WORKER_TRAIN_CUDA_DEVICE_RING_H_
#define GRADSYNC_WORKER_TRAIN_CUDA_DEVICE_RING_H_

#include <memory>

#include "absl/status/statusor.h"
#include "models/mlp/cuda_train_model.h"
#include "worker/train/device_ring.h"

namespace gradsync {

// Uploads model->params() to the device, imports options.state, and makes
// the model device-resident until the result is destroyed.
[[nodiscard]] absl::StatusOr<std::unique_ptr<DeviceRing>> CreateCudaDeviceRing(
    CudaTrainModel* model, DeviceRingOptions options);

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_TRAIN_CUDA_DEVICE_RING_H_
