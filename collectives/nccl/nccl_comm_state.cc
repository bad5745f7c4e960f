#include "collectives/nccl/nccl_comm_state.h"

#include <algorithm>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "collectives/nccl/cuda_util.h"
#include "common/status_macros.h"

namespace gradsync {
namespace nccl_internal {
namespace {

constexpr int kSpinPolls = 64;
// Work::Wait's first polls read no clock: a short collective ends within
// them, and a clock read can cost as much as a poll (clock_gettime is a
// system call where the clock source has no vDSO path, as in some VMs).
constexpr int kPollsBeforeClock = 32;
// How long Work::Wait polls without sleeping: a collective that ends within
// it is seen within a poll (about a microsecond). Counting polls instead
// (64 of them, well under 100 us) put a sleep, which the kernel's timer
// slack stretches to 50 us or more, at the end of every 128 MiB copy on an
// H100.
constexpr absl::Duration kSpinTime = absl::Milliseconds(2);
constexpr absl::Duration kFirstPause = absl::Microseconds(20);
constexpr absl::Duration kMaxPause = absl::Milliseconds(1);

// The handle of one enqueued collective: done when its CUDA event is.
class NcclWork : public Work {
 public:
  // `started` and `event` are recorded on the stream just before and just
  // after the collective; the work owns both. `issued`: the call;
  // `enqueued`: when NCCL had it on the stream.
  NcclWork(std::shared_ptr<NcclCommState> state, cudaEvent_t started,
           cudaEvent_t event, std::string what, absl::Time issued,
           absl::Time enqueued)
      : state_(std::move(state)),
        started_(started),
        event_(event),
        what_(std::move(what)),
        issued_(issued),
        enqueued_(enqueued) {}

  ~NcclWork() override { state_->ReturnEvents(started_, event_); }

  [[nodiscard]] absl::Status Wait(absl::Time deadline) override {
    // As the TCP backend does, the communicator's own timeout bounds every
    // collective (from when it was enqueued), so that even
    // Wait(absl::InfiniteFuture()) names a peer that never joins instead of
    // hanging.
    deadline = std::min(deadline, enqueued_ + state_->timeout());
    absl::MutexLock lock(&mu_);
    absl::Time spin_until = absl::InfinitePast();  // set at the first clock
    for (int polls = 0, sleeps = 0; !done_; ++polls) {
      if (std::optional<absl::Status> status = state_->Poll(event_, what_)) {
        FinishLocked(*std::move(status));
        break;
      }
      if (polls < kPollsBeforeClock) {
        std::this_thread::yield();
        continue;
      }
      const absl::Time now = absl::Now();
      if (spin_until == absl::InfinitePast()) spin_until = now + kSpinTime;
      if (now >= deadline) {
        FinishLocked(state_->TimeOut(what_, now - issued_));
        break;
      }
      const absl::Duration pause =
          now < spin_until ? absl::ZeroDuration()
                           : PollPause(kSpinPolls + sleeps++, deadline - now);
      if (pause == absl::ZeroDuration()) {
        std::this_thread::yield();  // for kSpinTime: microseconds
      } else {
        // Paused without mu_, so that Done() and Elapsed() from another
        // thread do not block for the whole wait; wakes if Done() finished.
        mu_.AwaitWithTimeout(absl::Condition(&done_), pause);
      }
    }
    return result_;
  }

  bool Done() override {
    absl::MutexLock lock(&mu_);
    if (!done_) {
      if (std::optional<absl::Status> status = state_->Poll(event_, what_)) {
        FinishLocked(*std::move(status));
      }
    }
    return done_;
  }

  // The device's time between the two events: the stream reached the
  // collective once the work before it (the bucket's ready event) was done.
  [[nodiscard]] absl::StatusOr<absl::Duration> Elapsed() override {
    absl::MutexLock lock(&mu_);
    if (!done_ || !result_.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat(what_, done_ ? " failed" : " has not completed",
                       ", so it has no duration"));
    }
    ScopedCudaDevice scoped(state_->device());
    float ms = 0.0f;
    RETURN_IF_ERROR(CudaStatus(cudaEventElapsedTime(&ms, started_, event_),
                               absl::StrCat(what_, ": cudaEventElapsedTime")));
    return absl::Microseconds(static_cast<double>(ms) * 1e3);
  }

