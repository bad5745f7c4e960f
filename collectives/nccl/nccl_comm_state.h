// NcclCommState: the live part of an NCCL communicator (the ncclComm_t, its
// CUDA stream, the sticky error) shared by the Communicator facade and the
// Work handles it returns, so that a handle may outlive the facade. Internal
// to collectives/nccl: nccl_communicator.cc validates arguments and calls
// Issue; nothing outside this folder should include this.
//
// State diagram (error_ and comm_ under mu_):
//
//   RUNNING ──(timeout, NCCL/CUDA error, Abort)──► FAILED (comm aborted)
//      │                                               ▲
//      └──────────(Shutdown: finalize + destroy)───────┘
//
// RUNNING: comm_ != nullptr, error_ OK. FAILED: comm_ == nullptr, error_
// holds the first failure; every later call reports ABORTED quoting it.
//
// Threading: thread-safe. mu_ serialises every NCCL call on comm_ (NCCL
// communicators are not thread-safe) except that ncclCommAbort may run
// while another thread is inside an issue waiting, with mu_ released, for
// NCCL to finish enqueueing. Lock order: NcclWork::mu_ before
// NcclCommState::mu_.
#ifndef GRADSYNC_COLLECTIVES_NCCL_NCCL_COMM_STATE_H_
#define GRADSYNC_COLLECTIVES_NCCL_NCCL_COMM_STATE_H_

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collectives/communicator.h"

namespace gradsync {
namespace nccl_internal {

class NcclCommState : public std::enable_shared_from_this<NcclCommState> {
 public:
  // Takes ownership of `comm` (initialised, non-blocking), `stream` (on
  // `device`) and `barrier_buffer` (one device int32 on `device`).
  NcclCommState(int rank, int size, int device, absl::Duration timeout,
                ncclComm_t comm, cudaStream_t stream, void* barrier_buffer);
  // Releases the stream and the barrier buffer; call Shutdown first.
  ~NcclCommState();
  NcclCommState(const NcclCommState&) = delete;
  NcclCommState& operator=(const NcclCommState&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int device() const { return device_; }
  absl::Duration timeout() const { return timeout_; }
  void* barrier_buffer() const { return barrier_buffer_; }

  // Enqueues one collective: takes the next sequence number, runs
  // `launch(comm, stream)` (which makes the NCCL call, or returns
  // ncclSuccess without one for an empty collective), waits up to
  // timeout() while NCCL reports ncclInProgress, and records a CUDA event
  // after it. `what` describes the operation for errors, without the
  // sequence number ("allreduce", "(1024 x float sum)"). Returns a Work
  // that completes with the event, or a finished Work carrying the error.
  using Launch = absl::FunctionRef<ncclResult_t(ncclComm_t, cudaStream_t)>;
  std::unique_ptr<Work> Issue(absl::string_view name, absl::string_view detail,
                              Launch launch);

  // Makes the collectives issued after this call wait on the device for
  // `event` (cudaStreamWaitEvent on the stream; the host does not block).
  // ABORTED once the communicator failed; a CUDA failure fails it.
  [[nodiscard]] absl::Status WaitEvent(cudaEvent_t event);

  // One non-blocking check of the collective behind `event`: OK once it
  // finished, an error if the communicator failed (which then stays
  // failed), nullopt while it runs.
  std::optional<absl::Status> Poll(cudaEvent_t event, absl::string_view what);

  // Fails the communicator because the collective `what`, issued `waited`
  // ago, missed its deadline; returns the DEADLINE_EXCEEDED to report (or
  // the earlier failure if the communicator had already failed).
  [[nodiscard]] absl::Status TimeOut(absl::string_view what,
                                     absl::Duration waited);

  // Aborts the communicator with `reason` (Communicator::Abort).
  void Abort(const absl::Status& reason);

  // Finalizes and destroys the NCCL communicator, bounded by timeout()
  // (aborting when it passes). Afterwards every call reports ABORTED.
  void Shutdown();

  // Takes back a finished (or abandoned) Work's two timing events for the
  // next collectives: creating and destroying two CUDA events per call
  // cost a few microseconds, as much as a small collective's kernel. Keeps
  // at most kSpareEvents; destroys the rest, and all once failed.
  void ReturnEvents(cudaEvent_t started, cudaEvent_t done);

 private:
  static bool IssueSlotFree(NcclCommState* state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu_) {
    return !state->issuing_ || state->failed_;
  }

  // Records `status` as the first failure and aborts the NCCL communicator.
  void FailLocked(const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The ABORTED status reported by calls after a failure.
  [[nodiscard]] absl::Status AbortedLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Polls ncclCommGetAsyncError until it leaves ncclInProgress, the
  // deadline passes (returns ncclInProgress), or the communicator fails
  // (returns ncclInProgress with failed_ set). Releases mu_ between polls.
  ncclResult_t AwaitEnqueuedLocked(absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A spare timing event recorded on the stream (a new one when none is
  // spare); `context` names the collective in errors.
  [[nodiscard]] absl::StatusOr<cudaEvent_t> RecordEventLocked(
      const std::string& context) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  static constexpr size_t kSpareEvents = 64;

  const int rank_;
  const int size_;
  const int device_;
  const absl::Duration timeout_;
  const cudaStream_t stream_;
  void* const barrier_buffer_;

  mutable absl::Mutex mu_;
  ncclComm_t comm_ ABSL_GUARDED_BY(mu_);
  // True while a thread waits for NCCL to finish enqueueing (mu_ released);
  // other issuers wait for it, as NCCL forbids calls on an in-progress comm.
  bool issuing_ ABSL_GUARDED_BY(mu_) = false;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<cudaEvent_t> spare_events_ ABSL_GUARDED_BY(mu_);
};

// Wait/backoff policy shared by every polling loop of the backend: spin
// (yield) for the first polls so short collectives return fast, then sleep
// with growing pauses of at most 1 ms, never past `remaining`.
absl::Duration PollPause(int polls, absl::Duration remaining);

}  // namespace nccl_internal
}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_NCCL_NCCL_COMM_STATE_H_
