#include "collectives/nccl/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "collectives/nccl/cuda_util.h"
#include "collectives/nccl/device_buffer.h"
#include "collectives/nccl/nccl_comm_state.h"
#include "collectives/nccl/nccl_rendezvous.h"
#include "common/status_macros.h"

namespace gradsync {
namespace {

using nccl_internal::AwaitInit;
using nccl_internal::CudaStatus;
using nccl_internal::DiscardCudaError;
using nccl_internal::ExchangeUniqueId;
using nccl_internal::MarkJoined;
using nccl_internal::NcclCommState;
using nccl_internal::NcclStatus;
using nccl_internal::RankRange;
using nccl_internal::ScopedCudaDevice;

ncclDataType_t ToNccl(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      return ncclFloat64;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kBFloat16:
      return ncclBfloat16;
    case DataType::kFloat16:
      return ncclFloat16;
  }
  return ncclFloat32;  // Unreachable: types are validated first.
}

// On one rank the average is the sum (x / 1 == x, bitwise), and NCCL's
// one-rank average kernel before 2.29.7 leaves the tail of a count that its
// blocks do not divide unwritten (NVIDIA/nccl#1950; nccl_collectives_test
// found it on an H100 with pip's NCCL 2.28.9): one rank gets ncclSum, which
// NCCL does as a plain copy.
ncclRedOp_t ToNccl(ReduceOp op, int ranks) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kAvg:
      return ranks == 1 ? ncclSum : ncclAvg;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
  }
  return ncclSum;  // Unreachable: ops are validated first.
}

// "(1024 x float sum)".
std::string Detail(size_t count, DataType type, absl::string_view extra) {
  return absl::StrCat("(", count, " x ", DataTypeName(type),
                      extra.empty() ? "" : " ", extra, ")");
}

// INVALID_ARGUMENT unless `ptr` is device memory on `device` (or managed
// memory), which is what NCCL kernels on that device can read and write.
[[nodiscard]] absl::Status CheckDeviceBuffer(const void* ptr,
                                             absl::string_view role,
                                             absl::string_view op, int device) {
  cudaPointerAttributes attributes{};
  const cudaError_t error = cudaPointerGetAttributes(&attributes, ptr);
  if (error != cudaSuccess) {
    return absl::InvalidArgumentError(
        CudaStatus(error, absl::StrCat(op, ": the ", role,
                                       " buffer is not memory CUDA knows"))
            .message());
  }
  switch (attributes.type) {
    case cudaMemoryTypeManaged:
      return absl::OkStatus();
    case cudaMemoryTypeDevice:
      if (attributes.device == device) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat(
          op, ": the ", role, " buffer lives on CUDA device ",
          attributes.device, " but the communicator uses device ", device));
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(op, ": the ", role,
                       " buffer is host memory; the NCCL backend "
                       "needs device memory on CUDA device ",
                       device, " (see DeviceBuffer)"));
  }
}

// Validates the type and the `send` (unless !check_send) and `recv` buffers
// of a collective over `count` elements. Buffer extents cannot be checked.
[[nodiscard]] absl::Status CheckBuffers(absl::string_view op, const void* send,
                                        bool check_send, void* recv,
                                        size_t count, DataType type,
                                        int device) {
  if (!IsValid(type)) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": invalid data type ", static_cast<int>(type)));
  }
  if (count == 0) return absl::OkStatus();
  if ((check_send && send == nullptr) || recv == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": null ", recv == nullptr ? "recv" : "send",
                     " buffer with ", count, " elements"));
  }
  if (check_send) RETURN_IF_ERROR(CheckDeviceBuffer(send, "send", op, device));
  return CheckDeviceBuffer(recv, "recv", op, device);
}

[[nodiscard]] absl::Status CheckOp(absl::string_view op_name, ReduceOp op) {
  if (IsValid(op)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      op_name, ": invalid reduction operator ", static_cast<int>(op)));
}

// The total of size * count elements must be addressable.
[[nodiscard]] absl::Status CheckBlocks(absl::string_view op, size_t count,
                                       DataType type, int size) {
  const size_t max_elements =
      std::numeric_limits<size_t>::max() / DataTypeSize(type);
  if (count > max_elements / static_cast<size_t>(size)) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": ", size, " blocks of ", count, " elements overflow"));
  }
  return absl::OkStatus();
}