 private:
  void FinishLocked(absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    done_ = true;
    result_ = std::move(status);
  }

  const std::shared_ptr<NcclCommState> state_;
  const cudaEvent_t started_;
  const cudaEvent_t event_;
  const std::string what_;
  const absl::Time issued_;    // the call
  const absl::Time enqueued_;  // NCCL had it on the stream

  absl::Mutex mu_;  // Taken before state_->mu_.
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status result_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::Duration PollPause(int polls, absl::Duration remaining) {
  if (polls < kSpinPolls) return absl::ZeroDuration();
  const int doublings = std::min((polls - kSpinPolls) / 8, 6);
  absl::Duration pause = std::min(kFirstPause * (1 << doublings), kMaxPause);
  return std::max(std::min(pause, remaining), absl::ZeroDuration());
}

NcclCommState::NcclCommState(int rank, int size, int device,
                             absl::Duration timeout, ncclComm_t comm,
                             cudaStream_t stream, void* barrier_buffer)
    : rank_(rank),
      size_(size),
      device_(device),
      timeout_(timeout),
      stream_(stream),
      barrier_buffer_(barrier_buffer),
      comm_(comm) {}

NcclCommState::~NcclCommState() {
  {
    absl::MutexLock lock(&mu_);
    if (comm_ != nullptr) {
      // Shutdown was not called: do not risk blocking in a destructor.
      ScopedCudaDevice scoped(device_);
      (void)ncclCommAbort(comm_);
      comm_ = nullptr;
    }
  }
  ScopedCudaDevice scoped(device_);
  {
    absl::MutexLock lock(&mu_);
    for (cudaEvent_t event : spare_events_) {
      DiscardCudaError(cudaEventDestroy(event));
    }
    spare_events_.clear();
  }
  DiscardCudaError(cudaStreamDestroy(stream_));
  DiscardCudaError(cudaFree(barrier_buffer_));
}

void NcclCommState::ReturnEvents(cudaEvent_t started, cudaEvent_t done) {
  absl::MutexLock lock(&mu_);
  std::optional<ScopedCudaDevice> scoped;  // only destroying needs the device
  for (cudaEvent_t event : {started, done}) {
    // An event still pending on the stream may be recorded again: the new
    // record replaces the old one.
    if (!failed_ && spare_events_.size() < kSpareEvents) {
      spare_events_.push_back(event);
    } else {
      if (!scoped.has_value()) scoped.emplace(device_);
      DiscardCudaError(cudaEventDestroy(event));
    }
  }
}

absl::StatusOr<cudaEvent_t> NcclCommState::RecordEventLocked(
    const std::string& context) {
  cudaEvent_t event = nullptr;
  if (spare_events_.empty()) {
    RETURN_IF_ERROR(CudaStatus(cudaEventCreate(&event),
                               absl::StrCat(context, ": cudaEventCreate")));
  } else {
    event = spare_events_.back();
    spare_events_.pop_back();
  }
  const cudaError_t recorded = cudaEventRecord(event, stream_);
  if (recorded != cudaSuccess) {
    DiscardCudaError(cudaEventDestroy(event));
    return CudaStatus(recorded, absl::StrCat(context, ": cudaEventRecord"));
  }
  return event;
}

std::unique_ptr<Work> NcclCommState::Issue(absl::string_view name,
                                           absl::string_view detail,
                                           Launch launch) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + timeout_;
  absl::MutexLock lock(&mu_);
  if (!mu_.AwaitWithDeadline(absl::Condition(&IssueSlotFree, this), deadline)) {
    // This rank now skips a collective its peers issue: fail the
    // communicator, so that no later call pairs with the wrong one.
    absl::Status status = absl::DeadlineExceededError(absl::StrCat(
        name, " on rank ", rank_, " could not be issued within ",
        absl::FormatDuration(timeout_),
        ": another collective of this communicator is still waiting for "
        "NCCL to connect to the peers (check the other ranks' logs)"));
    FailLocked(status);
    return MakeDoneWork(std::move(status));
  }
  if (failed_) return MakeDoneWork(AbortedLocked());

