#include "worker/daemon/timed_communicator.h"

#include <atomic>
#include <utility>

namespace gradsync {
namespace {

// Reports the wrapped all-reduce's duration once, when first seen done.
class TimedWork final : public Work {
 public:
  TimedWork(std::unique_ptr<Work> inner, DurationObserver observe)
      : inner_(std::move(inner)), observe_(std::move(observe)) {}

  [[nodiscard]] absl::Status Wait(absl::Time deadline) override {
    absl::Status status = inner_->Wait(deadline);
    if (status.ok()) ReportOnce();
    return status;
  }
  bool Done() override {
    const bool done = inner_->Done();
    if (done) ReportOnce();
    return done;
  }
  [[nodiscard]] absl::StatusOr<absl::Duration> Elapsed() override {
    return inner_->Elapsed();
  }

 private:
  void ReportOnce() {
    if (reported_.exchange(true)) return;
    // FAILED_PRECONDITION (not done, or failed): nothing to report.
    absl::StatusOr<absl::Duration> elapsed = inner_->Elapsed();
    if (elapsed.ok() && observe_) observe_(*elapsed);
  }

  const std::unique_ptr<Work> inner_;
  // A copy: the work may outlive its communicator.
  const DurationObserver observe_;
  std::atomic<bool> reported_{false};
};

}  // namespace

std::unique_ptr<Work> TimedCommunicator::AllReduceAsync(
    const void* send, void* recv, size_t count, DataType type, ReduceOp op) {
  return std::make_unique<TimedWork>(
      inner_->AllReduceAsync(send, recv, count, type, op), observe_);
}

}  // namespace gradsync
