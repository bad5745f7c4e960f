// CoordinatorStore: the rendezvous Store of a job's ranks, served by the
// coordinator (its StoreSet/StoreGet/StoreAdd/StoreWait RPCs). Every call
// carries the StoreScope {worker_id, job_id, generation}: the coordinator
// keeps each job generation's keys apart, and refuses callers that host
// no rank of the job.
//
//   StoreScope scope;
//   scope.set_worker_id("w-1"); scope.set_job_id("job-3");
//   scope.set_generation(0);
//   CoordinatorStore store(client, scope);
//   ASSIGN_OR_RETURN(auto comm, CreateTcpCommunicator(&store, rank, n, o));
//
// Deadlines: Get and Wait send the time left to the caller's deadline as
// timeout_ms and use that deadline plus `grace` as the gRPC deadline, so
// that the coordinator's DEADLINE_EXCEEDED, which names the missing keys,
// is what arrives. Set and Add have `unary_timeout`.
//
// Errors: the Store contract (DEADLINE_EXCEEDED naming the keys,
// FAILED_PRECONDITION from Add on a non-integer), plus the coordinator's
// own: FAILED_PRECONDITION when the job ended or the generation is stale,
// PERMISSION_DENIED, NOT_FOUND for an unknown job; UNAVAILABLE naming the
// coordinator when it cannot be reached; CANCELLED after Cancel.
// Threading: thread-safe; all ranks of a job on one worker may share one.
#ifndef GRADSYNC_WORKER_DAEMON_COORDINATOR_STORE_H_
#define GRADSYNC_WORKER_DAEMON_COORDINATOR_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collectives/store.h"
#include "common/cancellable_calls.h"
#include "proto/coordinator.pb.h"
#include "server/coordinator/coordinator_client.h"

namespace gradsync {

struct CoordinatorStoreOptions {
  // gRPC deadline of Set and Add.
  absl::Duration unary_timeout = absl::Seconds(30);
  // Extra gRPC deadline of Get and Wait beyond the caller's deadline.
  absl::Duration grace = absl::Seconds(2);
};

class CoordinatorStore : public Store {
 public:
  CoordinatorStore(std::shared_ptr<CoordinatorClient> client, StoreScope scope,
                   CoordinatorStoreOptions options = {});

  [[nodiscard]] absl::Status Set(absl::string_view key,
                                 absl::string_view value) override;
  [[nodiscard]] absl::StatusOr<std::string> Get(absl::string_view key,
                                                absl::Time deadline) override;
  [[nodiscard]] absl::StatusOr<int64_t> Add(absl::string_view key,
                                            int64_t delta) override;
  [[nodiscard]] absl::Status Wait(const std::vector<std::string>& keys,
                                  absl::Time deadline) override;

  // Makes calls in flight return at once and later calls fail, all with
  // CANCELLED carrying `reason` (a cancelled job's rendezvous).
  void Cancel(const absl::Status& reason);

 private:
  // The status of an RPC described by `what` (see the .cc).
  [[nodiscard]] absl::Status Explain(absl::Status status,
                                     absl::string_view what,
                                     absl::Time rpc_deadline) const;

  const std::shared_ptr<CoordinatorClient> client_;
  const StoreScope scope_;
  const CoordinatorStoreOptions options_;
  CancellableCalls calls_;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_DAEMON_COORDINATOR_STORE_H_
