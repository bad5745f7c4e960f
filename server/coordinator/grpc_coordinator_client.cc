#include "server/coordinator/grpc_coordinator_client.h"

#include <grpc/grpc.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/channel_arguments.h>

#include <algorithm>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_connect.h"
#include "common/grpc_status.h"
#include "common/rpc_deadline.h"
#include "common/status_macros.h"
#include "proto/coordinator.grpc.pb.h"
#include "security/tls.h"

namespace gradsync {
namespace {

constexpr int kKeepaliveTimeMs = 5 * 60 * 1000;
constexpr int kKeepaliveTimeoutMs = 20 * 1000;
// Despite its name, gRPC takes GRPC_ARG_MIN_RECONNECT_BACKOFF_MS as the
// shortest time a connection attempt may take before it is abandoned (the
// waits between attempts are SetReconnectBackoff's). At 100 ms, a TLS
// handshake with a coordinator on a busy host could not finish
// (grpc/grpc#33423); the handshake also needs a polling thread, see
// DaemonCoordinatorClientOptions.
constexpr int kMinReconnectBackoffMs = 5000;

class GrpcCoordinatorClient final : public CoordinatorClient {
 public:
  GrpcCoordinatorClient(std::shared_ptr<grpc::Channel> channel,
                        std::string target,
                        GrpcCoordinatorClientOptions options)
      : channel_(std::move(channel)),
        stub_(Coordinator::NewStub(channel_)),
        target_(std::move(target)),
        options_(options) {}

  const std::string& target() const override { return target_; }

  [[nodiscard]] absl::StatusOr<RegisterWorkerResponse> RegisterWorker(
      const RegisterWorkerRequest& request,
      const CallOptions& options) override {
    return Unary<RegisterWorkerResponse>(
        options, [&](grpc::ClientContext* c, RegisterWorkerResponse* r) {
          return stub_->RegisterWorker(c, request, r);
        });
  }
  [[nodiscard]] absl::StatusOr<HeartbeatResponse> Heartbeat(
      const HeartbeatRequest& request, const CallOptions& options) override {
    return Unary<HeartbeatResponse>(
        options, [&](grpc::ClientContext* c, HeartbeatResponse* r) {
          return stub_->Heartbeat(c, request, r);
        });
  }
  [[nodiscard]] absl::StatusOr<DeregisterParameterServerResponse>
  DeregisterParameterServer(const DeregisterParameterServerRequest& request,
                            const CallOptions& options) override {
    return Unary<DeregisterParameterServerResponse>(
        options,
        [&](grpc::ClientContext* c, DeregisterParameterServerResponse* r) {
          return stub_->DeregisterParameterServer(c, request, r);
        });
  }

  [[nodiscard]] absl::StatusOr<DeregisterWorkerResponse> DeregisterWorker(
      const DeregisterWorkerRequest& request,
      const CallOptions& options) override {
    return Unary<DeregisterWorkerResponse>(
        options, [&](grpc::ClientContext* c, DeregisterWorkerResponse* r) {
          return stub_->DeregisterWorker(c, request, r);
        });
  }
  [[nodiscard]] absl::StatusOr<ReportRankResponse> ReportRank(
      const ReportRankRequest& request, const CallOptions& options) override {
    return Unary<ReportRankResponse>(
        options, [&](grpc::ClientContext* c, ReportRankResponse* r) {
          return stub_->ReportRank(c, request, r);
        });
  }
  [[nodiscard]] absl::StatusOr<ReportMetricsResponse> ReportMetrics(
      const ReportMetricsRequest& request,
      const CallOptions& options) override {
    return Unary<ReportMetricsResponse>(
        options, [&](grpc::ClientContext* c, ReportMetricsResponse* r) {
          return stub_->ReportMetrics(c, request, r);
        });
  }

  [[nodiscard]] absl::StatusOr<StoreSetResponse> StoreSet(
      const StoreSetRequest& request, const CallOptions& options) override {
    return Unary<StoreSetResponse>(
        options, [&](grpc::ClientContext* c, StoreSetResponse* r) {
          return stub_->StoreSet(c, request, r);
        });
  }
  [[nodiscard]] absl::StatusOr<StoreGetResponse> StoreGet(
      const StoreGetRequest& request, const CallOptions& options) override {
    return Unary<StoreGetResponse>(
        options, [&](grpc::ClientContext* c, StoreGetResponse* r) {
          return stub_->StoreGet(c, request, r);
        });
  }
  [[nodiscard]] absl::StatusOr<StoreAddResponse> StoreAdd(
      const StoreAddRequest& request, const CallOptions& options) override {
    return Unary<StoreAddResponse>(
        options, [&](grpc::ClientContext* c, StoreAddResponse* r) {
          return stub_->StoreAdd(c, request, r);
        });
  }
  [[nodiscard]] absl::StatusOr<StoreWaitResponse> StoreWait(
      const StoreWaitRequest& request, const CallOptions& options) override {
    return Unary<StoreWaitResponse>(
        options, [&](grpc::ClientContext* c, StoreWaitResponse* r) {
          return stub_->StoreWait(c, request, r);
        });
  }
  [[nodiscard]] absl::StatusOr<BarrierResponse> Barrier(
      const BarrierRequest& request, const CallOptions& options) override {
    return Unary<BarrierResponse>(
        options, [&](grpc::ClientContext* c, BarrierResponse* r) {
          return stub_->Barrier(c, request, r);
        });
  }

