// Helpers for the coordinator's logic tests: a fake clock for leases, a
// fixture owning a CoordinatorService, and small builders for requests.
#ifndef GRADSYNC_TESTS_COORDINATOR_COORDINATOR_TEST_UTIL_H_
#define GRADSYNC_TESTS_COORDINATOR_COORDINATOR_TEST_UTIL_H_

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/wire_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/coordinator.pb.h"
#include "server/coordinator/coordinator_service.h"
#include "tests/jobspec/job_spec_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {

// A clock that moves only when told to.
class FakeClock {
 public:
  absl::Time Now() const {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_) = absl::FromUnixSeconds(1700000000);
};

inline StoreScope Scope(const std::string& worker_id, const std::string& job_id,
                        int64_t generation = 1) {
  StoreScope scope;
  scope.set_worker_id(worker_id);
  scope.set_job_id(job_id);
  scope.set_generation(generation);
  return scope;
}

// The credentials registration gave each daemon, by id, and the store
// scopes that carry them.
class CredentialBook {
 public:
  void Remember(const std::string& id, const std::string& credential) {
    credentials_[id] = credential;
  }
  // "" when `id` is unknown.
  std::string Credential(const std::string& id) const {
    auto it = credentials_.find(id);
    return it == credentials_.end() ? "" : it->second;
  }
  StoreScope Scope(const std::string& worker_id, const std::string& job_id,
                   int64_t generation = 1) const {
    StoreScope scope = gradsync::testing::Scope(worker_id, job_id, generation);
    scope.set_credential(Credential(worker_id));
    return scope;
  }

 private:
  std::map<std::string, std::string> credentials_;
};

class CoordinatorTest : public ::testing::Test {
 protected:
  static constexpr absl::Duration kLease = absl::Seconds(5);

  void SetUp() override { Start(); }

  // Creates service_ (again: a restart on state_store_).
  void Start() {
    CoordinatorConfig config;
    config.lease = kLease;
    config.heartbeat_interval = absl::Milliseconds(500);
    config.wait_slice = absl::Milliseconds(10);
    config.retained_ended_jobs = retained_ended_jobs_;
    config.checkpoint_roots = checkpoint_roots_;
    config.user_token = user_token_;
    config.join_token = join_token_;
    config.require_node_certificate = require_node_certificate_;
    config.event_log = [this](absl::string_view line) {
      events_.emplace_back(line);
    };
    config.clock = [this] { return clock_.Now(); };
    config.state_store = state_store_;
    absl::StatusOr<std::unique_ptr<CoordinatorService>> service =
        CoordinatorService::Create(config);
    ASSERT_THAT(service, IsOk());
    service_ = *std::move(service);
  }

  // Registers a worker on `host` with `devices` devices of `kind`, whose
  // jobs may use `job_memory_bytes` (0: no limit stated).
  std::string Register(const std::string& host, int devices,
                       const std::string& kind = "cpu",
                       int64_t job_memory_bytes = 0) {
    RegisterWorkerRequest request;
    request.set_host(host);
    request.set_address("10.0.0.1");
    request.set_pid(1234);
    request.set_wire_version(kWireVersion);
    request.set_job_memory_bytes(job_memory_bytes);
    for (int i = 0; i < devices; ++i) {
      Device* device = request.add_devices();
      device->set_kind(kind);
      device->set_index(i);
    }
    absl::StatusOr<RegisterWorkerResponse> response =
        service_->RegisterWorker(request);
    EXPECT_THAT(response, IsOk());
    if (!response.ok()) return "";
    credentials_.Remember(response->worker_id(), response->credential());
    return response->worker_id();
  }

  std::string Credential(const std::string& id) const {
    return credentials_.Credential(id);
  }
  StoreScope Scope(const std::string& worker_id, const std::string& job_id,
                   int64_t generation = 1) const {
    return credentials_.Scope(worker_id, job_id, generation);
  }

  [[nodiscard]] absl::StatusOr<std::string> Submit(const JobSpec& spec) {
    SubmitJobRequest request;
    *request.mutable_spec() = spec;
    absl::StatusOr<SubmitJobResponse> response = service_->SubmitJob(request);
    if (!response.ok()) return response.status();
    return response->job_id();
  }

  // A heartbeat that does not wait.
  HeartbeatResponse Poll(const std::string& worker_id) {
    HeartbeatRequest request;
    request.set_worker_id(worker_id);
    request.set_credential(Credential(worker_id));
    absl::StatusOr<HeartbeatResponse> response = service_->Heartbeat(request);
    EXPECT_THAT(response, IsOk());
    return response.ok() ? *response : HeartbeatResponse();
  }

  JobStatus Status(const std::string& job_id) {
    GetJobRequest request;
    request.set_job_id(job_id);
    absl::StatusOr<JobStatus> status = service_->GetJob(request);
    EXPECT_THAT(status, IsOk());
    return status.ok() ? *status : JobStatus();
  }

  [[nodiscard]] absl::Status Report(const std::string& worker_id,
                                    const std::string& job_id, int rank,
                                    RankState state, int64_t step = 0,
                                    const std::string& operation = "",
                                    const std::string& message = "") {
    ReportRankRequest request;
    request.set_worker_id(worker_id);
    request.set_credential(Credential(worker_id));
    request.set_job_id(job_id);
    request.set_rank(rank);
    request.set_state(state);
    request.set_step(step);
    request.set_operation(operation);
    request.set_message(message);
    return service_->ReportRank(request);
  }

