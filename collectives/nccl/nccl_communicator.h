// NCCL backend of Communicator, for GPU ranks: buffers are CUDA device
// pointers on the communicator's device, and collectives are NCCL kernels
// enqueued on a CUDA stream the communicator owns.
//
//   MemoryStore store;  // or a gRPC store client for processes
//   NcclOptions options;
//   options.job_id = "job-7/gen-0";
//   options.device = local_rank;
//   ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm,
//                    CreateNcclCommunicator(&store, rank, size, options));
//   RETURN_IF_ERROR(comm->AllReduce(dev_buf, dev_buf, n, DataType::kFloat32,
//                                   ReduceOp::kSum));
//
// Rendezvous: rank 0 (or, in-process, the process hosting rank 0) creates
// the ncclUniqueId and publishes it, base64-encoded and tagged with
// job_id, under "nccl/unique_id/0"; the other ranks Get it. Every rank also
// sets "nccl/joined/<rank>" so that a timed-out init can name the ranks
// that never arrived. The caller namespaces the store (PrefixStore) per job
// and rendezvous generation: a unique id is good for one communicator.
//
// Bounded waits: communicators are created non-blocking (ncclConfig_t
// blocking = 0), so that init, the connection setup NCCL performs on the
// first collectives, and shutdown can all be polled against a deadline and
// aborted (ncclCommAbort) instead of hanging on a rank that never comes.
//
// Semantics beyond Communicator's:
//   - Buffers must be device memory on options.device (or managed memory);
//     anything else is INVALID_ARGUMENT. Broadcast ignores `send` on
//     non-root ranks (it may be null there).
//   - kAvg maps to ncclAvg: for floating types NCCL pre-multiplies each
//     input by 1/size() before summing, so the result is exact on integer
//     data only when size() is a power of two; integers divide truncating.
//     Results are bitwise identical on every rank either way.
//   - Mismatched calls across ranks (different counts, types or order) are
//     NOT detected: NCCL cannot see them. They corrupt data or hang until
//     the deadline, which then aborts the communicator.
//   - A *Async call returns once the collective is enqueued on the stream.
//     That is immediate except for the first collectives, when NCCL connects
//     to its peers and the call may block up to timeout() for them (a
//     synchronous call may therefore take up to twice timeout() in total).
//   - The Work's Wait polls the collective's CUDA event and the NCCL
//     communicator's asynchronous error (spinning briefly, then sleeping up
//     to 1 ms between polls), until the caller's deadline or timeout()
//     after the collective was enqueued, whichever comes first.
//   - Abort is local: ncclCommAbort tells no peer. The peers' pending and
//     later collectives with this rank fail at their own timeout() (the TCP
//     backend's abort closes its sockets, so its peers fail at once).
//
// Errors (absl::Status), in addition to Communicator's:
//   CreateNcclCommunicator*: INVALID_ARGUMENT for bad rank/size/devices;
//   FAILED_PRECONDITION when this process sees no GPU, or the store holds
//   another job's unique id; DEADLINE_EXCEEDED when the id or a peer did not
//   arrive within connect_timeout (naming the ranks that never joined);
//   UNAVAILABLE/INTERNAL for NCCL or CUDA failures, with NCCL's message.
//   Collectives: DEADLINE_EXCEEDED names the operation, its sequence number
//   and this rank ("allreduce #12 (1024 x float sum) on rank 1 timed out
//   after 30s; ..."); UNAVAILABLE when NCCL reports a remote or network
//   failure; ABORTED afterwards, and after Abort: a failed communicator
//   stays failed, create a new one.
//
// Threading: a communicator is thread-safe; calls are enqueued in the order
// they acquire its lock and run in that order on its stream. Each rank
// needs its own driving thread: a call may block until the peers issue the
// same collective, so one thread must not drive two ranks of one clique.
// Destroying a communicator finalizes it (bounded by timeout(), aborting
// after); Work handles may outlive it and then fail with ABORTED.
#ifndef GRADSYNC_COLLECTIVES_NCCL_NCCL_COMMUNICATOR_H_
#define GRADSYNC_COLLECTIVES_NCCL_NCCL_COMMUNICATOR_H_

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collectives/communicator.h"
#include "collectives/store.h"

namespace gradsync {

struct NcclOptions {
  // Identifies the job and rendezvous generation. Published with the unique
  // id; a rank that finds another job's id fails fast instead of joining it.
  std::string job_id = "default";
  // CUDA device of this rank (CreateNcclCommunicator only; the in-process
  // form takes one device per local rank).
  int device = 0;
  // Deadline of rendezvous and communicator init, and of each synchronous
  // collective.
  absl::Duration connect_timeout = absl::Seconds(60);
  absl::Duration timeout = absl::Seconds(60);
};

// Creates the communicator of rank `rank` of `size` on options.device,
// exchanging the NCCL unique id through `store`. Blocks until every rank has
// joined or options.connect_timeout passes (DEADLINE_EXCEEDED naming the
// ranks that never joined). `store` is used only during this call.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Communicator>>
CreateNcclCommunicator(Store* store, int rank, int size,
                       const NcclOptions& options);

// For one process hosting several ranks, one per GPU: creates the
// communicators of ranks first_rank .. first_rank + devices.size() - 1 of
// `world_size`, local rank i on devices[i], with one grouped init
// (ncclGroupStart/End) from the calling thread. Other processes may host the
// remaining ranks; the process with first_rank == 0 publishes the id.
// Devices must be distinct (NCCL cannot put two ranks of one communicator
// on one device). options.device is ignored. Returns one communicator per
// local rank, in order; drive each from its own thread.
[[nodiscard]] absl::StatusOr<std::vector<std::unique_ptr<Communicator>>>
CreateNcclCommunicatorsInProcess(Store* store, int first_rank, int world_size,
                                 const std::vector<int>& devices,
                                 const NcclOptions& options);

// Makes the collectives that `comm` (an NCCL communicator) issues after
// this call wait, on the device, for `event`, recorded on another stream
// (e.g. the compute stream right after backward wrote a bucket's
// gradients): stream ordering without a host round trip. INVALID_ARGUMENT
// for another backend; ABORTED if the communicator failed.
[[nodiscard]] absl::Status NcclWaitEvent(Communicator* comm, cudaEvent_t event);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_NCCL_NCCL_COMMUNICATOR_H_
