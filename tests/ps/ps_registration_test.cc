// PsRegistration against a tiny in-test coordinator (fake_coordinator.h):
// registration fields, heartbeats with every shard of every job, releases,
// re-registration on NOT_FOUND, outages logged once, the registration
// timeout, refusals, and prompt stops.
#include "server/ps/daemon/ps_registration.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/grpc_connect.h"
#include "common/wire_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/daemon/ps_service.h"
#include "tests/ps/ps_test_util.h"
#include "tests/util/fake_coordinator.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::FakeCoordinatorServer;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::ShardConfig;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

template <typename Done>
bool Eventually(Done done, absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return done();
}

// Log lines, kept for the test to count.
class Log {
 public:
  std::function<void(absl::string_view)> sink() {
    return [this](absl::string_view line) {
      absl::MutexLock lock(&mu_);
      lines_.emplace_back(line);
    };
  }
  int Count(absl::string_view part) const {
    absl::MutexLock lock(&mu_);
    int n = 0;
    for (const std::string& line : lines_) n += absl::StrContains(line, part);
    return n;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

// A port nothing listens on.
int ClosedPort() {
  FakeCoordinatorServer gone;
  return gone.port();
}

class PsRegistrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddShard("a", 0, 2);
    AddShard("a", 1, 2);
    AddShard("b", 0, 1);
  }
  void AddShard(const std::string& job, int shard, int num_shards) {
    ShardSpec spec;
    spec.config = ShardConfig(1, shard == 0 ? 0 : 10, shard == 0 ? 10 : 20);
    spec.config.job_id = job;
    spec.config.shard = shard;
    spec.num_shards = num_shards;
    spec.total_elements = 10 * static_cast<size_t>(num_shards);
    ASSERT_THAT(service_.CreateShard(spec), IsOk());
  }
  PsRegistrationConfig Config(const std::string& coordinator) {
    PsRegistrationConfig config;
    config.coordinator = coordinator;
    config.host = "ps-host";
    config.address = "10.0.0.5:29600";
    config.pid = 4242;
    config.retry_interval = absl::Milliseconds(20);
    config.log = log_.sink();
    return config;
  }

  PsService service_;
  Log log_;
};

TEST_F(PsRegistrationTest, Deregister_AfterStop_SendsIdAndReason) {
  // Issue 44: a server stopped with SIGTERM stayed LIVE until its lease
  // expired. The daemon now deregisters on its way out (after Stop, which
  // cancelled everything else).
  FakeCoordinatorServer coordinator;
  ASSERT_NE(coordinator.port(), 0);
  PsRegistration registration(Config(coordinator.address()),
                              ConnectCoordinator(coordinator.address()),
                              &service_);
  registration.Deregister("before registering");  // nothing to withdraw
  EXPECT_TRUE(coordinator.fake().ps_deregistrations().empty());
  ASSERT_THAT(registration.Register(), IsOk());
  registration.StartHeartbeats();
  registration.Stop();
  registration.Deregister("shutting down (Terminated)");
  const std::vector<DeregisterParameterServerRequest> sent =
      coordinator.fake().ps_deregistrations();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].ps_id(), "ps-1");
  EXPECT_EQ(sent[0].reason(), "shutting down (Terminated)");
  EXPECT_EQ(log_.Count("deregistered ps-1 from the coordinator"), 1);
}

TEST_F(PsRegistrationTest, Register_ThenHeartbeatsCarryEveryShard) {
  FakeCoordinatorServer coordinator;
  ASSERT_NE(coordinator.port(), 0);
  PsRegistration registration(Config(coordinator.address()),
                              ConnectCoordinator(coordinator.address()),
                              &service_);
  ASSERT_THAT(registration.Register(), IsOk());
  EXPECT_EQ(registration.ps_id(), "ps-1");
  ASSERT_EQ(coordinator.fake().ps_registrations().size(), 1u);
  const RegisterParameterServerRequest request =
      coordinator.fake().ps_registrations()[0];
  EXPECT_EQ(request.host(), "ps-host");
  EXPECT_EQ(request.address(), "10.0.0.5:29600");
  EXPECT_EQ(request.pid(), 4242);
  EXPECT_EQ(request.wire_version(), kWireVersion);
  registration.StartHeartbeats();
  ASSERT_TRUE(Eventually(
      [&]() { return coordinator.fake().ps_heartbeats().size() >= 3; }));
  const PsHeartbeatRequest beat = coordinator.fake().ps_heartbeats().back();
  EXPECT_EQ(beat.ps_id(), "ps-1");
  ASSERT_EQ(beat.shards_size(), 3);
  EXPECT_EQ(beat.shards(0).job_id(), "a");
  EXPECT_EQ(beat.shards(1).job_id(), "a");
  EXPECT_EQ(beat.shards(1).shard(), 1);
  EXPECT_EQ(beat.shards(1).begin(), 10);
  EXPECT_EQ(beat.shards(2).job_id(), "b");
  // The server saw the third heartbeat; wait until the client counted its
  // reply too (it does so after the RPC returns).
  ASSERT_TRUE(
      Eventually([&]() { return registration.stats().heartbeats >= 3; }));
  const absl::Time start = absl::Now();
  registration.Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_GE(registration.stats().heartbeats, 3);
}

