// TimedCommunicator: a Communicator that forwards every call to another and
// reports the duration of each all-reduce that succeeds (Work::Elapsed:
// the collective's own time, queueing behind earlier ones excluded) to a
// callback, for the worker's gradsync_worker_allreduce_seconds histogram
// (worker_metrics.h). The other collectives pass through untimed.
//
// The report happens in the first Wait or Done that sees the all-reduce
// succeed, on the caller's thread; a failed or aborted one is not reported.
// Threading: as the wrapped communicator; `observe` must be thread-safe.
#ifndef GRADSYNC_WORKER_DAEMON_TIMED_COMMUNICATOR_H_
#define GRADSYNC_WORKER_DAEMON_TIMED_COMMUNICATOR_H_

#include <functional>
#include <memory>

#include "absl/time/time.h"
#include "collectives/communicator.h"

namespace gradsync {

using DurationObserver = std::function<void(absl::Duration)>;

class TimedCommunicator final : public Communicator {
 public:
  TimedCommunicator(std::unique_ptr<Communicator> inner,
                    DurationObserver observe_all_reduce)
      : inner_(std::move(inner)), observe_(std::move(observe_all_reduce)) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  absl::Duration timeout() const override { return inner_->timeout(); }

  std::unique_ptr<Work> AllReduceAsync(const void* send, void* recv,
                                       size_t count, DataType type,
                                       ReduceOp op) override;
  std::unique_ptr<Work> ReduceScatterAsync(const void* send, void* recv,
                                           size_t recv_count, DataType type,
                                           ReduceOp op) override {
    return inner_->ReduceScatterAsync(send, recv, recv_count, type, op);
  }
  std::unique_ptr<Work> AllGatherAsync(const void* send, void* recv,
                                       size_t send_count,
                                       DataType type) override {
    return inner_->AllGatherAsync(send, recv, send_count, type);
  }
  std::unique_ptr<Work> BroadcastAsync(const void* send, void* recv,
                                       size_t count, DataType type,
                                       int root) override {
    return inner_->BroadcastAsync(send, recv, count, type, root);
  }
  std::unique_ptr<Work> BarrierAsync() override {
    return inner_->BarrierAsync();
  }
  void Abort(const absl::Status& reason) override { inner_->Abort(reason); }

 private:
  const std::unique_ptr<Communicator> inner_;
  const DurationObserver observe_;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_DAEMON_TIMED_COMMUNICATOR_H_
