#include "cli/control/control_client.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/advertised_address.h"
#include "server/coordinator/grpc_coordinator_client.h"

namespace gradsync {
namespace cli {
namespace control {

std::string ResolveCoordinatorAddress(absl::string_view flag_value,
                                      absl::string_view env_value) {
  if (!flag_value.empty()) return std::string(flag_value);
  if (!env_value.empty()) return std::string(env_value);
  return std::string(kDefaultCoordinatorAddress);
}

std::string UnreachableMessage(absl::string_view address) {
  // `local up` is the answer only for this machine's coordinator; for
  // another host's, the operator checks that host (issue 44, item 5).
  if (!IsLoopbackHost(HostOf(address))) {
    return absl::StrCat(
        "cannot reach the coordinator at ", address,
        ": is it running on that host, listening on that port (its --listen "
        "must not be 127.0.0.1 for other hosts), and does a firewall let "
        "this host through? Or set --coordinator / GRADSYNC_COORDINATOR to "
        "another address");
  }
  return absl::StrCat(
      "cannot reach the coordinator at ", address,
      ": is it running? start a local cluster with `gradsync local up` or "
      "set --coordinator / GRADSYNC_COORDINATOR");
}

ControlClient::ControlClient(ClientConfig config) : config_(std::move(config)) {
  CoordinatorChannelOptions channel;
  channel.keepalive = true;          // a vanished host during WatchJob
  channel.unlimited_receive = true;  // metrics of long jobs
  GrpcCoordinatorClientOptions options;
  options.connect_first = true;
  options.connect_timeout = config_.rpc_timeout;
  options.user_token = config_.token;
  channel.security = config_.security;
  client_ =
      NewGrpcCoordinatorClient(NewCoordinatorChannel(config_.address, channel),
                               config_.address, options);
}

CallOptions ControlClient::Unary() const {
  CallOptions options;
  options.deadline = absl::Now() + config_.rpc_timeout;
  return options;
}

absl::Status ControlClient::Explain(const absl::Status& status,
                                    absl::string_view method) const {
  if (status.ok()) return status;
  // A refused, unresolvable or broken connection, or a deadline that passed
  // before any connection was made, is the same story.
  if (IsCoordinatorUnreachable(status)) {
    return absl::UnavailableError(absl::StrCat(
        IsTlsHandshakeFailure(status)
            ? absl::StrCat("the TLS handshake with the coordinator at ",
                           config_.address, " failed")
            : UnreachableMessage(config_.address),
        " (", status.message(), ")", TlsConnectHint(config_.security, status)));
  }
  if (status.code() == absl::StatusCode::kDeadlineExceeded) {
    return absl::DeadlineExceededError(absl::StrCat(
        "the coordinator at ", config_.address, " did not answer ", method,
        " within ", absl::FormatDuration(config_.rpc_timeout),
        " (raise --timeout if it is busy)"));
  }
  return status;
}

absl::StatusOr<std::string> ControlClient::SubmitJob(const JobSpec& spec) {
  if (!config_.setup_error.ok()) return config_.setup_error;
  SubmitJobRequest request;
  *request.mutable_spec() = spec;
  absl::StatusOr<SubmitJobResponse> response =
      client_->SubmitJob(request, Unary());
  if (!response.ok()) return Explain(response.status(), "SubmitJob");
  return response->job_id();
}

absl::StatusOr<JobStatus> ControlClient::GetJob(absl::string_view job_id) {
  if (!config_.setup_error.ok()) return config_.setup_error;
  GetJobRequest request;
  request.set_job_id(std::string(job_id));
  absl::StatusOr<JobStatus> response = client_->GetJob(request, Unary());
  if (!response.ok()) return Explain(response.status(), "GetJob");
  return response;
}

absl::StatusOr<ListJobsResponse> ControlClient::ListJobs() {
  if (!config_.setup_error.ok()) return config_.setup_error;
  absl::StatusOr<ListJobsResponse> response =
      client_->ListJobs(ListJobsRequest(), Unary());
  if (!response.ok()) return Explain(response.status(), "ListJobs");
  return response;
}

absl::StatusOr<JobStatus> ControlClient::CancelJob(absl::string_view job_id) {
  if (!config_.setup_error.ok()) return config_.setup_error;
  CancelJobRequest request;
  request.set_job_id(std::string(job_id));
  absl::StatusOr<JobStatus> response = client_->CancelJob(request, Unary());
  if (!response.ok()) return Explain(response.status(), "CancelJob");
  return response;
}

absl::StatusOr<GetMetricsResponse> ControlClient::GetMetrics(
    absl::string_view job_id) {
  if (!config_.setup_error.ok()) return config_.setup_error;
  GetMetricsRequest request;
  request.set_job_id(std::string(job_id));
  absl::StatusOr<GetMetricsResponse> response =
      client_->GetMetrics(request, Unary());
  if (!response.ok()) return Explain(response.status(), "GetMetrics");
  return response;
}

absl::StatusOr<GetJobLogsResponse> ControlClient::GetJobLogs(
    const GetJobLogsRequest& request) {
  if (!config_.setup_error.ok()) return config_.setup_error;
  absl::StatusOr<GetJobLogsResponse> response =
      client_->GetJobLogs(request, Unary());
  if (!response.ok()) return Explain(response.status(), "GetJobLogs");
  return response;
}

absl::StatusOr<ListWorkersResponse> ControlClient::ListWorkers() {
  if (!config_.setup_error.ok()) return config_.setup_error;
  absl::StatusOr<ListWorkersResponse> response =
      client_->ListWorkers(ListWorkersRequest(), Unary());
  if (!response.ok()) return Explain(response.status(), "ListWorkers");
  return response;
}

absl::StatusOr<SwitchJobResponse> ControlClient::SwitchJob(
    absl::string_view job_id, SyncMode mode) {
  if (!config_.setup_error.ok()) return config_.setup_error;
  SwitchJobRequest request;
  request.set_job_id(std::string(job_id));
  request.set_mode(mode);
  absl::StatusOr<SwitchJobResponse> response =
      client_->SwitchJob(request, Unary());
  if (!response.ok()) return Explain(response.status(), "SwitchJob");
  return response;
}

absl::StatusOr<ClusterLinkFacts> ControlClient::SetLinkFacts(
    double link_gbps, double link_alpha_us, absl::string_view source) {
  if (!config_.setup_error.ok()) return config_.setup_error;
  SetLinkFactsRequest request;
  request.mutable_facts()->set_link_gbps(link_gbps);
  request.mutable_facts()->set_link_alpha_us(link_alpha_us);
  request.mutable_facts()->set_source(std::string(source));
  absl::StatusOr<ClusterLinkFacts> response =
      client_->SetLinkFacts(request, Unary());
  if (!response.ok()) return Explain(response.status(), "SetLinkFacts");
  return response;
}

absl::Status ControlClient::WatchJob(
    absl::string_view job_id, absl::Duration deadline,
    const std::function<absl::Status(const JobEvent&)>& on_event) {
  if (!config_.setup_error.ok()) return config_.setup_error;
  WatchJobRequest request;
  request.set_job_id(std::string(job_id));
  CallOptions options;
  if (deadline != absl::InfiniteDuration()) {
    options.deadline = absl::Now() + deadline;
  }
  bool stopped_by_caller = false;
  const absl::Status status =
      client_->WatchJob(request, options, [&](const JobEvent& event) {
        absl::Status s = on_event(event);
        stopped_by_caller = !s.ok();
        return s;
      });
  if (status.ok() || stopped_by_caller) return status;
  if (status.code() == absl::StatusCode::kDeadlineExceeded &&
      deadline != absl::InfiniteDuration()) {
    return absl::DeadlineExceededError(
        absl::StrCat("stopped following job ", job_id, " after ",
                     absl::FormatDuration(deadline),
                     " (--deadline); the job keeps running"));
  }
  return Explain(status, "WatchJob");
}

}  // namespace control
}  // namespace cli
}  // namespace gradsync