TEST_F(PsRegistrationTest, Heartbeat_ReleaseJobIds_DropsThoseJobsShards) {
  FakeCoordinatorServer coordinator;
  PsRegistration registration(Config(coordinator.address()),
                              ConnectCoordinator(coordinator.address()),
                              &service_);
  ASSERT_THAT(registration.Register(), IsOk());
  coordinator.fake().ReleaseJobs({"a", "never-here"});
  registration.StartHeartbeats();
  ASSERT_TRUE(Eventually([&]() { return service_.num_shards() == 1; }));
  EXPECT_THAT(service_.FindShard("b", 0), IsOk());
  EXPECT_THAT(service_.FindShard("a", 0),
              StatusIs(absl::StatusCode::kNotFound));
  ASSERT_TRUE(Eventually([&]() {
    const std::vector<PsHeartbeatRequest> beats =
        coordinator.fake().ps_heartbeats();
    return !beats.empty() && beats.back().shards_size() == 1;
  }));
  EXPECT_EQ(registration.stats().jobs_released, 1);
  EXPECT_EQ(log_.Count("released 2 shards of job 'a'"), 1);
}

TEST_F(PsRegistrationTest,
       ReleasedShard_FinalCountersGoInTheNextHeartbeatOnly) {
  FakeCoordinatorServer coordinator;
  PsRegistration registration(Config(coordinator.address()),
                              ConnectCoordinator(coordinator.address()),
                              &service_);
  ASSERT_THAT(registration.Register(), IsOk());
  // Released by its job (a switch back to ring) before any heartbeat.
  ASSERT_THAT(service_.Release("b", -1), IsOk());
  registration.StartHeartbeats();
  ASSERT_TRUE(Eventually(
      [&]() { return coordinator.fake().ps_heartbeats().size() >= 2; }));
  const std::vector<PsHeartbeatRequest> beats =
      coordinator.fake().ps_heartbeats();
  ASSERT_EQ(beats[0].shards_size(), 3);
  EXPECT_EQ(beats[0].shards(0).job_id(), "b");  // released ones first
  EXPECT_EQ(beats[1].shards_size(), 2);         // then forgotten
  // Forgotten once the client has the reply (after the server saw it).
  EXPECT_TRUE(
      Eventually([&]() { return service_.UnreportedReleases().empty(); }));
  registration.Stop();
}

TEST_F(PsRegistrationTest, Heartbeat_NotFound_RegistersAgainWithNewId) {
  FakeCoordinatorServer coordinator;
  PsRegistration registration(Config(coordinator.address()),
                              ConnectCoordinator(coordinator.address()),
                              &service_);
  ASSERT_THAT(registration.Register(), IsOk());
  registration.StartHeartbeats();
  ASSERT_TRUE(Eventually(
      [&]() { return !coordinator.fake().ps_heartbeats().empty(); }));
  coordinator.fake().ForgetParameterServers();
  ASSERT_TRUE(Eventually([&]() { return registration.ps_id() == "ps-2"; }));
  ASSERT_TRUE(Eventually([&]() {
    return coordinator.fake().ps_heartbeats().back().ps_id() == "ps-2";
  }));
  EXPECT_EQ(registration.stats().registrations, 2);
  EXPECT_EQ(log_.Count("registering again"), 1);
}

