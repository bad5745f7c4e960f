#include "tests/util/fake_coordinator.h"

#include <arpa/inet.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "security/secret.h"
#include "server/coordinator/grpc_coordinator_client.h"

namespace gradsync::testing {
namespace {

constexpr absl::Duration kSlice = absl::Milliseconds(50);

}  // namespace

grpc::Status FakeCoordinator::RegisterWorker(
    grpc::ServerContext* context, const RegisterWorkerRequest* request,
    RegisterWorkerResponse* response) {
  absl::MutexLock lock(&mu_);
  const std::string id = absl::StrCat("w-", next_worker_++);
  workers_[id];
  registrations_.push_back(*request);
  ++events_;
  response->set_worker_id(id);
  response->set_lease_ms(5000);
  response->set_heartbeat_ms(50);
  return grpc::Status::OK;
}

grpc::Status FakeCoordinator::Heartbeat(grpc::ServerContext* context,
                                        const HeartbeatRequest* request,
                                        HeartbeatResponse* response) {
  absl::MutexLock lock(&mu_);
  ++heartbeats_;
  ++events_;
  last_held_job_ids_.assign(request->held_job_ids().begin(),
                            request->held_job_ids().end());
  const std::string id = request->worker_id();
  auto has_news = [this, &id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = workers_.find(id);
    return it == workers_.end() || !it->second.assignments.empty() ||
           !it->second.cancels.empty() || !it->second.switches.empty();
  };
  mu_.AwaitWithTimeout(absl::Condition(&has_news),
                       absl::Milliseconds(request->wait_ms()));
  if (given_away_.count(id) > 0) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat("the call for worker ", id,
                                     " carries a credential that is not its "
                                     "own"));
  }
  auto it = workers_.find(id);
  if (it == workers_.end()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("unknown worker ", id));
  }
  News& news = it->second;
  for (Assignment& a : news.assignments) *response->add_assignments() = a;
  for (std::string& c : news.cancels) response->add_cancel_job_ids(c);
  for (SwitchNotice& n : news.switches) *response->add_switches() = n;
  response->set_cancel_reason(news.reason);
  news = News{};
  return grpc::Status::OK;
}

grpc::Status FakeCoordinator::ReportRank(grpc::ServerContext* context,
                                         const ReportRankRequest* request,
                                         ReportRankResponse* response) {
  absl::MutexLock lock(&mu_);
  reports_.push_back(*request);
  ++events_;
  return grpc::Status::OK;
}

grpc::Status FakeCoordinator::ReportMetrics(grpc::ServerContext* context,
                                            const ReportMetricsRequest* request,
                                            ReportMetricsResponse* response) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(
                           +[](bool* hold) { return !*hold; }, &hold_metrics_),
                       absl::Seconds(30));
  if (!request->metrics().empty() && !request->log_lines().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "step metrics or log lines, not both");
  }
  for (const StepMetrics& m : request->metrics()) metrics_.push_back(m);
  for (const JobLogLine& l : request->log_lines()) log_lines_.push_back(l);
  ++events_;
  return grpc::Status::OK;
}

void FakeCoordinator::HoldMetrics(bool hold) {
  absl::MutexLock lock(&mu_);
  hold_metrics_ = hold;
}

grpc::Status FakeCoordinator::CheckStore(const StoreScope& scope,
                                         std::string* prefix) {
  absl::MutexLock lock(&mu_);
  scopes_.push_back(scope);
  ++events_;
  if (!store_failure_.ok()) return ToGrpcStatus(store_failure_);
  *prefix =
      absl::StrCat("job/", scope.job_id(), "/gen/", scope.generation(), "/");
  return grpc::Status::OK;
}

grpc::Status FakeCoordinator::StoreSet(grpc::ServerContext* context,
                                       const StoreSetRequest* request,
                                       StoreSetResponse* response) {
  std::string prefix;
  grpc::Status s = CheckStore(request->scope(), &prefix);
  if (!s.ok()) return s;
  return ToGrpcStatus(store_.Set(prefix + request->key(), request->value()));
}