  const uint64_t seq = next_seq_++;
  std::string what =
      absl::StrCat(name, " #", seq, detail.empty() ? "" : " ", detail);
  ScopedCudaDevice scoped(device_);
  if (!scoped.status().ok()) {
    absl::Status status = absl::InternalError(absl::StrCat(
        what, " on rank ", rank_, ": ", scoped.status().message()));
    FailLocked(status);
    return MakeDoneWork(status);
  }

  // Timing events around the collective: Elapsed reads the device's time
  // between them, as nccl-tests does.
  const std::string context = absl::StrCat(what, " on rank ", rank_);
  absl::StatusOr<cudaEvent_t> recorded = RecordEventLocked(context);
  if (!recorded.ok()) {
    FailLocked(recorded.status());
    return MakeDoneWork(recorded.status());
  }
  const cudaEvent_t started = *recorded;
  // Destroys `started` on the paths that return no NcclWork.
  auto fail = [this, started](absl::Status status)
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                    DiscardCudaError(cudaEventDestroy(started));
                    FailLocked(status);
                    return MakeDoneWork(std::move(status));
                  };

  ncclResult_t result = launch(comm_, stream_);
  const bool waited = result == ncclInProgress;
  if (waited) {
    // Non-blocking communicator: NCCL is still enqueueing (typically
    // connecting to the peers for the first collectives).
    issuing_ = true;
    result = AwaitEnqueuedLocked(deadline);
    issuing_ = false;
    if (failed_) return fail(AbortedLocked());
    if (result == ncclInProgress) {
      return fail(absl::DeadlineExceededError(absl::StrCat(
          what, " on rank ", rank_, " timed out after ",
          absl::FormatDuration(absl::Now() - start),
          " while NCCL connected to the peers; a peer rank did not join "
          "(check the other ranks' logs)")));
    }
  }
  if (result != ncclSuccess) {
    return fail(
        NcclStatus(result, absl::StrCat(what, " on rank ", rank_), comm_));
  }

  recorded = RecordEventLocked(context);
  if (!recorded.ok()) {
    // The collective is enqueued but cannot be tracked: fail loudly rather
    // than let the caller read a buffer that is still being written.
    return fail(recorded.status());
  }
  return std::make_unique<NcclWork>(shared_from_this(), started, *recorded,
                                    std::move(what), start,
                                    waited ? absl::Now() : start);
}

ncclResult_t NcclCommState::AwaitEnqueuedLocked(absl::Time deadline) {
  for (int polls = 0;; ++polls) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t result = ncclCommGetAsyncError(comm_, &state);
    if (result != ncclSuccess) return result;
    if (state != ncclInProgress) return state;
    const absl::Time now = absl::Now();
    if (now >= deadline) return ncclInProgress;
    // Release mu_ while pausing (so Abort and Work::Wait can run), waking
    // at once if the communicator fails.
    const absl::Duration pause =
        std::max(PollPause(polls, deadline - now), kFirstPause);
    if (mu_.AwaitWithTimeout(absl::Condition(&failed_), pause)) {
      return ncclInProgress;
    }
  }
}

std::optional<absl::Status> NcclCommState::Poll(cudaEvent_t event,
                                                absl::string_view what) {
  absl::MutexLock lock(&mu_);
  if (failed_) return AbortedLocked();
  ScopedCudaDevice scoped(device_);
  const cudaError_t query = gpu::QueryEvent(event);
  if (query == cudaSuccess) return absl::OkStatus();
  if (query != cudaErrorNotReady) {
    absl::Status status = CudaStatus(
        query,
        absl::StrCat(what, " on rank ", rank_, " failed on device ", device_));
    FailLocked(status);
    return status;
  }
  ncclResult_t state = ncclSuccess;
  ncclResult_t result = ncclCommGetAsyncError(comm_, &state);
  if (result == ncclSuccess && state != ncclInProgress) result = state;
  if (result != ncclSuccess) {
    absl::Status status = NcclStatus(
        result,
        absl::StrCat(what, " on rank ", rank_,
                     " failed (NCCL reported an asynchronous error; check "
                     "the other ranks' logs)"),
        comm_);
    FailLocked(status);
    return status;
  }
  return std::nullopt;
}