class NcclCommunicator : public Communicator {
 public:
  explicit NcclCommunicator(std::shared_ptr<NcclCommState> state)
      : state_(std::move(state)) {}
  ~NcclCommunicator() override { state_->Shutdown(); }

  int rank() const override { return state_->rank(); }
  int size() const override { return state_->size(); }
  absl::Duration timeout() const override { return state_->timeout(); }

  std::unique_ptr<Work> AllReduceAsync(const void* send, void* recv,
                                       size_t count, DataType type,
                                       ReduceOp op) override {
    absl::Status valid = CheckOp("allreduce", op);
    if (valid.ok()) {
      valid = CheckBuffers("allreduce", send, true, recv, count, type,
                           state_->device());
    }
    if (!valid.ok()) return MakeDoneWork(std::move(valid));
    return state_->Issue("allreduce", Detail(count, type, ReduceOpName(op)),
                         [&](ncclComm_t comm, cudaStream_t stream) {
                           if (count == 0) return ncclSuccess;
                           return ncclAllReduce(send, recv, count, ToNccl(type),
                                                ToNccl(op, size()), comm,
                                                stream);
                         });
  }

  std::unique_ptr<Work> ReduceScatterAsync(const void* send, void* recv,
                                           size_t recv_count, DataType type,
                                           ReduceOp op) override {
    absl::Status valid = CheckOp("reducescatter", op);
    if (valid.ok()) {
      valid = CheckBuffers("reducescatter", send, true, recv, recv_count, type,
                           state_->device());
    }
    if (valid.ok()) {
      valid = CheckBlocks("reducescatter", recv_count, type, size());
    }
    if (!valid.ok()) return MakeDoneWork(std::move(valid));
    return state_->Issue(
        "reducescatter", Detail(recv_count, type, ReduceOpName(op)),
        [&](ncclComm_t comm, cudaStream_t stream) {
          if (recv_count == 0) return ncclSuccess;
          return ncclReduceScatter(send, recv, recv_count, ToNccl(type),
                                   ToNccl(op, size()), comm, stream);
        });
  }

  std::unique_ptr<Work> AllGatherAsync(const void* send, void* recv,
                                       size_t send_count,
                                       DataType type) override {
    absl::Status valid = CheckBuffers("allgather", send, true, recv, send_count,
                                      type, state_->device());
    if (valid.ok()) valid = CheckBlocks("allgather", send_count, type, size());
    if (!valid.ok()) return MakeDoneWork(std::move(valid));
    return state_->Issue("allgather", Detail(send_count, type, ""),
                         [&](ncclComm_t comm, cudaStream_t stream) {
                           if (send_count == 0) return ncclSuccess;
                           return ncclAllGather(send, recv, send_count,
                                                ToNccl(type), comm, stream);
                         });
  }

  std::unique_ptr<Work> BroadcastAsync(const void* send, void* recv,
                                       size_t count, DataType type,
                                       int root) override {
    if (root < 0 || root >= size()) {
      return MakeDoneWork(absl::InvalidArgumentError(
          absl::StrCat("broadcast: root ", root, " is not a rank of this ",
                       size(), "-rank communicator")));
    }
    // Only the root's send buffer is read.
    absl::Status valid = CheckBuffers("broadcast", send, root == rank(), recv,
                                      count, type, state_->device());
    if (!valid.ok()) return MakeDoneWork(std::move(valid));
    return state_->Issue(
        "broadcast", Detail(count, type, absl::StrCat("root ", root)),
        [&](ncclComm_t comm, cudaStream_t stream) {
          if (count == 0) return ncclSuccess;
          return ncclBroadcast(root == rank() ? send : recv, recv, count,
                               ToNccl(type), root, comm, stream);
        });
  }

  std::unique_ptr<Work> BarrierAsync() override {
    void* flag = state_->barrier_buffer();
    return state_->Issue(
        "barrier", "", [flag](ncclComm_t comm, cudaStream_t stream) {
          return ncclAllReduce(flag, flag, 1, ncclInt32, ncclSum, comm, stream);
        });
  }

