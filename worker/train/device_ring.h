// DeviceRing: the ring path of a rank whose parameters, gradients and
// optimizer state stay in device memory: an mlp on a CUDA device with the
// NCCL backend (JobSpec.ring_backend "nccl", or "auto" on cuda). What the
// trainer sees of it, free of CUDA types; the implementation is
// cuda_device_ring.h.
//
// Per step, on the rank's thread:
//   sync()->BeginStep(step, epoch);
//   model->ForwardBackward(..., ready);   // ready ranges are DEVICE ranges:
//                                         // each full bucket is all-reduced
//                                         // with ncclAllReduce on the NCCL
//                                         // stream, ordered after the
//                                         // backward kernels by a CUDA event
//   sync()->FinishStep(scalars, deadline);  // waits for the buckets; the
//                                           // host scalars are summed over
//                                           // the job's TCP communicator
//   OptimizerStep();                      // the optimizer kernels, on the
//                                         // compute stream
// While a DeviceRing lives the model is DEVICE-RESIDENT: its passes read the
// device parameters (no upload from params()) and params() (the host
// mirror) is stale until DownloadParams. Destroying the DeviceRing makes
// the model host-resident again, with the mirror as of the last
// DownloadParams: download first (a switch to the PS does, to seed the
// shards). The NCCL communicator is destroyed with it (a switch back to the
// ring builds a new one).
//
// Errors: those of the NCCL communicator and the CUDA calls, naming the
// device. After an Abort, sync() fails with ABORTED; the calls that touch
// only the device (OptimizerStep, DownloadParams, HashParams,
// ExportOptimizerState) still run.
// Threading: the rank's thread; Abort from any thread.
#ifndef GRADSYNC_WORKER_TRAIN_DEVICE_RING_H_
#define GRADSYNC_WORKER_TRAIN_DEVICE_RING_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collectives/communicator.h"
#include "common/optimizer.h"
#include "worker/train/sync_strategy.h"

namespace gradsync {

// Makes the device communicator of the ring path that starts before step
// `step` (every rank calls it for the same step; a new communicator each
// time: a unique id is good for one). Set by the daemon (an NCCL
// communicator through the job's store); tests use an in-memory store.
using DeviceCommFactory =
    std::function<absl::StatusOr<std::unique_ptr<Communicator>>(
        int64_t step, absl::Time deadline)>;

struct DeviceRingOptions {
  // The device communicator (owned from now on) and the host one that
  // carries the step's scalars (borrowed; it must outlive the DeviceRing).
  std::unique_ptr<Communicator> device_comm;
  Communicator* host_comm = nullptr;
  OptimizerConfig optimizer;
  // The optimizer state to continue from (after a switch from the PS);
  // null: a fresh optimizer.
  const OptimizerState* state = nullptr;
  size_t bucket_bytes = 0;
  // Gradients on the wire (JobSpec grad_dtype): kFloat32, or kBFloat16 /
  // kFloat16, rounded into a 16-bit device copy by a kernel before each
  // ncclAllReduce and widened back after it (cuda_device_ring.h).
  DataType wire_type = DataType::kFloat32;
};

class DeviceRing {
 public:
  virtual ~DeviceRing() = default;

  // The step's gradient synchronisation (ring_sync.h over device buckets).
  virtual GradientSync* sync() = 0;
  // One optimizer step on the device with the summed gradients (after
  // sync()->FinishStep returned OK).
  [[nodiscard]] virtual absl::Status OptimizerStep() = 0;
  // Copies the device parameters into the model's params() (after the
  // work already enqueued), for checkpoints, the PS and the end of the run.
  [[nodiscard]] virtual absl::Status DownloadParams() = 0;
  // HashParameters of the device parameters (after the work already
  // enqueued), computed on the device: the per-step hash copies 8 bytes,
  // not the parameters.
  [[nodiscard]] virtual absl::StatusOr<uint64_t> HashParams() = 0;
  // The optimizer state, copied to the host.
  [[nodiscard]] virtual absl::StatusOr<OptimizerState>
  ExportOptimizerState() = 0;
  // Aborts the device communicator (a pending all-reduce fails).
  virtual void Abort(const absl::Status& reason) = 0;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_TRAIN_DEVICE_RING_H_