  // Every rank of `job_id` reports `state` from the worker hosting it.
  void ReportAll(const std::string& job_id, RankState state) {
    const JobStatus status = Status(job_id);
    for (const RankPlacement& rank : status.ranks()) {
      ASSERT_THAT(Report(rank.worker_id(), job_id, rank.rank(), state), IsOk());
    }
  }

  StepMetrics Step(int rank, int64_t step, double loss = 1.0) {
    StepMetrics metrics;
    metrics.set_rank(rank);
    metrics.set_step(step);
    metrics.set_loss(loss);
    return metrics;
  }

  [[nodiscard]] absl::Status ReportSteps(
      const std::string& worker_id, const std::string& job_id,
      const std::vector<StepMetrics>& steps) {
    ReportMetricsRequest request;
    request.set_worker_id(worker_id);
    request.set_credential(Credential(worker_id));
    request.set_job_id(job_id);
    for (const StepMetrics& step : steps) *request.add_metrics() = step;
    return service_->ReportMetrics(request);
  }

  // A heartbeat of `worker_id` that long-polls (capped at lease / 2 =
  // 2.5 s) on another thread; `news` runs once it waits. `took`: how long
  // the heartbeat took.
  [[nodiscard]] absl::StatusOr<HeartbeatResponse> LongPoll(
      const std::string& worker_id, absl::FunctionRef<void()> news,
      absl::Duration* took) {
    absl::Notification waiting;
    absl::StatusOr<HeartbeatResponse> response;
    std::thread poller([&] {
      HeartbeatRequest request;
      request.set_worker_id(worker_id);
      request.set_credential(Credential(worker_id));
      request.set_wait_ms(60000);
      const absl::Time start = absl::Now();
      response = service_->Heartbeat(request, absl::InfiniteFuture(), [&] {
        if (!waiting.HasBeenNotified()) waiting.Notify();
        return false;
      });
      *took = absl::Now() - start;
    });
    waiting.WaitForNotification();
    news();
    poller.join();
    return response;
  }

  // Registers a parameter server at `address`; returns its id.
  std::string RegisterPs(const std::string& address,
                         const std::string& host = "ps-host",
                         int tensor_port = 0) {
    RegisterParameterServerRequest request;
    request.set_host(host);
    request.set_address(address);
    request.set_tensor_port(tensor_port);
    request.set_pid(4321);
    request.set_wire_version(kWireVersion);
    absl::StatusOr<RegisterParameterServerResponse> response =
        service_->RegisterParameterServer(request);
    EXPECT_THAT(response, IsOk());
    if (!response.ok()) return "";
    credentials_.Remember(response->ps_id(), response->credential());
    return response->ps_id();
  }

  // One shard's counters, as a parameter server reports them.
  static ps::ShardStats Shard(const std::string& job_id, int shard,
                              int64_t pushes = 0) {
    ps::ShardStats stats;
    stats.set_job_id(job_id);
    stats.set_shard(shard);
    stats.set_pushes(pushes);
    return stats;
  }

  [[nodiscard]] absl::StatusOr<PsHeartbeatResponse> PsBeat(
      const std::string& ps_id, const std::vector<ps::ShardStats>& shards) {
    PsHeartbeatRequest request;
    request.set_ps_id(ps_id);
    request.set_credential(Credential(ps_id));
    for (const ps::ShardStats& shard : shards) *request.add_shards() = shard;
    return service_->PsHeartbeat(request);
  }

  [[nodiscard]] absl::StatusOr<SwitchJobResponse> SwitchTo(
      const std::string& job_id, SyncMode mode) {
    SwitchJobRequest request;
    request.set_job_id(job_id);
    request.set_mode(mode);
    return service_->SwitchJob(request);
  }

  // A step metric of `rank` in `mode`, acting on switch request `epoch`.
  StepMetrics ModeStep(int rank, int64_t step, SyncMode mode,
                       int64_t epoch = 0) {
    StepMetrics metrics = Step(rank, step);
    metrics.set_mode(mode);
    metrics.set_switch_epoch(epoch);
    return metrics;
  }

  int retained_ended_jobs_ = 100;
  std::vector<std::string> checkpoint_roots_;  // set before SetUp
  std::string user_token_;                     // set before SetUp
  std::string join_token_;                     // set before SetUp
  bool require_node_certificate_ = false;      // set before SetUp
  std::vector<std::string> events_;            // the event log's lines
  std::shared_ptr<StateStore> state_store_;    // set before SetUp
  FakeClock clock_;
  std::unique_ptr<CoordinatorService> service_;
  CredentialBook credentials_;
};

// A job of three ranks: 0 and 1 on w1_ (host-a), 2 on w2_ (host-b); w3_
// (host-c) registers after it and stays idle.
class ThreeRankJobTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    CoordinatorTest::SetUp();
    w1_ = Register("host-a", 2);
    w2_ = Register("host-b", 1);
    absl::StatusOr<std::string> job = Submit(ValidSpec(3));
    ASSERT_TRUE(job.ok()) << job.status();
    job_ = *job;
    w3_ = Register("host-c", 1);
  }

  std::string w1_, w2_, w3_, job_;
};

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_COORDINATOR_COORDINATOR_TEST_UTIL_H_