grpc::Status FakeCoordinator::StoreGet(grpc::ServerContext* context,
                                       const StoreGetRequest* request,
                                       StoreGetResponse* response) {
  std::string prefix;
  grpc::Status s = CheckStore(request->scope(), &prefix);
  if (!s.ok()) return s;
  const absl::Time deadline =
      absl::Now() + absl::Milliseconds(request->timeout_ms());
  while (true) {
    // Short slices, so that a cancelled call (or server shutdown) ends.
    absl::StatusOr<std::string> value = store_.Get(
        prefix + request->key(), std::min(deadline, absl::Now() + kSlice));
    if (value.ok()) {
      response->set_value(*value);
      return grpc::Status::OK;
    }
    if (value.status().code() != absl::StatusCode::kDeadlineExceeded ||
        absl::Now() >= deadline) {
      return ToGrpcStatus(value.status());
    }
    if (context->IsCancelled()) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "caller went away");
    }
  }
}

grpc::Status FakeCoordinator::StoreAdd(grpc::ServerContext* context,
                                       const StoreAddRequest* request,
                                       StoreAddResponse* response) {
  std::string prefix;
  grpc::Status s = CheckStore(request->scope(), &prefix);
  if (!s.ok()) return s;
  absl::StatusOr<int64_t> value =
      store_.Add(prefix + request->key(), request->delta());
  if (!value.ok()) return ToGrpcStatus(value.status());
  response->set_value(*value);
  return grpc::Status::OK;
}

grpc::Status FakeCoordinator::StoreWait(grpc::ServerContext* context,
                                        const StoreWaitRequest* request,
                                        StoreWaitResponse* response) {
  std::string prefix;
  grpc::Status s = CheckStore(request->scope(), &prefix);
  if (!s.ok()) return s;
  std::vector<std::string> keys;
  for (const std::string& k : request->keys()) keys.push_back(prefix + k);
  const absl::Time deadline =
      absl::Now() + absl::Milliseconds(request->timeout_ms());
  while (true) {
    absl::Status status =
        store_.Wait(keys, std::min(deadline, absl::Now() + kSlice));
    if (status.code() != absl::StatusCode::kDeadlineExceeded ||
        absl::Now() >= deadline) {
      return ToGrpcStatus(status);
    }
    if (context->IsCancelled()) {
      return grpc::Status(grpc::StatusCode::CANCELLED, "caller went away");
    }
  }
}

void FakeCoordinator::Assign(const std::string& worker_id,
                             const Assignment& assignment) {
  absl::MutexLock lock(&mu_);
  workers_[worker_id].assignments.push_back(assignment);
}

void FakeCoordinator::CancelJob(const std::string& worker_id,
                                const std::string& job_id,
                                const std::string& reason) {
  absl::MutexLock lock(&mu_);
  News& news = workers_[worker_id];
  news.cancels.push_back(job_id);
  news.reason = reason;
}

void FakeCoordinator::NotifySwitch(const std::string& worker_id,
                                   const std::string& job_id, int64_t epoch) {
  absl::MutexLock lock(&mu_);
  SwitchNotice notice;
  notice.set_job_id(job_id);
  notice.set_epoch(epoch);
  workers_[worker_id].switches.push_back(notice);
}

void FakeCoordinator::DeclareLost(const std::string& worker_id) {
  absl::MutexLock lock(&mu_);
  workers_.erase(worker_id);
}

void FakeCoordinator::GiveIdAway(const std::string& worker_id) {
  absl::MutexLock lock(&mu_);
  given_away_.insert(worker_id);
}

void FakeCoordinator::FailStoreCalls(absl::Status status) {
  absl::MutexLock lock(&mu_);
  store_failure_ = std::move(status);
}

bool FakeCoordinator::WaitFor(const std::function<bool()>& done,
                              absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return done();
}

std::vector<RegisterWorkerRequest> FakeCoordinator::registrations() const {
  absl::MutexLock lock(&mu_);
  return registrations_;
}

std::vector<ReportRankRequest> FakeCoordinator::rank_reports() const {
  absl::MutexLock lock(&mu_);
  return reports_;
}

std::vector<StepMetrics> FakeCoordinator::metrics() const {
  absl::MutexLock lock(&mu_);
  return metrics_;
}

std::vector<JobLogLine> FakeCoordinator::log_lines() const {
  absl::MutexLock lock(&mu_);
  return log_lines_;
}

std::vector<StoreScope> FakeCoordinator::store_scopes() const {
  absl::MutexLock lock(&mu_);
  return scopes_;
}

int64_t FakeCoordinator::heartbeats() const {
  absl::MutexLock lock(&mu_);
  return heartbeats_;
}