  [[nodiscard]] absl::StatusOr<SubmitJobResponse> SubmitJob(
      const SubmitJobRequest& request, const CallOptions& options) override {
    return Unary<SubmitJobResponse>(
        options, [&](grpc::ClientContext* c, SubmitJobResponse* r) {
          return stub_->SubmitJob(c, request, r);
        });
  }
  [[nodiscard]] absl::StatusOr<JobStatus> GetJob(
      const GetJobRequest& request, const CallOptions& options) override {
    return Unary<JobStatus>(options, [&](grpc::ClientContext* c, JobStatus* r) {
      return stub_->GetJob(c, request, r);
    });
  }
  [[nodiscard]] absl::StatusOr<ListJobsResponse> ListJobs(
      const ListJobsRequest& request, const CallOptions& options) override {
    return Unary<ListJobsResponse>(
        options, [&](grpc::ClientContext* c, ListJobsResponse* r) {
          return stub_->ListJobs(c, request, r);
        });
  }
  [[nodiscard]] absl::StatusOr<JobStatus> CancelJob(
      const CancelJobRequest& request, const CallOptions& options) override {
    return Unary<JobStatus>(options, [&](grpc::ClientContext* c, JobStatus* r) {
      return stub_->CancelJob(c, request, r);
    });
  }
  [[nodiscard]] absl::StatusOr<GetJobLogsResponse> GetJobLogs(
      const GetJobLogsRequest& request, const CallOptions& options) override {
    return Unary<GetJobLogsResponse>(
        options, [&](grpc::ClientContext* c, GetJobLogsResponse* r) {
          return stub_->GetJobLogs(c, request, r);
        });
  }

  [[nodiscard]] absl::StatusOr<GetMetricsResponse> GetMetrics(
      const GetMetricsRequest& request, const CallOptions& options) override {
    return Unary<GetMetricsResponse>(
        options, [&](grpc::ClientContext* c, GetMetricsResponse* r) {
          return stub_->GetMetrics(c, request, r);
        });
  }
  [[nodiscard]] absl::StatusOr<ListWorkersResponse> ListWorkers(
      const ListWorkersRequest& request, const CallOptions& options) override {
    return Unary<ListWorkersResponse>(
        options, [&](grpc::ClientContext* c, ListWorkersResponse* r) {
          return stub_->ListWorkers(c, request, r);
        });
  }
  [[nodiscard]] absl::StatusOr<SwitchJobResponse> SwitchJob(
      const SwitchJobRequest& request, const CallOptions& options) override {
    return Unary<SwitchJobResponse>(
        options, [&](grpc::ClientContext* c, SwitchJobResponse* r) {
          return stub_->SwitchJob(c, request, r);
        });
  }
  [[nodiscard]] absl::StatusOr<ClusterLinkFacts> SetLinkFacts(
      const SetLinkFactsRequest& request, const CallOptions& options) override {
    return Unary<ClusterLinkFacts>(
        options, [&](grpc::ClientContext* c, ClusterLinkFacts* r) {
          return stub_->SetLinkFacts(c, request, r);
        });
  }

  [[nodiscard]] absl::Status WatchJob(
      const WatchJobRequest& request, const CallOptions& options,
      const std::function<absl::Status(const JobEvent&)>& on_event) override {
    grpc::ClientContext context;
    SetRpcDeadline(&context, options.deadline);
    AddUserToken(&context);
    CancellableCalls::Scope scope(options.calls,
                                  [&context] { context.TryCancel(); });
    if (!scope.ok()) return scope.status();
    RETURN_IF_ERROR(ConnectFirst(options));
    std::unique_ptr<grpc::ClientReader<JobEvent>> reader =
        stub_->WatchJob(&context, request);
    JobEvent event;
    bool received = false;
    while (reader->Read(&event)) {
      received = true;
      absl::Status status = on_event(event);
      if (!status.ok()) {
        context.TryCancel();
        reader->Finish();  // the cancellation's own status
        return status;
      }
    }
    const grpc::Status status = reader->Finish();
    if (received && status.error_code() == grpc::StatusCode::UNAVAILABLE) {
      return absl::UnavailableError(
          absl::StrCat("lost the connection to the coordinator at ", target_,
                       " while following job ", request.job_id(), " (",
                       status.error_message(), ")"));
    }
    return Convert(status);
  }

