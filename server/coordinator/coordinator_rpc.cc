#include "server/coordinator/coordinator_rpc.h"

#include <grpc/grpc_security_constants.h>
#include <grpcpp/security/auth_context.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "common/grpc_status.h"
#include "common/version.h"
#include "common/wire_version.h"
#include "server/coordinator/coordinator_client.h"

namespace gradsync {
namespace {

absl::Time CallDeadline(const grpc::ServerContext& context) {
  return absl::FromChrono(context.deadline());
}

// The user token a call presents: "authorization: Bearer <token>"
// (kUserTokenMetadata); empty when none.
std::string PresentedToken(const grpc::ServerContext& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(std::string(kUserTokenMetadata));
  if (it == metadata.end()) return "";
  absl::string_view value(it->second.data(), it->second.size());
  return absl::ConsumePrefix(&value, "Bearer ") ? std::string(value) : "";
}

// The registering caller: its peer, and whether its certificate is the
// cluster's node certificate (daemon_admission.h).
DaemonCaller Caller(const grpc::ServerContext& context) {
  DaemonCaller caller;
  caller.peer = context.peer();
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth != nullptr && auth->IsPeerAuthenticated()) {
    std::vector<std::string> names;
    for (const grpc::string_ref& name :
         auth->FindPropertyValues(GRPC_X509_SAN_PROPERTY_NAME)) {
      names.emplace_back(name.data(), name.size());
    }
    caller.node_certificate = IsNodeCertificate(names);
  }
  return caller;
}

// Moves the value of `result` into `*response`, or returns its error.
template <typename T>
grpc::Status Reply(absl::StatusOr<T> result, T* response) {
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = *std::move(result);
  return grpc::Status::OK;
}

}  // namespace

CoordinatorRpc::CoordinatorRpc(CoordinatorService* service)
    : service_(service) {}

grpc::Status CoordinatorRpc::DeregisterParameterServer(
    grpc::ServerContext* context,
    const DeregisterParameterServerRequest* request,
    DeregisterParameterServerResponse* response) {
  return ToGrpcStatus(service_->DeregisterParameterServer(*request));
}

grpc::Status CoordinatorRpc::DeregisterWorker(
    grpc::ServerContext* context, const DeregisterWorkerRequest* request,
    DeregisterWorkerResponse* response) {
  return ToGrpcStatus(service_->DeregisterWorker(*request));
}

grpc::Status CoordinatorRpc::RegisterWorker(
    grpc::ServerContext* context, const RegisterWorkerRequest* request,
    RegisterWorkerResponse* response) {
  return Reply(service_->RegisterWorker(*request, Caller(*context)), response);
}

grpc::Status CoordinatorRpc::Heartbeat(grpc::ServerContext* context,
                                       const HeartbeatRequest* request,
                                       HeartbeatResponse* response) {
  return Reply(
      service_->Heartbeat(*request, CallDeadline(*context),
                          [context] { return context->IsCancelled(); }),
      response);
}

grpc::Status CoordinatorRpc::ReportRank(grpc::ServerContext* context,
                                        const ReportRankRequest* request,
                                        ReportRankResponse* response) {
  return ToGrpcStatus(service_->ReportRank(*request));
}

grpc::Status CoordinatorRpc::ReportMetrics(grpc::ServerContext* context,
                                           const ReportMetricsRequest* request,
                                           ReportMetricsResponse* response) {
  return ToGrpcStatus(service_->ReportMetrics(*request));
}

grpc::Status CoordinatorRpc::StoreSet(grpc::ServerContext* context,
                                      const StoreSetRequest* request,
                                      StoreSetResponse* response) {
  return ToGrpcStatus(service_->StoreSet(*request));
}

grpc::Status CoordinatorRpc::StoreGet(grpc::ServerContext* context,
                                      const StoreGetRequest* request,
                                      StoreGetResponse* response) {
  return Reply(service_->StoreGet(*request, CallDeadline(*context),
                                  [context] { return context->IsCancelled(); }),
               response);
}

grpc::Status CoordinatorRpc::StoreAdd(grpc::ServerContext* context,
                                      const StoreAddRequest* request,
                                      StoreAddResponse* response) {
  return Reply(service_->StoreAdd(*request), response);
}

grpc::Status CoordinatorRpc::StoreWait(grpc::ServerContext* context,
                                       const StoreWaitRequest* request,
                                       StoreWaitResponse* response) {
  return ToGrpcStatus(
      service_->StoreWait(*request, CallDeadline(*context),
                          [context] { return context->IsCancelled(); }));
}

grpc::Status CoordinatorRpc::Barrier(grpc::ServerContext* context,
                                     const BarrierRequest* request,
                                     BarrierResponse* response) {
  return ToGrpcStatus(
      service_->Barrier(*request, CallDeadline(*context),
                        [context] { return context->IsCancelled(); }));
}

