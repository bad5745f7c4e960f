// CoordinatorRpc: the thin gRPC adapter of the coordinator. Each RPC of
// proto/coordinator.proto becomes one call on CoordinatorService, and its
// absl::Status a grpc::Status with the same code and message (see
// common/grpc_status.h); the errors of each RPC are those documented
// on the service method of the same name.
//
// Blocking RPCs (Heartbeat, StoreGet, StoreWait, Barrier, WatchJob) wait
// no longer than the client's gRPC deadline, and give their server thread
// back within a wait slice when the client cancels or goes away.
//
// WatchJob sends the job's status at once, then one JobEvent per change
// (state, message, rank progress, new step metrics), and ends with OK after
// the event that reports the job's end; NOT_FOUND for an unknown job.
//
// The user RPCs (submit, status, list, cancel, switch, watch, metrics,
// workers) first check the user token the call presents in its
// "authorization: Bearer <token>" metadata (CoordinatorService::CheckUser).
//
// Thread-safe: the RPC methods run concurrently on gRPC's threads.
#ifndef GRADSYNC_SERVER_COORDINATOR_COORDINATOR_RPC_H_
#define GRADSYNC_SERVER_COORDINATOR_COORDINATOR_RPC_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>
#include <grpcpp/support/sync_stream.h>

#include "absl/time/time.h"
#include "proto/coordinator.grpc.pb.h"
#include "server/coordinator/coordinator_service.h"

namespace gradsync {

class CoordinatorRpc final : public Coordinator::Service {
 public:
  // How long WatchJob waits for news before it checks on its client.
  static constexpr absl::Duration kWatchPoll = absl::Seconds(1);

  // `service` is not owned and must outlive the adapter.
  explicit CoordinatorRpc(CoordinatorService* service);
  CoordinatorRpc(const CoordinatorRpc&) = delete;
  CoordinatorRpc& operator=(const CoordinatorRpc&) = delete;

  grpc::Status DeregisterWorker(grpc::ServerContext* context,
                                const DeregisterWorkerRequest* request,
                                DeregisterWorkerResponse* response) override;
  grpc::Status DeregisterParameterServer(
      grpc::ServerContext* context,
      const DeregisterParameterServerRequest* request,
      DeregisterParameterServerResponse* response) override;
  grpc::Status RegisterWorker(grpc::ServerContext* context,
                              const RegisterWorkerRequest* request,
                              RegisterWorkerResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* context,
                         const HeartbeatRequest* request,
                         HeartbeatResponse* response) override;
  grpc::Status ReportRank(grpc::ServerContext* context,
                          const ReportRankRequest* request,
                          ReportRankResponse* response) override;
  grpc::Status ReportMetrics(grpc::ServerContext* context,
                             const ReportMetricsRequest* request,
                             ReportMetricsResponse* response) override;
  grpc::Status StoreSet(grpc::ServerContext* context,
                        const StoreSetRequest* request,
                        StoreSetResponse* response) override;
  grpc::Status StoreGet(grpc::ServerContext* context,
                        const StoreGetRequest* request,
                        StoreGetResponse* response) override;
  grpc::Status StoreAdd(grpc::ServerContext* context,
                        const StoreAddRequest* request,
                        StoreAddResponse* response) override;
  grpc::Status StoreWait(grpc::ServerContext* context,
                         const StoreWaitRequest* request,
                         StoreWaitResponse* response) override;
  grpc::Status Barrier(grpc::ServerContext* context,
                       const BarrierRequest* request,
                       BarrierResponse* response) override;
  grpc::Status SubmitJob(grpc::ServerContext* context,
                         const SubmitJobRequest* request,
                         SubmitJobResponse* response) override;
  grpc::Status GetJob(grpc::ServerContext* context,
                      const GetJobRequest* request,
                      JobStatus* response) override;
  grpc::Status ListJobs(grpc::ServerContext* context,
                        const ListJobsRequest* request,
                        ListJobsResponse* response) override;
  grpc::Status CancelJob(grpc::ServerContext* context,
                         const CancelJobRequest* request,
                         JobStatus* response) override;
  grpc::Status WatchJob(grpc::ServerContext* context,
                        const WatchJobRequest* request,
                        grpc::ServerWriter<JobEvent>* writer) override;
  grpc::Status GetMetrics(grpc::ServerContext* context,
                          const GetMetricsRequest* request,
                          GetMetricsResponse* response) override;
  grpc::Status GetJobLogs(grpc::ServerContext* context,
                          const GetJobLogsRequest* request,
                          GetJobLogsResponse* response) override;
  grpc::Status ListWorkers(grpc::ServerContext* context,
                           const ListWorkersRequest* request,
                           ListWorkersResponse* response) override;
  grpc::Status SwitchJob(grpc::ServerContext* context,
                         const SwitchJobRequest* request,
                         SwitchJobResponse* response) override;
  grpc::Status SetLinkFacts(grpc::ServerContext* context,
                            const SetLinkFactsRequest* request,
                            ClusterLinkFacts* response) override;
  grpc::Status RegisterParameterServer(
      grpc::ServerContext* context,
      const RegisterParameterServerRequest* request,
      RegisterParameterServerResponse* response) override;
  grpc::Status PsHeartbeat(grpc::ServerContext* context,
                           const PsHeartbeatRequest* request,
                           PsHeartbeatResponse* response) override;

 private:
  CoordinatorService* const service_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_COORDINATOR_RPC_H_
