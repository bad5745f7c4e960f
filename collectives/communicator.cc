#include "collectives/communicator.h"

#include <utility>

namespace gradsync {
namespace {

constexpr absl::Duration kSyncWaitGrace = absl::Seconds(5);

class DoneWork : public Work {
 public:
  explicit DoneWork(absl::Status status) : status_(std::move(status)) {}
  [[nodiscard]] absl::Status Wait(absl::Time) override { return status_; }
  bool Done() override { return true; }
  // Nothing ran: a finished handle of an empty or rejected call.
  [[nodiscard]] absl::StatusOr<absl::Duration> Elapsed() override {
    if (!status_.ok()) {
      return absl::FailedPreconditionError(
          "the collective failed, so it has no duration");
    }
    return absl::ZeroDuration();
  }

 private:
  absl::Status status_;
};

}  // namespace

std::unique_ptr<Work> MakeDoneWork(absl::Status status) {
  return std::make_unique<DoneWork>(std::move(status));
}

absl::Status Communicator::WaitDefault(std::unique_ptr<Work> work) {
  // A little grace past timeout(): a backend that enforces timeout() itself
  // then reports which peer it waited for, instead of a bare expiry here.
  return work->Wait(absl::Now() + timeout() + kSyncWaitGrace);
}

absl::Status Communicator::AllReduce(const void* send, void* recv, size_t count,
                                     DataType type, ReduceOp op) {
  return WaitDefault(AllReduceAsync(send, recv, count, type, op));
}

absl::Status Communicator::ReduceScatter(const void* send, void* recv,
                                         size_t recv_count, DataType type,
                                         ReduceOp op) {
  return WaitDefault(ReduceScatterAsync(send, recv, recv_count, type, op));
}

absl::Status Communicator::AllGather(const void* send, void* recv,
                                     size_t send_count, DataType type) {
  return WaitDefault(AllGatherAsync(send, recv, send_count, type));
}

absl::Status Communicator::Broadcast(const void* send, void* recv, size_t count,
                                     DataType type, int root) {
  return WaitDefault(BroadcastAsync(send, recv, count, type, root));
}

absl::Status Communicator::Barrier() { return WaitDefault(BarrierAsync()); }

}  // namespace gradsync
