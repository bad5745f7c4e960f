// ControlClient: the control commands' side of the Coordinator service
// (proto/coordinator.proto), over the one CoordinatorClient
// (server/coordinator/coordinator_client.h). It puts a deadline on every
// call, connects first (through gRPC 1.51's spurious connect failures) and,
// when the coordinator cannot be reached, says so in words that tell the
// user what to do next.
//
//   ControlClient client({.address = ResolveCoordinatorAddress(flag, env)});
//   ASSIGN_OR_RETURN(std::string job_id, client.SubmitJob(spec));
//   RETURN_IF_ERROR(client.WatchJob(job_id, absl::InfiniteDuration(),
//                                   [](const JobEvent& e) { ...; }));
//
// Errors of every call: UNAVAILABLE "cannot reach the coordinator at X: is
// it running? ..." when no connection could be made (fast: calls do not
// wait for a coordinator to appear); DEADLINE_EXCEEDED when the
// coordinator took longer than the deadline; otherwise the coordinator's
// own status (its codes are listed in coordinator.proto).
//
// Threading: one client may be used by one thread at a time.
#ifndef GRADSYNC_CLI_CONTROL_CONTROL_CLIENT_H_
#define GRADSYNC_CLI_CONTROL_CONTROL_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/coordinator.pb.h"
#include "security/tls.h"
#include "server/coordinator/coordinator_client.h"

namespace gradsync {
namespace cli {
namespace control {

// The coordinator address: `flag_value` when given, else `env_value` (the
// GRADSYNC_COORDINATOR variable, read once by the caller), else
// kDefaultCoordinatorAddress.
std::string ResolveCoordinatorAddress(absl::string_view flag_value,
                                      absl::string_view env_value);

// The message of the UNAVAILABLE error for `address` (exposed for tests).
std::string UnreachableMessage(absl::string_view address);

struct ClientConfig {
  std::string address = std::string(kDefaultCoordinatorAddress);
  // Deadline of each unary call.
  absl::Duration rpc_timeout = absl::Seconds(10);
  // The users' token, sent with every call (empty: none).
  std::string token;
  // Mutual TLS or plaintext (security/tls.h); default plaintext.
  GrpcSecurity security;
  // Not OK when the token or the TLS files could not be had (an
  // unreadable --token-file, a --tls-dir without client.pem): every call
  // fails with it.
  absl::Status setup_error;
};

class ControlClient {
 public:
  // Opens a channel to config.address (lazily: nothing is sent until the
  // first call).
  explicit ControlClient(ClientConfig config);

  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  const std::string& address() const { return config_.address; }

  // Returns the new job's id. INVALID_ARGUMENT: the coordinator rejected the
  // spec; RESOURCE_EXHAUSTED: more ranks than registered devices.
  [[nodiscard]] absl::StatusOr<std::string> SubmitJob(const JobSpec& spec);
  // NOT_FOUND: unknown job.
  [[nodiscard]] absl::StatusOr<JobStatus> GetJob(absl::string_view job_id);
  [[nodiscard]] absl::StatusOr<ListJobsResponse> ListJobs();
  // NOT_FOUND: unknown job; FAILED_PRECONDITION: it already ended.
  [[nodiscard]] absl::StatusOr<JobStatus> CancelJob(absl::string_view job_id);
  // NOT_FOUND: unknown job.
  [[nodiscard]] absl::StatusOr<GetMetricsResponse> GetMetrics(
      absl::string_view job_id);
  // The job's log lines from its workers (GetJobLogsRequest).
  [[nodiscard]] absl::StatusOr<GetJobLogsResponse> GetJobLogs(
      const GetJobLogsRequest& request);
  // Workers and parameter servers.
  [[nodiscard]] absl::StatusOr<ListWorkersResponse> ListWorkers();
  // Asks the job to synchronise through `mode` from the next step boundary
  // its ranks agree on; returns the request's epoch and the job's status.
  // NOT_FOUND: unknown job; FAILED_PRECONDITION: it ended, or PS mode with
  // no parameter server; INVALID_ARGUMENT: a mode that is not RING or PS.
  [[nodiscard]] absl::StatusOr<SwitchJobResponse> SwitchJob(
      absl::string_view job_id, SyncMode mode);
  // Replaces the link facts of the coordinator's model (--mode auto);
  // returns those now in force. INVALID_ARGUMENT: a negative value.
  [[nodiscard]] absl::StatusOr<ClusterLinkFacts> SetLinkFacts(
      double link_gbps, double link_alpha_us, absl::string_view source = "");

  // Follows the job's WatchJob stream, calling `on_event` for each event
  // until the stream ends (the job ended and every metric was sent) or
  // `on_event` returns an error (which is returned). `deadline` bounds the
  // whole stream (InfiniteDuration: none; a coordinator that dies is still
  // noticed, through the connection's keepalive). UNAVAILABLE naming the
  // address when the connection breaks mid-stream.
  [[nodiscard]] absl::Status WatchJob(
      absl::string_view job_id, absl::Duration deadline,
      const std::function<absl::Status(const JobEvent&)>& on_event);

 private:
  // A call's options: the deadline now + rpc_timeout.
  CallOptions Unary() const;
  // The client's status in the user's words: the coordinator named when it
  // could not be reached or did not answer `method` in time.
  [[nodiscard]] absl::Status Explain(const absl::Status& status,
                                     absl::string_view method) const;

  ClientConfig config_;
  std::shared_ptr<CoordinatorClient> client_;
};

}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_CONTROL_CLIENT_H_