absl::Status NcclCommState::TimeOut(absl::string_view what,
                                    absl::Duration waited) {
  absl::MutexLock lock(&mu_);
  if (failed_) return AbortedLocked();
  absl::Status status = absl::DeadlineExceededError(
      absl::StrCat(what, " on rank ", rank_, " timed out after ",
                   absl::FormatDuration(waited),
                   "; a peer rank did not join (check the other ranks' logs)"));
  FailLocked(status);
  return status;
}

absl::Status NcclCommState::WaitEvent(cudaEvent_t event) {
  absl::MutexLock lock(&mu_);
  // A collective still being enqueued must land on the stream before the
  // wait does ("only collectives issued after this call wait").
  if (!mu_.AwaitWithTimeout(absl::Condition(&IssueSlotFree, this), timeout_)) {
    absl::Status status = absl::DeadlineExceededError(absl::StrCat(
        "ordering the next collectives of rank ", rank_,
        " after a CUDA event: an earlier collective was still waiting for "
        "NCCL to connect to the peers after ",
        absl::FormatDuration(timeout_), " (check the other ranks' logs)"));
    FailLocked(status);
    return status;
  }
  if (failed_) return AbortedLocked();
  ScopedCudaDevice scoped(device_);
  absl::Status status = scoped.status();
  if (status.ok()) {
    status = CudaStatus(cudaStreamWaitEvent(stream_, event, 0),
                        "cudaStreamWaitEvent");
  }
  if (!status.ok()) {
    status = absl::InternalError(
        absl::StrCat("ordering the next collectives of rank ", rank_,
                     " after a CUDA event: ", status.message()));
    FailLocked(status);
  }
  return status;
}

void NcclCommState::Abort(const absl::Status& reason) {
  absl::MutexLock lock(&mu_);
  FailLocked(reason.ok() ? absl::AbortedError("Abort called") : reason);
}

void NcclCommState::Shutdown() {
  absl::MutexLock lock(&mu_);
  if (comm_ != nullptr) {
    ScopedCudaDevice scoped(device_);
    const absl::Time deadline = absl::Now() + timeout_;
    ncclResult_t state = ncclInProgress;
    // A collective still being enqueued by another thread (in Issue) keeps
    // the communicator in progress, where NCCL refuses Finalize: abort
    // instead, and that Issue fails with the reason set below.
    if (!issuing_) {
      // Finalize flushes this rank's pending work; on a non-blocking
      // communicator it returns ncclInProgress until that is done.
      state = ncclCommFinalize(comm_);
      for (int polls = 0; state == ncclInProgress; ++polls) {
        const absl::Time now = absl::Now();
        if (now >= deadline) break;
        absl::SleepFor(std::max(PollPause(polls, deadline - now), kFirstPause));
        if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) {
          state = ncclInternalError;
        }
      }
    }
    if (state == ncclSuccess) {
      (void)ncclCommDestroy(comm_);
    } else {
      (void)ncclCommAbort(comm_);
    }
    comm_ = nullptr;
  }
  if (!failed_) {
    failed_ = true;
    error_ = absl::AbortedError("the communicator was destroyed");
  }
}

void NcclCommState::FailLocked(const absl::Status& status) {
  if (!failed_) {
    failed_ = true;
    error_ = status;
  }
  if (comm_ != nullptr) {
    ScopedCudaDevice scoped(device_);
    (void)ncclCommAbort(comm_);
    comm_ = nullptr;
  }
}

absl::Status NcclCommState::AbortedLocked() const {
  return absl::AbortedError(
      absl::StrCat("NCCL communicator of rank ", rank_, " of ", size_,
                   " failed earlier and stays failed (",
                   absl::StatusCodeToString(error_.code()), ": ",
                   error_.message(), "); create a new communicator"));
}

}  // namespace nccl_internal
}  // namespace gradsync