  void Abort(const absl::Status& reason) override { state_->Abort(reason); }

  [[nodiscard]] absl::Status WaitEvent(cudaEvent_t event) {
    return state_->WaitEvent(event);
  }

 private:
  const std::shared_ptr<NcclCommState> state_;
};

[[nodiscard]] absl::Status CheckOptions(Store* store,
                                        const NcclOptions& options) {
  if (store == nullptr) {
    return absl::InvalidArgumentError("NCCL communicator: null store");
  }
  if (options.connect_timeout <= absl::ZeroDuration() ||
      options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NCCL communicator: timeouts must be positive (connect_timeout ",
        absl::FormatDuration(options.connect_timeout), ", timeout ",
        absl::FormatDuration(options.timeout), ")"));
  }
  return absl::OkStatus();
}

[[nodiscard]] absl::Status CheckDevices(const std::vector<int>& devices) {
  ASSIGN_OR_RETURN(const int count, CudaDeviceCount());
  if (count == 0) {
    return absl::FailedPreconditionError(
        "the NCCL backend needs a GPU and this process sees none (no CUDA "
        "device or driver); use the TCP backend on CPU hosts");
  }
  std::set<int> seen;
  for (int device : devices) {
    if (device < 0 || device >= count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CUDA device ", device, " does not exist; this process sees ", count,
          " device(s) (check CUDA_VISIBLE_DEVICES)"));
    }
    if (!seen.insert(device).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("CUDA device ", device,
                       " is given to two local ranks; NCCL needs "
                       "one device per rank of a communicator"));
    }
  }
  return absl::OkStatus();
}

// Wraps an initialised `comm` with its stream and barrier flag. On failure
// aborts `comm`.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Communicator>> Wrap(
    ncclComm_t comm, int rank, int size, int device, absl::Duration timeout) {
  ScopedCudaDevice scoped(device);
  cudaStream_t stream = nullptr;
  void* barrier = nullptr;
  absl::Status status = scoped.status();
  if (status.ok()) {
    status =
        CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                   absl::StrCat("rank ", rank, ": cudaStreamCreate"));
  }
  if (status.ok()) {
    status = CudaStatus(cudaMalloc(&barrier, sizeof(int32_t)),
                        absl::StrCat("rank ", rank, ": barrier flag"));
  }
  if (status.ok()) {
    // Ordered before every collective on the stream; the value is unused.
    status = CudaStatus(cudaMemsetAsync(barrier, 0, sizeof(int32_t), stream),
                        absl::StrCat("rank ", rank, ": barrier flag"));
  }
  if (!status.ok()) {
    if (barrier != nullptr) DiscardCudaError(cudaFree(barrier));
    if (stream != nullptr) DiscardCudaError(cudaStreamDestroy(stream));
    (void)ncclCommAbort(comm);
    return status;
  }
  return std::unique_ptr<Communicator>(
      std::make_unique<NcclCommunicator>(std::make_shared<NcclCommState>(
          rank, size, device, timeout, comm, stream, barrier)));
}

