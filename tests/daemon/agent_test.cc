// Agent against an in-process fake Coordinator, with fake jobs: it
// registers, long-polls, launches assigned jobs, cancels them when told,
// reaps finished ones, re-registers after being declared lost, and keeps
// retrying (and logging) while the coordinator is unreachable.
#include "worker/daemon/agent.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/wire_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/fake_coordinator.h"
#include "tests/util/status_matchers.h"
#include "worker/daemon/devices.h"

namespace gradsync {
namespace {

using ::gradsync::testing::FakeCoordinator;
using ::gradsync::testing::FakeCoordinatorServer;
using ::gradsync::testing::NewTestClient;
using ::gradsync::testing::UnusedAddress;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// The state of a fake job, shared by the agent's handle and the test, so
// that the test can look at it after the agent destroyed the handle.
class FakeJobState {
 public:
  // `linger`: a cancel leaves the job running until Finish, as ranks that
  // take a while to stop.
  explicit FakeJobState(bool linger = false) : linger_(linger) {}
  void Cancel(const absl::Status& reason) {
    absl::MutexLock lock(&mu_);
    cancel_reason_ = reason;
    cancelled_ = true;
    if (!linger_) done_ = true;
  }
  bool Done() const {
    absl::MutexLock lock(&mu_);
    return done_;
  }
  void Join() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));
    joined_ = true;
  }
  void Finish() {
    absl::MutexLock lock(&mu_);
    done_ = true;
  }
  bool cancelled() const {
    absl::MutexLock lock(&mu_);
    return cancelled_;
  }
  bool joined() const {
    absl::MutexLock lock(&mu_);
    return joined_;
  }
  [[nodiscard]] absl::Status cancel_reason() const {
    absl::MutexLock lock(&mu_);
    return cancel_reason_;
  }
  void NotifySwitch(int64_t epoch) {
    absl::MutexLock lock(&mu_);
    switches_.push_back(epoch);
  }
  std::vector<int64_t> switches() const {
    absl::MutexLock lock(&mu_);
    return switches_;
  }

 private:
  const bool linger_;
  mutable absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool joined_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status cancel_reason_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> switches_ ABSL_GUARDED_BY(mu_);
};

// A job that runs until the test finishes it or the agent cancels it.
class FakeJob : public JobHandle {
 public:
  explicit FakeJob(std::shared_ptr<FakeJobState> state)
      : state_(std::move(state)) {}
  void Cancel(const absl::Status& reason) override { state_->Cancel(reason); }
  bool Done() const override { return state_->Done(); }
  void Join() override { state_->Join(); }
  void NotifySwitch(int64_t epoch) override { state_->NotifySwitch(epoch); }

 private:
  std::shared_ptr<FakeJobState> state_;
};

// Records launches and keeps every job's state.
class Launcher {
 public:
  JobLauncher Get() {
    return [this](const WorkerIdentity& worker, const Assignment& a)
               -> absl::StatusOr<std::unique_ptr<JobHandle>> {
      absl::MutexLock lock(&mu_);
      launches_.push_back({worker.id, a.job_id()});
      if (fail_) return absl::InternalError("launcher refuses");
      jobs_.push_back(std::make_shared<FakeJobState>(linger_));
      return std::unique_ptr<JobHandle>(new FakeJob(jobs_.back()));
    };
  }
  void set_fail(bool fail) {
    absl::MutexLock lock(&mu_);
    fail_ = fail;
  }
  void set_linger(bool linger) {
    absl::MutexLock lock(&mu_);
    linger_ = linger;
  }
  std::vector<std::pair<std::string, std::string>> launches() const {
    absl::MutexLock lock(&mu_);
    return launches_;
  }
  // Job `i` in launch order, or null.
  FakeJobState* job(size_t i) const {
    absl::MutexLock lock(&mu_);
    return i < jobs_.size() ? jobs_[i].get() : nullptr;
  }

 private:
  mutable absl::Mutex mu_;
  bool fail_ ABSL_GUARDED_BY(mu_) = false;
  bool linger_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::pair<std::string, std::string>> launches_
      ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<FakeJobState>> jobs_ ABSL_GUARDED_BY(mu_);
};

