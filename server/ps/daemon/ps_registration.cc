#include "server/ps/daemon/ps_registration.h"

#include <algorithm>
#include <iostream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/wire_version.h"
#include "server/coordinator/grpc_coordinator_client.h"
#include "server/ps/daemon/ps_proto.h"

namespace gradsync {
namespace {

// Failures that a later attempt may not see.
bool Transient(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::shared_ptr<CoordinatorClient> ConnectCoordinator(
    const std::string& address, const GrpcSecurity& security) {
  CoordinatorChannelOptions options;
  options.security = security;
  return NewGrpcCoordinatorClient(NewCoordinatorChannel(address, options),
                                  address, DaemonCoordinatorClientOptions());
}

PsRegistration::PsRegistration(PsRegistrationConfig config,
                               std::shared_ptr<CoordinatorClient> client,
                               PsService* service)
    : config_(std::move(config)),
      client_(std::move(client)),
      service_(service),
      heartbeat_(config_.default_heartbeat) {}

PsRegistration::~PsRegistration() { Stop(); }

void PsRegistration::Log(absl::string_view line) const {
  if (config_.log) {
    config_.log(line);
  } else {
    std::cerr << "gradsync-ps: " << line << std::endl;
  }
}

void PsRegistration::Deregister(absl::string_view reason) {
  DeregisterParameterServerRequest request;
  {
    absl::MutexLock lock(&mu_);
    if (ps_id_.empty()) return;
    request.set_ps_id(ps_id_);
    request.set_credential(credential_);
  }
  request.set_reason(std::string(reason));
  // Not through calls_: Stop has cancelled those, and this is the last.
  const absl::Status status =
      client_
          ->DeregisterParameterServer(
              request, {absl::Now() + config_.rpc_timeout, nullptr})
          .status();
  Log(status.ok()
          ? absl::StrCat("deregistered ", request.ps_id(),
                         " from the coordinator")
          : absl::StrCat("could not deregister ", request.ps_id(),
                         " (its lease will expire): ", status.ToString()));
}

std::string PsRegistration::ps_id() const {
  absl::MutexLock lock(&mu_);
  return ps_id_;
}

PsRegistrationStats PsRegistration::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

absl::Status PsRegistration::RegisterOnce(absl::Duration timeout) {
  RegisterParameterServerRequest request;
  request.set_host(config_.host);
  request.set_address(config_.address);
  request.set_pid(config_.pid);
  request.set_tensor_port(config_.tensor_port);
  request.set_wire_version(kWireVersion);
  request.set_join_token(config_.join_token);
  ASSIGN_OR_RETURN(const RegisterParameterServerResponse response,
                   client_->RegisterParameterServer(
                       request, {absl::Now() + timeout, &calls_}));
  if (response.ps_id().empty()) {
    return absl::InternalError(
        "the coordinator registered this parameter server without an id");
  }
  absl::MutexLock lock(&mu_);
  ps_id_ = response.ps_id();
  credential_ = response.credential();
  service_->SetShardKey(response.shard_key());
  heartbeat_ = response.heartbeat_ms() > 0
                   ? absl::Milliseconds(response.heartbeat_ms())
                   : config_.default_heartbeat;
  ++stats_.registrations;
  return absl::OkStatus();
}

absl::Status PsRegistration::Register() {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + config_.register_timeout;
  absl::Status last;
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    last = RegisterOnce(std::min(left, config_.rpc_timeout));
    if (config_.on_contact) config_.on_contact(last.ok());
    if (last.ok()) {
      Log(absl::StrCat("registered with coordinator ", config_.coordinator,
                       " as ", ps_id(), " (address ", config_.address, ")"));
      return absl::OkStatus();
    }
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) {
        return absl::CancelledError(
            absl::StrCat("stopped while registering with coordinator ",
                         config_.coordinator));
      }
    }
    if (!Transient(last.code())) {
      return absl::Status(
          last.code(),
          absl::StrCat(
              "coordinator ", config_.coordinator,
              " refused to register this parameter server: ", last.message(),
              last.code() == absl::StatusCode::kUnimplemented
                  ? "; that coordinator does not know parameter servers: run "
                    "it from the same gradsync build"
                  : ""));
    }
    if (!outage_) {
      outage_ = true;
      Log(absl::StrCat("cannot reach coordinator ", config_.coordinator, " (",
                       last.message(), "); retrying for up to ",
                       absl::FormatDuration(config_.register_timeout)));
    }
    if (!Sleep(std::min(config_.retry_interval, deadline - absl::Now()))) {
      return absl::CancelledError(absl::StrCat(
          "stopped while registering with coordinator ", config_.coordinator));
    }
  }
  return absl::Status(
      last.ok() ? absl::StatusCode::kDeadlineExceeded : last.code(),
      absl::StrCat("could not register with coordinator ", config_.coordinator,
                   " within ", absl::FormatDuration(config_.register_timeout),
                   last.ok() ? "" : absl::StrCat(": ", last.message()),
                   "; is gradsync-coordinator running at ", config_.coordinator,
                   ", and is --coordinator right?"));
}

