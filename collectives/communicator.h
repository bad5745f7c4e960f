// Communicator: the collective operations every gradsync backend offers
// (the TCP ring in collectives/tcp, NCCL in collectives/nccl).
//
// Semantics follow NCCL:
//   AllReduce      recv[i] = op over ranks of send[i], count elements.
//   ReduceScatter  send holds size()*recv_count elements; rank r receives
//                  the reduction of block r.
//   AllGather      recv holds size()*send_count elements; block r is rank
//                  r's send buffer.
//   Broadcast      recv on every rank becomes root's send buffer.
//   Barrier        returns once every rank has entered it.
// In-place is allowed everywhere: pass send == recv (for ReduceScatter,
// recv == send + rank*recv_count; for AllGather, send == recv +
// rank*send_count). kAvg divides the sum by size(); results are bitwise
// identical on every rank.
//
// Every rank must call the same collectives in the same order with the
// same count, type and op. A mismatch is detected and reported (naming both
// ranks and what differs) instead of corrupting data.
//
// Each call has an asynchronous form returning a Work handle; buffers must
// stay valid until Wait returns. Calls on one communicator run in the order
// they were issued. The synchronous forms wait with timeout().
//
// Errors (absl::Status): INVALID_ARGUMENT for bad arguments (nothing is
// sent); DEADLINE_EXCEEDED when a peer does not answer in time, naming the
// rank, the operation and its sequence number; UNAVAILABLE when a peer's
// connection is lost (naming the rank); ABORTED after Abort or any earlier
// failure: a failed communicator stays failed, as in NCCL; create a new one.
#ifndef GRADSYNC_COLLECTIVES_COMMUNICATOR_H_
#define GRADSYNC_COLLECTIVES_COMMUNICATOR_H_

#include <cstddef>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collectives/types.h"

namespace gradsync {

// Handle of an asynchronous collective.
class Work {
 public:
  virtual ~Work() = default;
  // Blocks until the collective finished or `deadline` passed. On expiry
  // the communicator is aborted (a collective cannot be half-cancelled
  // without desynchronising the ranks) and DEADLINE_EXCEEDED is returned.
  [[nodiscard]] virtual absl::Status Wait(absl::Time deadline) = 0;
  // True once Wait would return at once.
  virtual bool Done() = 0;
  // The collective's own duration: from when the backend started it (the
  // TCP progress thread took it up; on a GPU, when the stream reached it)
  // until it completed. Waiting for a late peer counts; waiting in the
  // queue behind earlier collectives of the communicator does not, so the
  // durations of collectives issued back to back add up to the time the
  // communicator was busy (what per-step algbw/busbw divide by).
  // FAILED_PRECONDITION until Wait or Done has seen it succeed.
  [[nodiscard]] virtual absl::StatusOr<absl::Duration> Elapsed() = 0;
};

// A Work that is already finished with `status`.
std::unique_ptr<Work> MakeDoneWork(absl::Status status);

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Deadline budget of the synchronous forms, per call.
  virtual absl::Duration timeout() const = 0;

  virtual std::unique_ptr<Work> AllReduceAsync(const void* send, void* recv,
                                               size_t count, DataType type,
                                               ReduceOp op) = 0;
  virtual std::unique_ptr<Work> ReduceScatterAsync(const void* send, void* recv,
                                                   size_t recv_count,
                                                   DataType type,
                                                   ReduceOp op) = 0;
  virtual std::unique_ptr<Work> AllGatherAsync(const void* send, void* recv,
                                               size_t send_count,
                                               DataType type) = 0;
  virtual std::unique_ptr<Work> BroadcastAsync(const void* send, void* recv,
                                               size_t count, DataType type,
                                               int root) = 0;
  virtual std::unique_ptr<Work> BarrierAsync() = 0;

  // Fails every pending and future call with ABORTED carrying `reason`,
  // and unblocks peers waiting on this rank.
  virtual void Abort(const absl::Status& reason) = 0;

  // Synchronous forms: the asynchronous call waited for timeout() (plus a
  // few seconds of grace, so that the backend names the late peer itself).
  [[nodiscard]] absl::Status AllReduce(const void* send, void* recv,
                                       size_t count, DataType type,
                                       ReduceOp op);
  [[nodiscard]] absl::Status ReduceScatter(const void* send, void* recv,
                                           size_t recv_count, DataType type,
                                           ReduceOp op);
  [[nodiscard]] absl::Status AllGather(const void* send, void* recv,
                                       size_t send_count, DataType type);
  [[nodiscard]] absl::Status Broadcast(const void* send, void* recv,
                                       size_t count, DataType type, int root);
  [[nodiscard]] absl::Status Barrier();

 private:
  [[nodiscard]] absl::Status WaitDefault(std::unique_ptr<Work> work);
};

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_COMMUNICATOR_H_
