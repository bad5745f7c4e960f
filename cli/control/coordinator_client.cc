#include "cli/control/coordinator_client.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_connect.h"
#include "common/grpc_status.h"
#include "common/rpc_deadline.h"

namespace gradsync {
namespace control {
namespace {

// Keepalive pings notice a coordinator host that vanished during a long
// WatchJob. Five minutes matches gRPC servers' default minimum ping
// interval, so the coordinator never answers them with "too many pings".
constexpr int kKeepaliveTimeMs = 5 * 60 * 1000;
constexpr int kKeepaliveTimeoutMs = 20 * 1000;

}  // namespace

std::string ResolveCoordinatorAddress(absl::string_view flag_value,
                                      absl::string_view env_value) {
  if (!flag_value.empty()) return std::string(flag_value);
  if (!env_value.empty()) return std::string(env_value);
  return std::string(kDefaultCoordinatorAddress);
}

std::string UnreachableMessage(absl::string_view address) {
  return absl::StrCat(
      "cannot reach the coordinator at ", address,
      ": is it running? start a local cluster with `gradsync local up` or "
      "set --coordinator / GRADSYNC_COORDINATOR");
}

CoordinatorClient::CoordinatorClient(ClientConfig config)
    : config_(std::move(config)) {
  grpc::ChannelArguments args;
  // Metrics of long jobs pass gRPC's default 4 MiB receive limit.
  args.SetMaxReceiveMessageSize(-1);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
  SetReconnectBackoff(&args);
  channel_ = grpc::CreateCustomChannel(
      config_.address, grpc::InsecureChannelCredentials(), args);
  stub_ = Coordinator::NewStub(channel_);
}

void CoordinatorClient::PrepareContext(grpc::ClientContext* context) const {
  const absl::Time deadline = absl::Now() + config_.rpc_timeout;
  ConnectFirst(deadline);
  SetRpcDeadline(context, deadline);
}

void CoordinatorClient::ConnectFirst(absl::Time deadline) const {
  // The result is not needed: a coordinator that is really not there fails
  // the call itself at once, which Convert explains.
  ConnectChannel(channel_.get(), deadline).IgnoreError();
}

absl::Status CoordinatorClient::Convert(const grpc::Status& status,
                                        absl::string_view method) {
  if (status.ok()) return absl::OkStatus();
  // The coordinator's own UNAVAILABLE (it is shutting down) arrives over a
  // READY channel; a refused, unresolvable or broken connection leaves the
  // channel in another state. A deadline that passed before any connection
  // was made is the same story as a refused one.
  const bool connected =
      channel_->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_READY;
  const grpc::StatusCode code = status.error_code();
  if (!connected && (code == grpc::StatusCode::UNAVAILABLE ||
                     code == grpc::StatusCode::DEADLINE_EXCEEDED)) {
    return absl::UnavailableError(
        absl::StrCat(UnreachableMessage(config_.address), " (",
                     status.error_message(), ")"));
  }
  if (code == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return absl::DeadlineExceededError(absl::StrCat(
        "the coordinator at ", config_.address, " did not answer ", method,
        " within ", absl::FormatDuration(config_.rpc_timeout),
        " (raise --timeout if it is busy)"));
  }
  return FromGrpcStatus(status);
}

absl::StatusOr<std::string> CoordinatorClient::SubmitJob(const JobSpec& spec) {
  grpc::ClientContext context;
  PrepareContext(&context);
  SubmitJobRequest request;
  *request.mutable_spec() = spec;
  SubmitJobResponse response;
  absl::Status status =
      Convert(stub_->SubmitJob(&context, request, &response), "SubmitJob");
  if (!status.ok()) return status;
  return response.job_id();
}

absl::StatusOr<JobStatus> CoordinatorClient::GetJob(absl::string_view job_id) {
  grpc::ClientContext context;
  PrepareContext(&context);
  GetJobRequest request;
  request.set_job_id(std::string(job_id));
  JobStatus response;
  absl::Status status =
      Convert(stub_->GetJob(&context, request, &response), "GetJob");
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<ListJobsResponse> CoordinatorClient::ListJobs() {
  grpc::ClientContext context;
  PrepareContext(&context);
  ListJobsResponse response;
  absl::Status status = Convert(
      stub_->ListJobs(&context, ListJobsRequest(), &response), "ListJobs");
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<JobStatus> CoordinatorClient::CancelJob(
    absl::string_view job_id) {
  grpc::ClientContext context;
  PrepareContext(&context);
  CancelJobRequest request;
  request.set_job_id(std::string(job_id));
  JobStatus response;
  absl::Status status =
      Convert(stub_->CancelJob(&context, request, &response), "CancelJob");
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<GetMetricsResponse> CoordinatorClient::GetMetrics(
    absl::string_view job_id) {
  grpc::ClientContext context;
  PrepareContext(&context);
  GetMetricsRequest request;
  request.set_job_id(std::string(job_id));
  GetMetricsResponse response;
  absl::Status status =
      Convert(stub_->GetMetrics(&context, request, &response), "GetMetrics");
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<ListWorkersResponse> CoordinatorClient::ListWorkers() {
  grpc::ClientContext context;
  PrepareContext(&context);
  ListWorkersResponse response;
  absl::Status status =
      Convert(stub_->ListWorkers(&context, ListWorkersRequest(), &response),
              "ListWorkers");
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<SwitchJobResponse> CoordinatorClient::SwitchJob(
    absl::string_view job_id, SyncMode mode) {
  grpc::ClientContext context;
  PrepareContext(&context);
  SwitchJobRequest request;
  request.set_job_id(std::string(job_id));
  request.set_mode(mode);
  SwitchJobResponse response;
  absl::Status status =
      Convert(stub_->SwitchJob(&context, request, &response), "SwitchJob");
  if (!status.ok()) return status;
  return response;
}

absl::Status CoordinatorClient::WatchJob(
    absl::string_view job_id, absl::Duration deadline,
    const std::function<absl::Status(const JobEvent&)>& on_event) {
  grpc::ClientContext context;
  const absl::Time start = absl::Now();
  if (deadline != absl::InfiniteDuration()) {
    SetRpcDeadline(&context, start + deadline);
  }
  // For at most one call's timeout (the stream itself may run for hours).
  ConnectFirst(start + std::min(config_.rpc_timeout, deadline));
  WatchJobRequest request;
  request.set_job_id(std::string(job_id));
  std::unique_ptr<grpc::ClientReader<JobEvent>> reader =
      stub_->WatchJob(&context, request);
  JobEvent event;
  bool received = false;
  while (reader->Read(&event)) {
    received = true;
    absl::Status status = on_event(event);
    if (!status.ok()) {
      context.TryCancel();
      reader->Finish();
      return status;
    }
  }
  const grpc::Status status = reader->Finish();
  if (status.ok()) return absl::OkStatus();
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
      deadline != absl::InfiniteDuration()) {
    return absl::DeadlineExceededError(
        absl::StrCat("stopped following job ", job_id, " after ",
                     absl::FormatDuration(deadline),
                     " (--deadline); the job keeps running"));
  }
  if (received && status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return absl::UnavailableError(absl::StrCat(
        "lost the connection to the coordinator at ", config_.address,
        " while following job ", job_id, " (", status.error_message(), ")"));
  }
  return Convert(status, "WatchJob");
}

}  // namespace control
}  // namespace gradsync
