// CoordinatorClient: the one client-side interface to the coordinator
// (proto/coordinator.proto), in the style of XLA's coordination client:
// one method per RPC, absl::Status errors, no gRPC in sight. Every caller
// of the coordinator goes through it: the worker daemon's Agent,
// JobRunner, MetricsReporter and CoordinatorStore, the parameter server's
// PsRegistration and the CLI. GrpcCoordinatorClient
// (grpc_coordinator_client.h) is the implementation; tests run it against
// tests/util/fake_coordinator.h on loopback.
//
//   std::shared_ptr<CoordinatorClient> client = NewGrpcCoordinatorClient(
//       NewCoordinatorChannel("10.0.0.1:29400"), "10.0.0.1:29400");
//   CancellableCalls calls;  // Stop(): calls.CancelAll(...)
//   ASSIGN_OR_RETURN(RegisterWorkerResponse registered,
//                    client->RegisterWorker(request,
//                                           {absl::Now() + timeout, &calls}));
//
// Errors: the coordinator's own status, with the codes coordinator.proto
// lists for each RPC; DEADLINE_EXCEEDED when the call's deadline passed;
// CANCELLED (the CancelAll reason) when its CancellableCalls was
// cancelled; UNAVAILABLE when the coordinator cannot be reached. A failure
// before any connection was made (nothing listens, a bad address, a
// deadline that passed while connecting) carries the payload that
// IsCoordinatorUnreachable() detects, so that callers can say so in their
// own words.
// Threading: implementations are thread-safe.
#ifndef GRADSYNC_SERVER_COORDINATOR_COORDINATOR_CLIENT_H_
#define GRADSYNC_SERVER_COORDINATOR_COORDINATOR_CLIENT_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/cancellable_calls.h"
#include "proto/coordinator.pb.h"

namespace gradsync {

// The gRPC metadata key of the users' token: "authorization: Bearer
// <token>" (CoordinatorService::CheckUser).
inline constexpr absl::string_view kUserTokenMetadata = "authorization";

// Where daemons and the CLI look for the coordinator when neither a flag
// nor $GRADSYNC_COORDINATOR says.
inline constexpr absl::string_view kDefaultCoordinatorAddress =
    "127.0.0.1:29400";

// How one call runs.
struct CallOptions {
  // When the call gives up with DEADLINE_EXCEEDED; the infinite future
  // means none.
  absl::Time deadline = absl::InfiniteFuture();
  // When set, calls->CancelAll(reason) cancels the call (and any later
  // call fails at once) with `reason`.
  CancellableCalls* calls = nullptr;
};

// The most log lines one ReportMetrics may carry (ReportMetricsRequest.
// log_lines).
inline constexpr int kMaxLogLinesPerReport = 256;

// The payload type URL of a failure before any connection to the
// coordinator was made.
inline constexpr absl::string_view kCoordinatorUnreachablePayload =
    "type.gradsync/coordinator.unreachable";

// True when `status` failed before any connection was made.
inline bool IsCoordinatorUnreachable(const absl::Status& status) {
  return !status.ok() &&
         status.GetPayload(kCoordinatorUnreachablePayload).has_value();
}

class CoordinatorClient {
 public:
  virtual ~CoordinatorClient() = default;

  // The coordinator's address, for messages.
  virtual const std::string& target() const = 0;

  // ---- worker daemons ----
  [[nodiscard]] virtual absl::StatusOr<RegisterWorkerResponse> RegisterWorker(
      const RegisterWorkerRequest& request, const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<HeartbeatResponse> Heartbeat(
      const HeartbeatRequest& request, const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<DeregisterWorkerResponse>
  DeregisterWorker(const DeregisterWorkerRequest& request,
                   const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<DeregisterParameterServerResponse>
  DeregisterParameterServer(const DeregisterParameterServerRequest& request,
                            const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<ReportRankResponse> ReportRank(
      const ReportRankRequest& request, const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<ReportMetricsResponse> ReportMetrics(
      const ReportMetricsRequest& request, const CallOptions& options) = 0;

  // ---- the rendezvous store of a job's ranks ----
  [[nodiscard]] virtual absl::StatusOr<StoreSetResponse> StoreSet(
      const StoreSetRequest& request, const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<StoreGetResponse> StoreGet(
      const StoreGetRequest& request, const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<StoreAddResponse> StoreAdd(
      const StoreAddRequest& request, const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<StoreWaitResponse> StoreWait(
      const StoreWaitRequest& request, const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<BarrierResponse> Barrier(
      const BarrierRequest& request, const CallOptions& options) = 0;

  // ---- users (the CLI) ----
  [[nodiscard]] virtual absl::StatusOr<SubmitJobResponse> SubmitJob(
      const SubmitJobRequest& request, const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<JobStatus> GetJob(
      const GetJobRequest& request, const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<ListJobsResponse> ListJobs(
      const ListJobsRequest& request, const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<JobStatus> CancelJob(
      const CancelJobRequest& request, const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<GetMetricsResponse> GetMetrics(
      const GetMetricsRequest& request, const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<GetJobLogsResponse> GetJobLogs(
      const GetJobLogsRequest& request, const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<ListWorkersResponse> ListWorkers(
      const ListWorkersRequest& request, const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<SwitchJobResponse> SwitchJob(
      const SwitchJobRequest& request, const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<ClusterLinkFacts> SetLinkFacts(
      const SetLinkFactsRequest& request, const CallOptions& options) = 0;
  // Calls `on_event` for each event of the job's stream until the stream
  // ends (OK) or `on_event` returns an error (returned, and the stream is
  // cancelled). A connection that breaks after events came is UNAVAILABLE
  // "lost the connection to the coordinator at <target> while following
  // job <id>".
  [[nodiscard]] virtual absl::Status WatchJob(
      const WatchJobRequest& request, const CallOptions& options,
      const std::function<absl::Status(const JobEvent&)>& on_event) = 0;

  // ---- parameter servers ----
  [[nodiscard]] virtual absl::StatusOr<RegisterParameterServerResponse>
  RegisterParameterServer(const RegisterParameterServerRequest& request,
                          const CallOptions& options) = 0;
  [[nodiscard]] virtual absl::StatusOr<PsHeartbeatResponse> PsHeartbeat(
      const PsHeartbeatRequest& request, const CallOptions& options) = 0;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_COORDINATOR_CLIENT_H_
