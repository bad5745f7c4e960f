// A tiny in-test coordinator: only RegisterParameterServer and PsHeartbeat
// (the rest answer UNIMPLEMENTED), on 127.0.0.1 with real gRPC. It hands
// out ids "ps-1", "ps-2", ..., answers heartbeats of unknown ids with
// NOT_FOUND (as a restarted coordinator would), and records what it got.
#ifndef GRADSYNC_TESTS_PS_FAKE_COORDINATOR_H_
#define GRADSYNC_TESTS_PS_FAKE_COORDINATOR_H_

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "proto/coordinator.grpc.pb.h"

namespace gradsync {
namespace testing {

class FakeCoordinator final : public Coordinator::Service {
 public:
  // Serves on 127.0.0.1:`port` (0: any free port); port() is 0 if that
  // failed.
  explicit FakeCoordinator(int port = 0, int64_t heartbeat_ms = 50)
      : heartbeat_ms_(heartbeat_ms) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(absl::StrCat("127.0.0.1:", port),
                             grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr) port_ = 0;
  }
  ~FakeCoordinator() override { Shutdown(); }

  void Shutdown() {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now());
      server_->Wait();
      server_ = nullptr;
    }
  }

  int port() const { return port_; }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

  // The next heartbeat's reply names these jobs.
  void ReleaseJobs(std::vector<std::string> jobs) {
    absl::MutexLock lock(&mu_);
    release_ = std::move(jobs);
  }
  // Forgets every id (heartbeats get NOT_FOUND).
  void Forget() {
    absl::MutexLock lock(&mu_);
    known_.clear();
  }
  void RefuseRegistrations() {
    absl::MutexLock lock(&mu_);
    refuse_ = true;
  }

  std::vector<RegisterParameterServerRequest> registrations() const {
    absl::MutexLock lock(&mu_);
    return registrations_;
  }
  std::vector<PsHeartbeatRequest> heartbeats() const {
    absl::MutexLock lock(&mu_);
    return heartbeats_;
  }

  grpc::Status RegisterParameterServer(
      grpc::ServerContext* context,
      const RegisterParameterServerRequest* request,
      RegisterParameterServerResponse* response) override {
    absl::MutexLock lock(&mu_);
    if (refuse_) {
      return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                          "no parameter servers here");
    }
    registrations_.push_back(*request);
    const std::string id = absl::StrCat("ps-", registrations_.size());
    known_.insert(id);
    response->set_ps_id(id);
    response->set_lease_ms(10 * heartbeat_ms_);
    response->set_heartbeat_ms(heartbeat_ms_);
    return grpc::Status::OK;
  }

  grpc::Status PsHeartbeat(grpc::ServerContext* context,
                           const PsHeartbeatRequest* request,
                           PsHeartbeatResponse* response) override {
    absl::MutexLock lock(&mu_);
    if (known_.count(request->ps_id()) == 0) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("unknown ps '", request->ps_id(), "'"));
    }
    heartbeats_.push_back(*request);
    for (const std::string& job : release_) response->add_release_job_ids(job);
    release_.clear();
    return grpc::Status::OK;
  }

 private:
  const int64_t heartbeat_ms_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  mutable absl::Mutex mu_;
  std::vector<RegisterParameterServerRequest> registrations_
      ABSL_GUARDED_BY(mu_);
  std::vector<PsHeartbeatRequest> heartbeats_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> known_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> release_ ABSL_GUARDED_BY(mu_);
  bool refuse_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_PS_FAKE_COORDINATOR_H_