// Collects log lines.
class LogSink {
 public:
  LogFn Get() {
    return [this](absl::string_view line) {
      absl::MutexLock lock(&mu_);
      lines_.emplace_back(line);
    };
  }
  bool Contains(absl::string_view text) const {
    absl::MutexLock lock(&mu_);
    for (const std::string& l : lines_) {
      if (absl::StrContains(l, text)) return true;
    }
    return false;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

AgentConfig Config(const std::string& coordinator, LogSink* log) {
  AgentConfig c;
  c.coordinator = coordinator;
  c.host = "host-a";
  c.address = "127.0.0.1";
  c.devices = *ParseDevices("cpu:2");
  c.pid = 42;
  c.rpc_timeout = absl::Seconds(2);
  c.min_backoff = absl::Milliseconds(20);
  c.max_backoff = absl::Milliseconds(100);
  c.log = log->Get();
  return c;
}

Assignment MakeAssignment(const std::string& job, int64_t generation = 0) {
  Assignment a;
  a.set_job_id(job);
  a.set_generation(generation);
  a.set_world_size(2);
  a.add_ranks(0);
  a.add_ranks(1);
  return a;
}

class AgentTest : public ::testing::Test {
 protected:
  FakeCoordinator& fake() { return server_.fake(); }
  // Starts the agent and waits for its registration.
  void StartAgent(int64_t max_job_memory_bytes = 0) {
    AgentConfig config = Config(server_.address(), &log_);
    config.max_job_memory_bytes = max_job_memory_bytes;
    agent_ = std::make_unique<Agent>(std::move(config), server_.NewClient(),
                                     launcher_.Get());
    agent_->Start();
    ASSERT_TRUE(fake().WaitFor([&] { return !agent_->worker_id().empty(); }));
  }

  FakeCoordinatorServer server_;
  LogSink log_;
  Launcher launcher_;
  std::unique_ptr<Agent> agent_;
};

TEST_F(AgentTest, Register_SendsHostAddressDevicesAndHeartbeats) {
  StartAgent();
  EXPECT_EQ(agent_->worker_id(), "w-1");
  const std::vector<RegisterWorkerRequest> regs = fake().registrations();
  ASSERT_EQ(regs.size(), 1u);
  EXPECT_EQ(regs[0].host(), "host-a");
  EXPECT_EQ(regs[0].address(), "127.0.0.1");
  EXPECT_EQ(regs[0].pid(), 42);
  EXPECT_EQ(regs[0].wire_version(), kWireVersion);
  ASSERT_EQ(regs[0].devices_size(), 2);
  EXPECT_EQ(regs[0].devices(1).kind(), "cpu");
  EXPECT_EQ(regs[0].devices(1).index(), 1);
  EXPECT_TRUE(fake().WaitFor([&] { return fake().heartbeats() >= 3; }));
  EXPECT_TRUE(log_.Contains("registered with coordinator"));
}

TEST_F(AgentTest, Assignment_StartsJob_ThenFinishedJobIsReaped) {
  StartAgent();
  fake().Assign("w-1", MakeAssignment("job-1"));
  ASSERT_TRUE(fake().WaitFor([&] { return launcher_.job(0) != nullptr; }));
  EXPECT_THAT(
      launcher_.launches(),
      ElementsAre(std::make_pair(std::string("w-1"), std::string("job-1"))));
  EXPECT_THAT(agent_->jobs(), ElementsAre("job-1"));
  FakeJobState* job = launcher_.job(0);
  job->Finish();
  EXPECT_TRUE(fake().WaitFor([&] { return agent_->jobs().empty(); }));
  // The devices are free: a second job runs on the same agent.
  fake().Assign("w-1", MakeAssignment("job-2"));
  ASSERT_TRUE(fake().WaitFor([&] { return launcher_.job(1) != nullptr; }));
  EXPECT_THAT(agent_->jobs(), ElementsAre("job-2"));
}

TEST_F(AgentTest, CancelNews_CancelsThatJobWithTheReason) {
  StartAgent();
  fake().Assign("w-1", MakeAssignment("job-1"));
  fake().Assign("w-1", MakeAssignment("job-2"));
  ASSERT_TRUE(fake().WaitFor([&] { return launcher_.job(1) != nullptr; }));
  FakeJobState* job1 = launcher_.job(0);
  FakeJobState* job2 = launcher_.job(1);
  fake().CancelJob("w-1", "job-2", "rank 3 failed at step 7");
  ASSERT_TRUE(fake().WaitFor([&] { return job2->cancelled(); }));
  EXPECT_THAT(std::string(job2->cancel_reason().message()),
              HasSubstr("rank 3 failed at step 7"));
  EXPECT_FALSE(job1->cancelled());
  EXPECT_TRUE(fake().WaitFor(
      [&] { return agent_->jobs() == std::vector<std::string>{"job-1"}; }));
  job1->Finish();
}

TEST_F(AgentTest, SwitchNotice_ReachesThatJobOnly) {
  StartAgent();
  fake().Assign("w-1", MakeAssignment("job-1"));
  fake().Assign("w-1", MakeAssignment("job-2"));
  ASSERT_TRUE(fake().WaitFor([&] { return launcher_.job(1) != nullptr; }));
  fake().NotifySwitch("w-1", "job-2", 3);
  fake().NotifySwitch("w-1", "job-unknown", 4);  // ignored
  FakeJobState* job2 = launcher_.job(1);
  ASSERT_TRUE(fake().WaitFor([&] { return !job2->switches().empty(); }));
  EXPECT_THAT(job2->switches(), ElementsAre(3));
  EXPECT_TRUE(launcher_.job(0)->switches().empty());
  launcher_.job(0)->Finish();
  job2->Finish();
}

TEST_F(AgentTest, DeclaredLost_CancelsJobsAndRegistersAgain) {
  StartAgent();
  fake().Assign("w-1", MakeAssignment("job-1"));
  ASSERT_TRUE(fake().WaitFor([&] { return launcher_.job(0) != nullptr; }));
  FakeJobState* job = launcher_.job(0);
  fake().DeclareLost("w-1");
  ASSERT_TRUE(fake().WaitFor([&] { return agent_->registrations() == 2; }));
  EXPECT_EQ(agent_->worker_id(), "w-2");
  EXPECT_TRUE(job->cancelled());
  EXPECT_THAT(std::string(job->cancel_reason().message()),
              HasSubstr("declared lost"));
  EXPECT_TRUE(log_.Contains("does not know worker w-1"));
}

// A coordinator restarted without its state database gave w-1 to another
// daemon: this one must not heartbeat under it for ever.
TEST_F(AgentTest, IdGivenAway_CancelsJobsAndRegistersAgain) {
  StartAgent();
  fake().Assign("w-1", MakeAssignment("job-1"));
  ASSERT_TRUE(fake().WaitFor([&] { return launcher_.job(0) != nullptr; }));
  FakeJobState* job = launcher_.job(0);
  fake().GiveIdAway("w-1");
  ASSERT_TRUE(fake().WaitFor([&] { return agent_->registrations() == 2; }));
  EXPECT_EQ(agent_->worker_id(), "w-2");
  EXPECT_TRUE(job->cancelled());
  EXPECT_TRUE(log_.Contains("refuses this daemon's credential for worker w-1"));
}

TEST_F(AgentTest, LauncherFailure_ReportsEveryRankFailed) {
  StartAgent();
  launcher_.set_fail(true);
  fake().Assign("w-1", MakeAssignment("job-1"));
  ASSERT_TRUE(fake().WaitFor(
      [&] { return fake().Reports("job-1", RANK_STATE_FAILED).size() == 2; }));
  for (const ReportRankRequest& r :
       fake().Reports("job-1", RANK_STATE_FAILED)) {
    EXPECT_EQ(r.worker_id(), "w-1");
    EXPECT_EQ(r.operation(), "job start");
    EXPECT_THAT(r.message(), HasSubstr("launcher refuses"));
  }
  EXPECT_TRUE(agent_->jobs().empty());
}

// Trust finding 2: a submit/cancel storm piled 154 jobs onto a 3-device
// worker, whose cancelled ranks were still stopping when the coordinator
// placed the next job, until the kernel killed it. The worker holds at
// most one job per device, stopping ones included; one more fails at
// once, named, and starts no ranks. Once one ends there is room again.
TEST_F(AgentTest, SubmitCancelStorm_JobsBeyondTheLimitFailAtOnce) {
  StartAgent();  // 2 devices: at most 2 jobs
  launcher_.set_linger(true);
  // However the test ends, the lingering jobs end, so that the agent's
  // Stop can join them.
  struct FinishAll {
    Launcher* launcher;
    ~FinishAll() {
      for (size_t i = 0; launcher->job(i) != nullptr; ++i) {
        launcher->job(i)->Finish();
      }
    }
  } finish_all{&launcher_};
  for (int i = 0; i < 2; ++i) {
    const std::string job = absl::StrCat("job-", i);
    fake().Assign("w-1", MakeAssignment(job));
    ASSERT_TRUE(fake().WaitFor([&] {
      return launcher_.launches().size() == static_cast<size_t>(i + 1);
    }));
    fake().CancelJob("w-1", job, "cancelled by the user");
    ASSERT_TRUE(fake().WaitFor([&] { return launcher_.job(i)->cancelled(); }));
  }
  // Two cancelled jobs still stopping: the third is refused.
  fake().Assign("w-1", MakeAssignment("job-4"));
  ASSERT_TRUE(fake().WaitFor(
      [&] { return fake().Reports("job-4", RANK_STATE_FAILED).size() == 2; }));
  for (const ReportRankRequest& r :
       fake().Reports("job-4", RANK_STATE_FAILED)) {
    EXPECT_EQ(r.operation(), "job start");
    EXPECT_THAT(r.message(),
                AllOf(HasSubstr("RESOURCE_EXHAUSTED"),
                      HasSubstr("already holds 2 jobs, running or still "
                                "stopping after a cancel (job-0, job-1)")));
  }
  EXPECT_EQ(launcher_.launches().size(), 2u);  // no rank of job-4 started
  // One ends: the next assignment starts.
  launcher_.job(0)->Finish();
  fake().Assign("w-1", MakeAssignment("job-5"));
  ASSERT_TRUE(fake().WaitFor([&] { return launcher_.launches().size() == 3; }));
  EXPECT_EQ(launcher_.launches().back().second, "job-5");
}

// The coordinator frees a job's devices only once a heartbeat leaves the
// job out: a cancelled job is listed until its ranks have ended.
TEST_F(AgentTest, Heartbeats_ListHeldJobs_StoppingOnesUntilTheyEnd) {
  StartAgent();
  launcher_.set_linger(true);
  fake().Assign("w-1", MakeAssignment("job-1"));
  ASSERT_TRUE(fake().WaitFor([&] { return launcher_.job(0) != nullptr; }));
  // However the test ends, the job ends, so that the agent's Stop joins it.
  struct Finish {
    FakeJobState* job;
    ~Finish() { job->Finish(); }
  } finish{launcher_.job(0)};
  ASSERT_TRUE(fake().WaitFor([&] {
    const std::vector<std::string> held = fake().last_held_job_ids();
    return held.size() == 1 && held[0] == "job-1";
  }));
  fake().CancelJob("w-1", "job-1", "cancelled by the user");
  ASSERT_TRUE(fake().WaitFor([&] { return launcher_.job(0)->cancelled(); }));
  // Still stopping: two more heartbeats still list it.
  const int64_t seen = fake().heartbeats();
  ASSERT_TRUE(fake().WaitFor([&] { return fake().heartbeats() >= seen + 2; }));
  EXPECT_THAT(fake().last_held_job_ids(), ElementsAre("job-1"));
  finish.job->Finish();
  EXPECT_TRUE(
      fake().WaitFor([&] { return fake().last_held_job_ids().empty(); }));
}

// Trust finding 7: a job whose ranks here need more than --max-job-memory
// by the spec's estimate fails at once, with the estimate, and starts no
// rank; the limit reaches the coordinator with the registration.
TEST_F(AgentTest, AssignmentBeyondMaxJobMemory_FailsAtOnceWithTheEstimate) {
  StartAgent(/*max_job_memory_bytes=*/int64_t{8} << 20);
  ASSERT_THAT(fake().registrations(), SizeIs(1));
  EXPECT_EQ(fake().registrations()[0].job_memory_bytes(), int64_t{8} << 20);
  Assignment big = MakeAssignment("job-big");
  big.mutable_spec()->mutable_model()->set_kind("synthetic");
  big.mutable_spec()->mutable_model()->set_synthetic_floats(1 << 20);
  big.mutable_spec()->mutable_optimizer()->set_name("adam");
  fake().Assign("w-1", big);
  ASSERT_TRUE(fake().WaitFor([&] {
    return fake().Reports("job-big", RANK_STATE_FAILED).size() == 2;
  }));
  for (const ReportRankRequest& r :
       fake().Reports("job-big", RANK_STATE_FAILED)) {
    EXPECT_EQ(r.operation(), "job start");
    // 1 Mi floats: 4 MiB each of parameters, gradients and the sync
    // buffer, 8 MiB of Adam state: 20 MiB a rank, 40 MiB for both.
    EXPECT_THAT(r.message(),
                AllOf(HasSubstr("RESOURCE_EXHAUSTED"),
                      HasSubstr("its 2 ranks here need about 40.0 MiB"),
                      HasSubstr("optimizer state 8.00 MiB"),
                      HasSubstr("--max-job-memory of 8.00 MiB")));
  }
  EXPECT_TRUE(launcher_.launches().empty());
  // A job that fits starts.
  Assignment small = MakeAssignment("job-small");
  small.mutable_spec()->mutable_model()->set_kind("synthetic");
  small.mutable_spec()->mutable_model()->set_synthetic_floats(1024);
  fake().Assign("w-1", small);
  ASSERT_TRUE(fake().WaitFor([&] { return launcher_.launches().size() == 1; }));
}

TEST_F(AgentTest, ReassignedJob_CancelsThePreviousGeneration) {
  StartAgent();
  fake().Assign("w-1", MakeAssignment("job-1", 0));
  ASSERT_TRUE(fake().WaitFor([&] { return launcher_.job(0) != nullptr; }));
  fake().Assign("w-1", MakeAssignment("job-1", 1));
  ASSERT_TRUE(fake().WaitFor([&] { return launcher_.job(1) != nullptr; }));
  EXPECT_TRUE(launcher_.job(0)->cancelled());
  EXPECT_TRUE(launcher_.job(0)->joined());
  EXPECT_FALSE(launcher_.job(1)->cancelled());
}

TEST_F(AgentTest, Stop_CancelsAndJoinsRunningJobs) {
  StartAgent();
  fake().Assign("w-1", MakeAssignment("job-1"));
  ASSERT_TRUE(fake().WaitFor([&] { return launcher_.job(0) != nullptr; }));
  FakeJobState* job = launcher_.job(0);
  const absl::Time start = absl::Now();
  agent_->Stop(absl::CancelledError("worker shutting down"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_TRUE(agent_->jobs().empty());
  EXPECT_TRUE(job->cancelled());
  EXPECT_TRUE(job->joined());
  EXPECT_THAT(std::string(job->cancel_reason().message()),
              HasSubstr("worker shutting down"));
  EXPECT_TRUE(log_.Contains("stopped 1 job"));
}

TEST(AgentUnreachableTest, RetriesWithBackoffAndStopsPromptly) {
  LogSink log;
  Launcher launcher;
  const std::string address = UnusedAddress();
  Agent agent(Config(address, &log), NewTestClient(address), launcher.Get());
  agent.Start();
  ASSERT_TRUE(FakeCoordinator().WaitFor(
      [&] { return log.Contains("registration with coordinator at"); },
      absl::Seconds(10)));
  EXPECT_TRUE(log.Contains(address));
  EXPECT_TRUE(log.Contains("retrying in"));
  const absl::Time start = absl::Now();
  agent.Stop(absl::CancelledError("test ends"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_TRUE(agent.worker_id().empty());
}

}  // namespace
}  // namespace gradsync