// Creates the communicators of ranks first_rank .. first_rank +
// devices.size() - 1 of world_size (arguments already validated).
[[nodiscard]] absl::StatusOr<std::vector<std::unique_ptr<Communicator>>>
CreateLocalRanks(Store* store, int first_rank, int world_size,
                 const std::vector<int>& devices, const NcclOptions& options) {
  const int local = static_cast<int>(devices.size());
  const std::string ranks = RankRange(first_rank, local);
  const absl::Time deadline = absl::Now() + options.connect_timeout;

  for (int i = 0; i < local; ++i) {
    RETURN_IF_ERROR(MarkJoined(store, first_rank + i, options.job_id));
  }
  ASSIGN_OR_RETURN(const ncclUniqueId id,
                   ExchangeUniqueId(store, first_rank == 0, options.job_id,
                                    ranks, deadline));

  // Non-blocking, so that init can be bounded by the deadline (a blocking
  // init waits forever for a rank that never comes).
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  std::vector<ncclComm_t> comms(local, nullptr);
  absl::Status status;
  {
    ScopedCudaDevice restore(devices[0]);  // Restores the caller's device.
    RETURN_IF_ERROR(restore.status());
    // One thread initialising several ranks must group the calls: each
    // ncclCommInitRank waits for all ranks of the communicator.
    if (local > 1) {
      status = NcclStatus(ncclGroupStart(), "ncclGroupStart", nullptr);
      if (!status.ok()) return status;
    }
    for (int i = 0; i < local && status.ok(); ++i) {
      status = CudaStatus(cudaSetDevice(devices[i]),
                          absl::StrCat("cudaSetDevice(", devices[i], ")"));
      if (!status.ok()) break;
      const ncclResult_t result = ncclCommInitRankConfig(
          &comms[i], world_size, id, first_rank + i, &config);
      if (result != ncclSuccess && result != ncclInProgress) {
        status = NcclStatus(
            result,
            absl::StrCat("ncclCommInitRankConfig of rank ", first_rank + i),
            comms[i]);
      }
    }
    if (local > 1) {
      const ncclResult_t result = ncclGroupEnd();
      if (status.ok() && result != ncclSuccess && result != ncclInProgress) {
        status = NcclStatus(
            result, absl::StrCat("NCCL grouped init of ", ranks), nullptr);
      }
    }
  }
  if (!status.ok()) {
    for (int i = 0; i < local; ++i) {
      if (comms[i] == nullptr) continue;
      ScopedCudaDevice scoped(devices[i]);
      (void)ncclCommAbort(comms[i]);
    }
    return status;
  }
  RETURN_IF_ERROR(AwaitInit(comms, devices, store, ranks, world_size,
                            options.connect_timeout, deadline));

  std::vector<std::unique_ptr<Communicator>> result;
  for (int i = 0; i < local; ++i) {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        Wrap(comms[i], first_rank + i, world_size, devices[i], options.timeout);
    comms[i] = nullptr;  // Owned (or aborted) by Wrap now.
    if (!comm.ok()) {
      for (int j = i + 1; j < local; ++j) {
        ScopedCudaDevice scoped(devices[j]);
        (void)ncclCommAbort(comms[j]);
      }
      return comm.status();  // `result` aborts/destroys the earlier ones.
    }
    result.push_back(*std::move(comm));
  }
  return result;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(
    Store* store, int rank, int size, const NcclOptions& options) {
  RETURN_IF_ERROR(CheckOptions(store, options));
  if (size < 1 || rank < 0 || rank >= size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NCCL communicator: rank ", rank, " is not in [0, ", size, ")"));
  }
  RETURN_IF_ERROR(CheckDevices({options.device}));
  ASSIGN_OR_RETURN(
      std::vector<std::unique_ptr<Communicator>> comms,
      CreateLocalRanks(store, rank, size, {options.device}, options));
  return std::move(comms.front());
}

absl::StatusOr<std::vector<std::unique_ptr<Communicator>>>
CreateNcclCommunicatorsInProcess(Store* store, int first_rank, int world_size,
                                 const std::vector<int>& devices,
                                 const NcclOptions& options) {
  RETURN_IF_ERROR(CheckOptions(store, options));
  const int local = static_cast<int>(devices.size());
  if (local == 0 || world_size < 1 || first_rank < 0 ||
      first_rank > world_size - local) {
    return absl::InvalidArgumentError(
        absl::StrCat("NCCL communicators: ranks ", first_rank, "..",
                     first_rank + local - 1, " (one per device, ", local,
                     " device(s)) are not a non-empty range "
                     "of [0, ",
                     world_size, ")"));
  }
  RETURN_IF_ERROR(CheckDevices(devices));
  return CreateLocalRanks(store, first_rank, world_size, devices, options);
}

absl::Status NcclWaitEvent(Communicator* comm, cudaEvent_t event) {
  auto* nccl = dynamic_cast<NcclCommunicator*>(comm);
  if (nccl == nullptr) {
    return absl::InvalidArgumentError(
        "NcclWaitEvent: the communicator is not an NCCL communicator");
  }
  return nccl->WaitEvent(event);
}

}  // namespace gradsync