  [[nodiscard]] absl::StatusOr<RegisterParameterServerResponse>
  RegisterParameterServer(const RegisterParameterServerRequest& request,
                          const CallOptions& options) override {
    return Unary<RegisterParameterServerResponse>(
        options,
        [&](grpc::ClientContext* c, RegisterParameterServerResponse* r) {
          return stub_->RegisterParameterServer(c, request, r);
        });
  }
  [[nodiscard]] absl::StatusOr<PsHeartbeatResponse> PsHeartbeat(
      const PsHeartbeatRequest& request, const CallOptions& options) override {
    return Unary<PsHeartbeatResponse>(
        options, [&](grpc::ClientContext* c, PsHeartbeatResponse* r) {
          return stub_->PsHeartbeat(c, request, r);
        });
  }

 private:
  void AddUserToken(grpc::ClientContext* context) const {
    if (options_.user_token.empty()) return;
    context->AddMetadata(std::string(kUserTokenMetadata),
                         absl::StrCat("Bearer ", options_.user_token));
  }

  // One unary call: deadline, cancellation, conversion.
  template <typename Response, typename Call>
  [[nodiscard]] absl::StatusOr<Response> Unary(const CallOptions& options,
                                               Call call) {
    grpc::ClientContext context;
    SetRpcDeadline(&context, options.deadline);
    AddUserToken(&context);
    CancellableCalls::Scope scope(options.calls,
                                  [&context] { context.TryCancel(); });
    if (!scope.ok()) return scope.status();
    RETURN_IF_ERROR(ConnectFirst(options));
    Response response;
    const grpc::Status status = call(&context, &response);
    if (!status.ok()) return Convert(status);
    return response;
  }

  // Brings the channel to READY first when asked to, for at most the
  // call's deadline and connect_timeout, and no longer than the call stays
  // uncancelled. OK when the call should go ahead: connected, or every
  // attempt failed with time left (a coordinator that is really not there
  // fails the call itself at once); UNAVAILABLE, marked unreachable, when
  // the call's deadline passed before any connection was made.
  [[nodiscard]] absl::Status ConnectFirst(const CallOptions& options) const {
    if (!options_.connect_first) return absl::OkStatus();
    const absl::Time deadline =
        std::min(options.deadline, absl::Now() + options_.connect_timeout);
    auto alive = [&options] {
      return options.calls == nullptr ? absl::OkStatus()
                                      : options.calls->status();
    };
    const absl::Status connected =
        ConnectChannel(channel_.get(), deadline, alive);
    if (connected.ok() || absl::Now() < options.deadline) {
      return absl::OkStatus();
    }
    absl::Status status = absl::UnavailableError(
        absl::StrCat("no connection to the coordinator at ", target_,
                     " before the call's deadline"));
    status.SetPayload(kCoordinatorUnreachablePayload, absl::Cord(target_));
    return status;
  }

  // grpc::Status -> absl::Status; a refused, unresolvable or broken
  // connection (or a deadline that passed before any connection was made)
  // leaves the channel in a state other than READY, while the
  // coordinator's own UNAVAILABLE (it is shutting down) arrives over a
  // READY one.
  [[nodiscard]] absl::Status Convert(const grpc::Status& grpc_status) const {
    absl::Status status = FromGrpcStatus(grpc_status);
    const grpc::StatusCode code = grpc_status.error_code();
    if ((code == grpc::StatusCode::UNAVAILABLE ||
         code == grpc::StatusCode::DEADLINE_EXCEEDED) &&
        channel_->GetState(/*try_to_connect=*/false) != GRPC_CHANNEL_READY) {
      status.SetPayload(kCoordinatorUnreachablePayload, absl::Cord(target_));
    }
    return status;
  }

  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<Coordinator::Stub> stub_;
  const std::string target_;
  const GrpcCoordinatorClientOptions options_;
};

}  // namespace

std::shared_ptr<grpc::Channel> NewCoordinatorChannel(
    const std::string& address, const CoordinatorChannelOptions& options) {
  grpc::ChannelArguments args;
  SetReconnectBackoff(&args);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, kMinReconnectBackoffMs);
  if (options.keepalive) {
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  }
  if (options.unlimited_receive) args.SetMaxReceiveMessageSize(-1);
  return NewGrpcChannel(address, options.security, args);
}

GrpcCoordinatorClientOptions DaemonCoordinatorClientOptions() {
  GrpcCoordinatorClientOptions options;
  options.connect_first = true;
  return options;
}

std::shared_ptr<CoordinatorClient> NewGrpcCoordinatorClient(
    std::shared_ptr<grpc::Channel> channel, std::string target,
    GrpcCoordinatorClientOptions options) {
  return std::make_shared<GrpcCoordinatorClient>(std::move(channel),
                                                 std::move(target), options);
}

}  // namespace gradsync