TEST_F(PsRegistrationTest, CoordinatorDown_RetriesLoggedOnceThenRecovers) {
  auto coordinator = std::make_unique<FakeCoordinatorServer>();
  const int port = coordinator->port();
  const std::string address = coordinator->address();
  PsRegistrationConfig config = Config(address);
  // What --health-listen's readiness follows.
  std::atomic<int> in_touch{-1};
  config.on_contact = [&](bool ok) { in_touch = ok ? 1 : 0; };
  PsRegistration registration(config, ConnectCoordinator(address), &service_);
  ASSERT_THAT(registration.Register(), IsOk());
  EXPECT_EQ(in_touch.load(), 1);
  registration.StartHeartbeats();
  ASSERT_TRUE(Eventually(
      [&]() { return !coordinator->fake().ps_heartbeats().empty(); }));
  coordinator.reset();
  // Many heartbeats fail (every 50 ms after each one's connection attempts
  // of up to kConnectRetryWindow); the outage is logged once.
  ASSERT_TRUE(Eventually([&]() { return log_.Count("failed") > 0; }));
  EXPECT_EQ(in_touch.load(), 0);
  absl::SleepFor(2 * kConnectRetryWindow);
  EXPECT_EQ(log_.Count("failed"), 1);
  EXPECT_THAT(registration.stats().heartbeats, ::testing::Ge(1));
  // The coordinator comes back (restarted: it knows no ids).
  coordinator = std::make_unique<FakeCoordinatorServer>(port);
  ASSERT_EQ(coordinator->port(), port);
  ASSERT_TRUE(Eventually(
      [&]() { return !coordinator->fake().ps_heartbeats().empty(); }));
  EXPECT_EQ(registration.ps_id(), "ps-1");  // the new instance's first id
  EXPECT_EQ(registration.stats().registrations, 2);
  EXPECT_EQ(log_.Count("failed"), 1);
  EXPECT_EQ(log_.Count("reachable again"), 1);
  EXPECT_TRUE(Eventually([&]() { return in_touch.load() == 1; }));
}

TEST_F(PsRegistrationTest, Register_Unreachable_FailsAfterTimeoutNamingIt) {
  const std::string address = absl::StrCat("127.0.0.1:", ClosedPort());
  PsRegistrationConfig config = Config(address);
  config.register_timeout = absl::Milliseconds(600);
  PsRegistration registration(config, ConnectCoordinator(address), &service_);
  const absl::Time start = absl::Now();
  const absl::Status status = registration.Register();
  const absl::Duration took = absl::Now() - start;
  EXPECT_THAT(status,
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr(absl::StrCat("coordinator ", address)),
                             HasSubstr("is gradsync-coordinator running"))));
  EXPECT_GE(took, absl::Milliseconds(500));
  EXPECT_LT(took, absl::Seconds(3));
  EXPECT_EQ(log_.Count("cannot reach coordinator"), 1);
  EXPECT_EQ(registration.ps_id(), "");
}

TEST_F(PsRegistrationTest, Register_Refused_FailsAtOnce) {
  FakeCoordinatorServer coordinator;
  coordinator.fake().RefusePsRegistrations();
  PsRegistration registration(Config(coordinator.address()),
                              ConnectCoordinator(coordinator.address()),
                              &service_);
  const absl::Time start = absl::Now();
  EXPECT_THAT(registration.Register(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       AllOf(HasSubstr(coordinator.address()),
                             HasSubstr("does not know parameter servers"))));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST_F(PsRegistrationTest, Stop_WhileRegisteringOrIdle_ReturnsPromptly) {
  const std::string address = absl::StrCat("127.0.0.1:", ClosedPort());
  PsRegistration registration(Config(address), ConnectCoordinator(address),
                              &service_);
  std::thread stopper([&]() {
    absl::SleepFor(absl::Milliseconds(200));
    registration.Stop();
  });
  const absl::Time start = absl::Now();
  EXPECT_THAT(registration.Register(), StatusIs(absl::StatusCode::kCancelled));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  stopper.join();

  // A long heartbeat interval does not delay Stop.
  FakeCoordinatorServer slow(0, /*ps_heartbeat_ms=*/60000);
  PsRegistration idle(Config(slow.address()),
                      ConnectCoordinator(slow.address()), &service_);
  ASSERT_THAT(idle.Register(), IsOk());
  idle.StartHeartbeats();
  absl::SleepFor(absl::Milliseconds(50));
  const absl::Time stop = absl::Now();
  idle.Stop();
  EXPECT_LT(absl::Now() - stop, absl::Seconds(1));
}

}  // namespace
}  // namespace gradsync