std::vector<std::string> FakeCoordinator::last_held_job_ids() const {
  absl::MutexLock lock(&mu_);
  return last_held_job_ids_;
}

grpc::Status FakeCoordinator::RegisterParameterServer(
    grpc::ServerContext* context, const RegisterParameterServerRequest* request,
    RegisterParameterServerResponse* response) {
  absl::MutexLock lock(&mu_);
  ++events_;
  if (refuse_ps_) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                        "no parameter servers here");
  }
  ps_registrations_.push_back(*request);
  const std::string id = absl::StrCat("ps-", ps_registrations_.size());
  known_ps_.insert(id);
  response->set_ps_id(id);
  response->set_lease_ms(10 * ps_heartbeat_ms_);
  response->set_heartbeat_ms(ps_heartbeat_ms_);
  response->set_shard_key(std::string(kShardKey));
  return grpc::Status::OK;
}

std::string FakeCoordinator::PsToken(absl::string_view job_id) {
  return PsTokenForJob(kShardKey, job_id);
}

grpc::Status FakeCoordinator::DeregisterParameterServer(
    grpc::ServerContext* context,
    const DeregisterParameterServerRequest* request,
    DeregisterParameterServerResponse* response) {
  absl::MutexLock lock(&mu_);
  ++events_;
  ps_deregistrations_.push_back(*request);
  if (known_ps_.erase(request->ps_id()) == 0) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("unknown ps '", request->ps_id(), "'"));
  }
  return grpc::Status::OK;
}

std::vector<DeregisterParameterServerRequest>
FakeCoordinator::ps_deregistrations() const {
  absl::MutexLock lock(&mu_);
  return ps_deregistrations_;
}

grpc::Status FakeCoordinator::PsHeartbeat(grpc::ServerContext* context,
                                          const PsHeartbeatRequest* request,
                                          PsHeartbeatResponse* response) {
  absl::MutexLock lock(&mu_);
  ++events_;
  if (known_ps_.count(request->ps_id()) == 0) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("unknown ps '", request->ps_id(), "'"));
  }
  ps_heartbeats_.push_back(*request);
  for (const std::string& job : release_) response->add_release_job_ids(job);
  release_.clear();
  return grpc::Status::OK;
}

void FakeCoordinator::ReleaseJobs(std::vector<std::string> jobs) {
  absl::MutexLock lock(&mu_);
  release_ = std::move(jobs);
}

void FakeCoordinator::ForgetParameterServers() {
  absl::MutexLock lock(&mu_);
  known_ps_.clear();
}

void FakeCoordinator::RefusePsRegistrations() {
  absl::MutexLock lock(&mu_);
  refuse_ps_ = true;
}

std::vector<RegisterParameterServerRequest> FakeCoordinator::ps_registrations()
    const {
  absl::MutexLock lock(&mu_);
  return ps_registrations_;
}

std::vector<PsHeartbeatRequest> FakeCoordinator::ps_heartbeats() const {
  absl::MutexLock lock(&mu_);
  return ps_heartbeats_;
}

std::vector<ReportRankRequest> FakeCoordinator::Reports(
    const std::string& job_id, RankState state) const {
  absl::MutexLock lock(&mu_);
  std::vector<ReportRankRequest> out;
  for (const ReportRankRequest& r : reports_) {
    if (r.job_id() == job_id && r.state() == state) out.push_back(r);
  }
  return out;
}

FakeCoordinatorServer::FakeCoordinatorServer(int port, int64_t ps_heartbeat_ms,
                                             const GrpcSecurity& security)
    : fake_(ps_heartbeat_ms) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("127.0.0.1:", port),
                           MakeServerCredentials(security), &port_);
  builder.RegisterService(&fake_);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) port_ = 0;
  address_ = absl::StrCat("127.0.0.1:", port_);
}

FakeCoordinatorServer::~FakeCoordinatorServer() {
  if (server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  }
}

void FakeCoordinatorServer::Shutdown() {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
  server_ = nullptr;
}

std::shared_ptr<CoordinatorClient> FakeCoordinatorServer::NewClient() const {
  return NewTestClient(address_);
}

std::shared_ptr<CoordinatorClient> NewTestClient(const std::string& address) {
  return NewGrpcCoordinatorClient(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()),
      address);
}

std::string UnusedAddress() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
}

}  // namespace gradsync::testing