grpc::Status CoordinatorRpc::SubmitJob(grpc::ServerContext* context,
                                       const SubmitJobRequest* request,
                                       SubmitJobResponse* response) {
  if (absl::Status user = service_->CheckUser(PresentedToken(*context));
      !user.ok()) {
    return ToGrpcStatus(user);
  }
  return Reply(service_->SubmitJob(*request), response);
}

grpc::Status CoordinatorRpc::GetJob(grpc::ServerContext* context,
                                    const GetJobRequest* request,
                                    JobStatus* response) {
  if (absl::Status user = service_->CheckUser(PresentedToken(*context));
      !user.ok()) {
    return ToGrpcStatus(user);
  }
  return Reply(service_->GetJob(*request), response);
}

grpc::Status CoordinatorRpc::ListJobs(grpc::ServerContext* context,
                                      const ListJobsRequest* request,
                                      ListJobsResponse* response) {
  if (absl::Status user = service_->CheckUser(PresentedToken(*context));
      !user.ok()) {
    return ToGrpcStatus(user);
  }
  *response = service_->ListJobs();
  return grpc::Status::OK;
}

grpc::Status CoordinatorRpc::CancelJob(grpc::ServerContext* context,
                                       const CancelJobRequest* request,
                                       JobStatus* response) {
  if (absl::Status user = service_->CheckUser(PresentedToken(*context));
      !user.ok()) {
    return ToGrpcStatus(user);
  }
  return Reply(service_->CancelJob(*request), response);
}

grpc::Status CoordinatorRpc::WatchJob(grpc::ServerContext* context,
                                      const WatchJobRequest* request,
                                      grpc::ServerWriter<JobEvent>* writer) {
  if (absl::Status user = service_->CheckUser(PresentedToken(*context));
      !user.ok()) {
    return ToGrpcStatus(user);
  }
  JobWatchCursor cursor;
  auto cancelled = [context] { return context->IsCancelled(); };
  while (!cursor.done) {
    absl::StatusOr<std::optional<JobEvent>> event = service_->WaitForJobEvent(
        request->job_id(), &cursor,
        std::min(CallDeadline(*context), absl::Now() + kWatchPoll), cancelled);
    if (!event.ok()) return ToGrpcStatus(event.status());
    if (event->has_value() && !writer->Write(**event)) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "the watcher went away");
    }
    if (context->IsCancelled()) {
      return grpc::Status(grpc::StatusCode::CANCELLED,
                          "the watcher cancelled the stream");
    }
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorRpc::GetMetrics(grpc::ServerContext* context,
                                        const GetMetricsRequest* request,
                                        GetMetricsResponse* response) {
  if (absl::Status user = service_->CheckUser(PresentedToken(*context));
      !user.ok()) {
    return ToGrpcStatus(user);
  }
  return Reply(service_->GetMetrics(*request), response);
}

grpc::Status CoordinatorRpc::GetJobLogs(grpc::ServerContext* context,
                                        const GetJobLogsRequest* request,
                                        GetJobLogsResponse* response) {
  if (absl::Status user = service_->CheckUser(PresentedToken(*context));
      !user.ok()) {
    return ToGrpcStatus(user);
  }
  return Reply(service_->GetJobLogs(*request), response);
}

grpc::Status CoordinatorRpc::ListWorkers(grpc::ServerContext* context,
                                         const ListWorkersRequest* request,
                                         ListWorkersResponse* response) {
  if (absl::Status user = service_->CheckUser(PresentedToken(*context));
      !user.ok()) {
    return ToGrpcStatus(user);
  }
  *response = service_->ListWorkers();
  response->set_coordinator_version(Version());
  response->set_coordinator_wire_version(kWireVersion);
  return grpc::Status::OK;
}

grpc::Status CoordinatorRpc::SwitchJob(grpc::ServerContext* context,
                                       const SwitchJobRequest* request,
                                       SwitchJobResponse* response) {
  if (absl::Status user = service_->CheckUser(PresentedToken(*context));
      !user.ok()) {
    return ToGrpcStatus(user);
  }
  return Reply(service_->SwitchJob(*request), response);
}

grpc::Status CoordinatorRpc::SetLinkFacts(grpc::ServerContext* context,
                                          const SetLinkFactsRequest* request,
                                          ClusterLinkFacts* response) {
  if (absl::Status user = service_->CheckUser(PresentedToken(*context));
      !user.ok()) {
    return ToGrpcStatus(user);
  }
  return Reply(service_->SetLinkFacts(*request), response);
}

grpc::Status CoordinatorRpc::RegisterParameterServer(
    grpc::ServerContext* context, const RegisterParameterServerRequest* request,
    RegisterParameterServerResponse* response) {
  return Reply(service_->RegisterParameterServer(*request, Caller(*context)),
               response);
}

grpc::Status CoordinatorRpc::PsHeartbeat(grpc::ServerContext* context,
                                         const PsHeartbeatRequest* request,
                                         PsHeartbeatResponse* response) {
  return Reply(service_->PsHeartbeat(*request), response);
}

}  // namespace gradsync
