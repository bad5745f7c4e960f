#include "worker/train/cuda_device_ring.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "collectives/nccl/nccl_communicator.h"
#include "common/status_macros.h"
#include "worker/model/cuda/cuda_optimizer.h"
#include "worker/train/ring_sync.h"

namespace gradsync {
namespace {

class CudaDeviceRing final : public DeviceRing {
 public:
  CudaDeviceRing(CudaTrainModel* model, std::unique_ptr<Communicator> comm,
                 std::unique_ptr<RingSync> sync, CudaOptimizer optimizer)
      : model_(model),
        comm_(std::move(comm)),
        optimizer_(std::move(optimizer)),
        sync_(std::move(sync)) {}

  // The sync goes first (it may wait for collectives in flight), then the
  // communicator; the model is host-resident again.
  ~CudaDeviceRing() override {
    sync_.reset();
    comm_.reset();
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
  CudaOptimizer optimizer_;
  std::unique_ptr<RingSync> sync_;
};

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
  ASSIGN_OR_RETURN(std::unique_ptr<RingSync> sync,
                   RingSync::Create(comm, mlp.grads_device(), sync_options));
  auto ring =
      std::make_unique<CudaDeviceRing>(model, std::move(options.device_comm),
                                       std::move(sync), *std::move(optimizer));
  model->set_device_resident(true);
  return std::unique_ptr<DeviceRing>(std::move(ring));
}

}  // namespace gradsync