void PsRegistration::StartHeartbeats() {
  absl::MutexLock lock(&mu_);
  // Stop may come first (a signal while registering).
  if (stopping_ || thread_.joinable()) return;
  outage_ = false;
  thread_ = std::thread([this]() { Loop(); });
}

void PsRegistration::Stop() {
  calls_.CancelAll(absl::CancelledError("the parameter server is stopping"));
  std::thread thread;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    thread = std::move(thread_);
  }
  if (thread.joinable()) thread.join();
}

bool PsRegistration::Sleep(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&stopping_), d);
  return !stopping_;
}

void PsRegistration::NoteOutcome(const absl::Status& status,
                                 absl::string_view what) {
  if (config_.on_contact) config_.on_contact(status.ok());
  if (status.ok()) {
    if (outage_) {
      outage_ = false;
      Log(absl::StrCat("coordinator ", config_.coordinator,
                       " is reachable again"));
    }
    return;
  }
  if (outage_) return;
  outage_ = true;
  Log(absl::StrCat(what, " to coordinator ", config_.coordinator,
                   " failed: ", status.message(),
                   "; retrying (logged once until it works again)"));
}

absl::Status PsRegistration::HeartbeatOnce() {
  PsHeartbeatRequest request;
  {
    absl::MutexLock lock(&mu_);
    request.set_ps_id(ps_id_);
    request.set_credential(credential_);
  }
  // Shards released since the last heartbeat first (their final counters,
  // e.g. the pushes of a job's last steps), then the live ones: a shard
  // recreated under the same name is reported last, so it wins.
  const std::vector<std::shared_ptr<PsShard>> released =
      service_->UnreportedReleases();
  for (const std::shared_ptr<PsShard>& shard : released) {
    ShardStatsToProto(*shard, request.add_shards());
  }
  for (const std::shared_ptr<PsShard>& shard : service_->AllShards()) {
    ShardStatsToProto(*shard, request.add_shards());
  }
  ASSIGN_OR_RETURN(const PsHeartbeatResponse response,
                   client_->PsHeartbeat(
                       request, {absl::Now() + config_.rpc_timeout, &calls_}));
  service_->ForgetReleased(released.size());
  {
    absl::MutexLock lock(&mu_);
    ++stats_.heartbeats;
  }
  for (const std::string& job_id : response.release_job_ids()) {
    // NOT_FOUND: none of its shards are here (any more).
    const absl::StatusOr<int> released = service_->Release(job_id, -1);
    if (!released.ok()) continue;
    Log(absl::StrCat("released ", *released, " shards of job '", job_id,
                     "' (the coordinator says it ended)"));
    absl::MutexLock lock(&mu_);
    ++stats_.jobs_released;
  }
  return absl::OkStatus();
}

void PsRegistration::Loop() {
  for (;;) {
    absl::Duration heartbeat;
    bool registered;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      heartbeat = heartbeat_;
      registered = !ps_id_.empty();
    }
    if (!registered) {
      const absl::Status status = RegisterOnce(config_.rpc_timeout);
      NoteOutcome(status, "registering");
      if (status.ok()) {
        Log(absl::StrCat("registered again with coordinator ",
                         config_.coordinator, " as ", ps_id()));
        continue;
      }
      if (!Sleep(config_.retry_interval)) return;
      continue;
    }
    if (!Sleep(heartbeat)) return;
    const absl::Status status = HeartbeatOnce();
    // PERMISSION_DENIED: the id now belongs to another server (a
    // coordinator restarted without its --state-db gave it away).
    if (status.code() == absl::StatusCode::kNotFound ||
        status.code() == absl::StatusCode::kPermissionDenied) {
      Log(absl::StrCat("coordinator ", config_.coordinator,
                       " does not know this parameter server (",
                       status.message(),
                       "); it was declared lost or the coordinator "
                       "restarted without its state: registering again"));
      if (config_.on_contact) config_.on_contact(false);
      absl::MutexLock lock(&mu_);
      ps_id_.clear();
      credential_.clear();
      continue;
    }
    NoteOutcome(status, "heartbeat");
  }
}

}  // namespace gradsync
