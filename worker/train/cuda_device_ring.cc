#include "worker/train/cuda_device_ring.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "collectives/nccl/nccl_communicator.h"
#include "common/status_macros.h"
#include "worker/model/cuda/cuda_optimizer.h"
#include "worker/model/cuda/cuda_resources.h"
#include "worker/model/cuda/cuda_status.h"
#include "worker/model/cuda/half_kernels.h"
#include "worker/train/ring_sync.h"

namespace gradsync {
namespace {

class CudaDeviceRing final : public DeviceRing {
 public:
  CudaDeviceRing(CudaTrainModel* model, std::unique_ptr<Communicator> comm,
                 gpu::DeviceMemory wire, std::unique_ptr<RingSync> sync,
                 CudaOptimizer optimizer)
      : model_(model),
        comm_(std::move(comm)),
        wire_(std::move(wire)),
        optimizer_(std::move(optimizer)),
        sync_(std::move(sync)) {}

  // The sync goes first (it may wait for collectives in flight), then the
  // communicator, then the 16-bit copy they used; the model is
  // host-resident again.
  ~CudaDeviceRing() override {
    sync_.reset();
    comm_.reset();
    wire_ = gpu::DeviceMemory();
    model_->set_device_resident(false);
  }

  GradientSync* sync() override { return sync_.get(); }

  [[nodiscard]] absl::Status OptimizerStep() override {
    CudaMlp& mlp = model_->mlp();
    return OnDevice(
        optimizer_.Step(mlp.params_device(), mlp.grads_device(), mlp.stream()));
  }

  [[nodiscard]] absl::Status DownloadParams() override {
    return model_->DownloadParams();
  }

  [[nodiscard]] absl::StatusOr<uint64_t> HashParams() override {
    absl::StatusOr<uint64_t> hash = model_->mlp().HashParams();
    if (!hash.ok()) return OnDevice(hash.status());
    return hash;
  }

  [[nodiscard]] absl::StatusOr<OptimizerState> ExportOptimizerState() override {
    absl::StatusOr<OptimizerState> state =
        optimizer_.ExportState(model_->mlp().stream());
    if (!state.ok()) return OnDevice(state.status());
    return state;
  }

  void Abort(const absl::Status& reason) override { comm_->Abort(reason); }

 private:
  [[nodiscard]] absl::Status OnDevice(const absl::Status& status) const {
    return Annotate(status, absl::StrCat("cuda:", model_->mlp().device()));
  }

  CudaTrainModel* const model_;
  std::unique_ptr<Communicator> comm_;
  gpu::DeviceMemory wire_;  // the 16-bit gradients (empty for fp32)
  CudaOptimizer optimizer_;
  std::unique_ptr<RingSync> sync_;
};

// Rounding and widening on the compute stream (see the header): rounding
// follows the backward kernels that wrote the bucket and re-records the
// ready event the NCCL stream then waits for; widening follows the
// all-reduce the host saw complete and precedes the optimizer kernels.
RingSyncOptions::WireStaging WireStaging(CudaMlp* mlp, DataType type,
                                         uint16_t* buffer) {
  RingSyncOptions::WireStaging staging;
  staging.buffer = buffer;
  const bool bf16 = type == DataType::kBFloat16;
  staging.narrow = [mlp, bf16](const float* from, uint16_t* to,
                               size_t n) -> absl::Status {
    gpu::ScopedCudaDevice scoped(mlp->device());
    RETURN_IF_ERROR(scoped.status());
    cudaStream_t stream = mlp->stream();
    RETURN_IF_ERROR(
        gpu::CudaStatus(bf16 ? gpu::LaunchFloatsToBFloat16(from, to, n, stream)
                             : gpu::LaunchFloatsToFloat16(from, to, n, stream),
                        "16-bit rounding kernel"));
    return gpu::CudaStatus(cudaEventRecord(mlp->ready_event(), stream),
                           "cudaEventRecord after the 16-bit rounding");
  };
  staging.widen = [mlp, bf16](const uint16_t* from, float* to,
                              size_t n) -> absl::Status {
    gpu::ScopedCudaDevice scoped(mlp->device());
    RETURN_IF_ERROR(scoped.status());
    return gpu::CudaStatus(
        bf16 ? gpu::LaunchBFloat16ToFloats(from, to, n, mlp->stream())
             : gpu::LaunchFloat16ToFloats(from, to, n, mlp->stream()),
        "16-bit widening kernel");
  };
  return staging;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceRing>> CreateCudaDeviceRing(
    CudaTrainModel* model, DeviceRingOptions options) {
  if (options.device_comm == nullptr || options.host_comm == nullptr) {
    return absl::InvalidArgumentError(
        "the device ring needs a device and a host communicator");
  }
  CudaMlp& mlp = model->mlp();
  const std::string where = absl::StrCat("cuda:", mlp.device());
  // The host mirror is the master copy until now (initial parameters, or
  // the parameters fetched from the PS).
  RETURN_IF_ERROR(model->UploadParams());
  absl::StatusOr<CudaOptimizer> optimizer = CudaOptimizer::Create(
      options.optimizer, mlp.num_parameters(), mlp.device());
  if (!optimizer.ok()) return Annotate(optimizer.status(), where);
  if (options.state != nullptr) {
    RETURN_IF_ERROR(
        Annotate(optimizer->ImportState(*options.state, mlp.stream()),
                 absl::StrCat(where, ": optimizer state")));
  }
  Communicator* const comm = options.device_comm.get();
  RingSyncOptions sync_options;
  sync_options.bucket_bytes = options.bucket_bytes;
  sync_options.scalar_comm = options.host_comm;
  cudaEvent_t ready = mlp.ready_event();
  sync_options.before_launch = [comm, ready]() {
    return NcclWaitEvent(comm, ready);
  };
  gpu::DeviceMemory wire;
  if (options.wire_type != DataType::kFloat32) {
    absl::StatusOr<gpu::DeviceMemory> allocated = gpu::DeviceMemory::Allocate(
        mlp.device(), mlp.num_parameters() * sizeof(uint16_t));
    if (!allocated.ok()) {
      return Annotate(allocated.status(),
                      absl::StrCat(where, ": 16-bit gradient buffer"));
    }
    wire = *std::move(allocated);
    sync_options.wire_type = options.wire_type;
    sync_options.wire_staging =
        WireStaging(&mlp, options.wire_type, wire.as<uint16_t>());
  }
  ASSIGN_OR_RETURN(std::unique_ptr<RingSync> sync,
                   RingSync::Create(comm, mlp.grads_device(), sync_options));
  auto ring = std::make_unique<CudaDeviceRing>(
      model, std::move(options.device_comm), std::move(wire), std::move(sync),
      *std::move(optimizer));
  model->set_device_resident(true);
  return std::unique_ptr<DeviceRing>(std::move(ring));
}

}  // namespace gradsync
