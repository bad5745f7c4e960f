// JobRunner (and the agent with the real runner) against an in-process
// fake Coordinator: ranks rendezvous through the coordinator's store, train,
// report READY / SUCCEEDED / FAILED and their step metrics; cancellation and
// a vanished peer end the job promptly with messages naming the rank; a
// rank placed on a GPU this host lacks fails cleanly, naming the device;
// one agent runs two jobs in a row. Runners on several hosts:
// job_runner_hosts_test.cc.
#include "worker/daemon/job_runner.h"

#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/daemon/job_runner_fixture.h"
#include "tests/util/fake_coordinator.h"
#include "tests/util/status_matchers.h"
#include "worker/daemon/agent.h"
#include "worker/daemon/devices.h"
#ifdef GRADSYNC_HAVE_CUDA_KERNELS
#include "worker/model/cuda/cuda_status.h"
#endif

namespace gradsync {
namespace {

#ifdef GRADSYNC_HAVE_CUDA_KERNELS
constexpr bool kCudaKernels = true;
bool HaveGpu() { return gpu::VisibleCudaDeviceCount() > 0; }
#else
constexpr bool kCudaKernels = false;
bool HaveGpu() { return false; }
#endif

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using job_runner_testing::JobRunnerTest;
using job_runner_testing::MakeAssignment;
using job_runner_testing::MlpSpec;
using job_runner_testing::SyntheticSpec;
using ::testing::HasSubstr;

TEST_F(JobRunnerTest, TwoLocalRanks_TrainAndReportEverything) {
  std::unique_ptr<JobRunner> runner =
      Start(MakeAssignment("job-1", MlpSpec(6), 2, {0, 1}));
  ASSERT_NE(runner, nullptr);
  ASSERT_TRUE(fake().WaitFor([&] { return runner->Done(); }));
  runner->Join();
  EXPECT_EQ(CountReports("job-1", RANK_STATE_READY), 2u);
  const std::vector<ReportRankRequest> ok =
      fake().Reports("job-1", RANK_STATE_SUCCEEDED);
  ASSERT_EQ(ok.size(), 2u);
  for (const ReportRankRequest& r : ok) {
    EXPECT_EQ(r.worker_id(), "w-1");
    EXPECT_EQ(r.step(), 5);
    EXPECT_GT(r.test_accuracy(), 0.0);
    EXPECT_EQ(r.test_accuracy(), ok[0].test_accuracy());
  }
  EXPECT_EQ(CountReports("job-1", RANK_STATE_FAILED), 0u);
  // Every step of both ranks arrived before SUCCEEDED, with equal hashes.
  std::map<int64_t, std::vector<StepMetrics>> by_step;
  for (const StepMetrics& m : fake().metrics()) by_step[m.step()].push_back(m);
  ASSERT_EQ(by_step.size(), 6u);
  for (const auto& [step, ms] : by_step) {
    ASSERT_EQ(ms.size(), 2u) << "step " << step;
    EXPECT_EQ(ms[0].param_hash(), ms[1].param_hash()) << "step " << step;
    EXPECT_EQ(ms[0].test_accuracy() > 0, step == 2 || step == 5);
  }
  for (const StoreScope& s : fake().store_scopes()) {
    EXPECT_EQ(s.worker_id(), "w-1");
    EXPECT_EQ(s.job_id(), "job-1");
    EXPECT_EQ(s.generation(), 1);
  }
  EXPECT_FALSE(fake().store_scopes().empty());
}

TEST_F(JobRunnerTest, RanksOnTwoWorkers_RendezvousAndSucceed) {
  std::unique_ptr<JobRunner> a =
      Start(MakeAssignment("job-2", MlpSpec(4), 2, {0}), "w-a");
  std::unique_ptr<JobRunner> b =
      Start(MakeAssignment("job-2", MlpSpec(4), 2, {1}), "w-b");
  ASSERT_TRUE(fake().WaitFor([&] { return a->Done() && b->Done(); }));
  EXPECT_EQ(CountReports("job-2", RANK_STATE_SUCCEEDED), 2u);
  for (const ReportRankRequest& r :
       fake().Reports("job-2", RANK_STATE_SUCCEEDED)) {
    EXPECT_EQ(r.worker_id(), r.rank() == 0 ? "w-a" : "w-b");
  }
}

// A name the coordinator would have refused, reaching the daemon anyway:
// the job fails naming the field; the daemon lives on.
TEST_F(JobRunnerTest, UnknownRingAlgorithm_FailsEveryRankNamingTheField) {
  JobSpec spec = MlpSpec(4);
  spec.set_ring_algorithm("butterfly");
  std::unique_ptr<JobRunner> runner =
      Start(MakeAssignment("job-algo", spec, 2, {0, 1}));
  ASSERT_TRUE(fake().WaitFor([&] { return runner->Done(); }));
  const std::vector<ReportRankRequest> failed =
      fake().Reports("job-algo", RANK_STATE_FAILED);
  ASSERT_EQ(failed.size(), 2u);
  for (const ReportRankRequest& r : failed) {
    EXPECT_EQ(r.operation(), "job spec");
    EXPECT_THAT(r.message(), HasSubstr("ringAlgorithm"));
  }
}

TEST_F(JobRunnerTest, BadSpec_FailsEveryRankNamingTheField) {
  JobSpec spec = MlpSpec(4);
  spec.mutable_optimizer()->set_name("lbfgs");
  std::unique_ptr<JobRunner> runner =
      Start(MakeAssignment("job-3", spec, 2, {0, 1}));
  ASSERT_TRUE(fake().WaitFor([&] { return runner->Done(); }));
  const std::vector<ReportRankRequest> failed =
      fake().Reports("job-3", RANK_STATE_FAILED);
  ASSERT_EQ(failed.size(), 2u);
  for (const ReportRankRequest& r : failed) {
    EXPECT_EQ(r.operation(), "job spec");
    EXPECT_THAT(r.message(), HasSubstr("optimizer.name"));
  }
  EXPECT_EQ(CountReports("job-3", RANK_STATE_READY), 0u);
}

// The worker's --checkpoint-root: a job resuming from elsewhere fails
// every rank before rendezvous, naming the field; nothing is read.
TEST_F(JobRunnerTest, CheckpointOutsideTheRoots_FailsEveryRankNamingIt) {
  JobRunnerConfig config = Config("w-1");
  config.checkpoint_roots = {"/data/ckpt"};
  JobSpec spec = MlpSpec(4);
  spec.mutable_checkpoint()->set_resume_from("/etc/passwd");
  absl::StatusOr<std::unique_ptr<JobRunner>> runner = JobRunner::Start(
      MakeAssignment("job-root", spec, 2, {0, 1}), config, server_.NewClient());
  ASSERT_THAT(runner, IsOk());
  ASSERT_TRUE(fake().WaitFor([&] { return (*runner)->Done(); }));
  const std::vector<ReportRankRequest> failed =
      fake().Reports("job-root", RANK_STATE_FAILED);
  ASSERT_EQ(failed.size(), 2u);
  for (const ReportRankRequest& r : failed) {
    EXPECT_EQ(r.operation(), "job spec");
    EXPECT_THAT(r.message(), HasSubstr("checkpoint.resumeFrom '/etc/passwd'"));
  }
  EXPECT_EQ(CountReports("job-root", RANK_STATE_READY), 0u);
}

// The worker's --tcp-congestion reaches the ranks' communicators: one the
// kernel refuses fails the job at rendezvous, naming it.
TEST_F(JobRunnerTest, RefusedCongestionControl_FailsRanksNamingIt) {
  JobRunnerConfig config = Config("w-1");
  config.tcp_congestion_control = "no-such-cc";
  absl::StatusOr<std::unique_ptr<JobRunner>> runner =
      JobRunner::Start(MakeAssignment("job-cc", MlpSpec(4), 2, {0, 1}), config,
                       server_.NewClient());
  ASSERT_THAT(runner, IsOk());
  ASSERT_TRUE(fake().WaitFor([&] { return (*runner)->Done(); }));
  const std::vector<ReportRankRequest> failed =
      fake().Reports("job-cc", RANK_STATE_FAILED);
  ASSERT_EQ(failed.size(), 2u);
  for (const ReportRankRequest& r : failed) {
    EXPECT_THAT(r.message(), HasSubstr("'no-such-cc'"));
  }
  EXPECT_EQ(CountReports("job-cc", RANK_STATE_SUCCEEDED), 0u);
}

// More of the job's ranks on the host than cores: its collectives wait
// without spinning (SpinPollsForHost), and the log says so; --spin-polls
// (JobRunnerConfig::spin_polls) overrides the rule.
TEST_F(JobRunnerTest, OversubscribedHost_CollectivesDoNotSpin) {
  for (const bool forced : {false, true}) {
    absl::Mutex mu;
    std::vector<std::string> lines;
    JobRunnerConfig config = Config("w-1");
    config.log = [&](absl::string_view line) {
      absl::MutexLock lock(&mu);
      lines.emplace_back(line);
    };
    if (forced) config.spin_polls = 10000;
    const std::string job = forced ? "job-forced" : "job-crowded";
    Assignment a = MakeAssignment(job, MlpSpec(3), 2, {0, 1});
    a.set_ranks_on_host(1 << 20);  // more than any host's cores
    absl::StatusOr<std::unique_ptr<JobRunner>> runner =
        JobRunner::Start(a, config, server_.NewClient());
    ASSERT_THAT(runner, IsOk());
    ASSERT_TRUE(fake().WaitFor([&] { return (*runner)->Done(); }));
    (*runner)->Join();
    EXPECT_EQ(CountReports(job, RANK_STATE_SUCCEEDED), 2u);
    absl::MutexLock lock(&mu);
    size_t quiet = 0;
    for (const std::string& line : lines) {
      if (absl::StrContains(line, "1048576 ranks of the job on this host") &&
          absl::StrContains(line, "collectives wait without spinning")) {
        ++quiet;
      }
    }
    EXPECT_EQ(quiet, forced ? 0u : 2u) << (forced ? "forced" : "auto");
  }
}

TEST_F(JobRunnerTest, Cancel_MidTraining_EndsRanksPromptly) {
  std::unique_ptr<JobRunner> runner =
      Start(MakeAssignment("job-4", SyntheticSpec(1000000, 5), 2, {0, 1}));
  ASSERT_TRUE(fake().WaitFor([&] { return fake().metrics().size() >= 4; }));
  const absl::Time start = absl::Now();
  runner->Cancel(absl::CancelledError("job cancelled by the user"));
  runner->Join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  const std::vector<ReportRankRequest> failed =
      fake().Reports("job-4", RANK_STATE_FAILED);
  ASSERT_EQ(failed.size(), 2u);
  for (const ReportRankRequest& r : failed) {
    EXPECT_THAT(r.message(), HasSubstr("job cancelled by the user"));
    EXPECT_GT(r.step(), 0);
  }
}

TEST_F(JobRunnerTest, Cancel_DuringRendezvous_EndsPromptly) {
  // World 3, but nobody hosts rank 2: the ranks wait in rendezvous.
  std::unique_ptr<JobRunner> runner =
      Start(MakeAssignment("job-5", MlpSpec(4), 3, {0, 1}));
  ASSERT_TRUE(
      fake().WaitFor([&] { return fake().store_scopes().size() >= 2; }));
  absl::SleepFor(absl::Milliseconds(100));
  const absl::Time start = absl::Now();
  runner->Cancel(absl::CancelledError("job cancelled by the user"));
  runner->Join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  const std::vector<ReportRankRequest> failed =
      fake().Reports("job-5", RANK_STATE_FAILED);
  ASSERT_EQ(failed.size(), 2u);
  for (const ReportRankRequest& r : failed) {
    EXPECT_EQ(r.operation(), "rendezvous");
  }
}

// A worker that vanishes mid-job (its ranks' connections close): the other
// worker's rank fails at once, and its report names the lost rank.
TEST_F(JobRunnerTest, PeerWorkerVanishes_SurvivorReportsTheRank) {
  std::unique_ptr<JobRunner> a =
      Start(MakeAssignment("job-6", SyntheticSpec(1000000, 5), 2, {0}), "w-a");
  std::unique_ptr<JobRunner> b =
      Start(MakeAssignment("job-6", SyntheticSpec(1000000, 5), 2, {1}), "w-b");
  ASSERT_TRUE(fake().WaitFor([&] { return fake().metrics().size() >= 4; }));
  const absl::Time start = absl::Now();
  b.reset();  // cancels and closes rank 1's connections
  ASSERT_TRUE(fake().WaitFor([&] { return a->Done(); }, absl::Seconds(5)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  std::vector<ReportRankRequest> failed;
  for (const ReportRankRequest& r :
       fake().Reports("job-6", RANK_STATE_FAILED)) {
    if (r.rank() == 0) failed.push_back(r);
  }
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].worker_id(), "w-a");
  EXPECT_EQ(failed[0].operation(), "gradient all-reduce");
  EXPECT_THAT(failed[0].message(), HasSubstr("rank 1"));
}

TEST_F(JobRunnerTest, Start_MalformedAssignment_ReturnsInvalidArgument) {
  Assignment a = MakeAssignment("job-7", MlpSpec(1), 2, {0, 2});
  EXPECT_THAT(
      JobRunner::Start(a, Config("w-1"), server_.NewClient()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank 2")));
  a = MakeAssignment("job-7", MlpSpec(1), 2, {0});
  a.add_ranks(1);  // two ranks, one device
  EXPECT_THAT(JobRunner::Start(a, Config("w-1"), server_.NewClient()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  a = MakeAssignment("job-7", MlpSpec(1), 2, {0});
  a.mutable_devices(0)->set_kind("tpu");
  EXPECT_THAT(JobRunner::Start(a, Config("w-1"), server_.NewClient()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tpu")));
  a = MakeAssignment("job-7", MlpSpec(1), 2, {0});
  a.mutable_devices(0)->set_kind("cuda");
  a.mutable_devices(0)->set_index(-1);
  EXPECT_THAT(JobRunner::Start(a, Config("w-1"), server_.NewClient()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cuda")));
  EXPECT_THAT(JobRunner::Start(MakeAssignment("job-7", MlpSpec(1), 1, {0}),
                               JobRunnerConfig{}, server_.NewClient()),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// A job placed on cuda:0 (rank 0) and cpu:1 (rank 1). Without a GPU (or
// without CUDA kernels) rank 0 fails its setup with a message naming the
// device, rank 1 fails on the aborted ring, and the runner ends promptly;
// on a GPU host both ranks train to the end.
TEST_F(JobRunnerTest, CudaRank_TrainsOnAGpuOrFailsCleanlyWithoutOne) {
  JobSpec spec = MlpSpec(4);
  spec.set_device("cuda");
  // One GPU rank and one CPU rank: a mixed job runs on the TCP ring (NCCL
  // needs every rank on a GPU).
  spec.set_ring_backend("tcp");
  Assignment a = MakeAssignment("job-8", spec, 2, {0, 1});
  a.mutable_devices(0)->set_kind("cuda");
  a.mutable_devices(0)->set_index(0);
  const absl::Time start = absl::Now();
  std::unique_ptr<JobRunner> runner = Start(a);
  ASSERT_NE(runner, nullptr);
  ASSERT_TRUE(fake().WaitFor([&] { return runner->Done(); }));
  runner->Join();
  if (HaveGpu()) {
    EXPECT_EQ(CountReports("job-8", RANK_STATE_SUCCEEDED), 2u);
    EXPECT_EQ(CountReports("job-8", RANK_STATE_FAILED), 0u);
    return;
  }
  EXPECT_LT(absl::Now() - start, absl::Seconds(15));
  EXPECT_EQ(CountReports("job-8", RANK_STATE_SUCCEEDED), 0u);
  std::map<int, ReportRankRequest> failed;
  for (const ReportRankRequest& r :
       fake().Reports("job-8", RANK_STATE_FAILED)) {
    failed.emplace(r.rank(), r);
  }
  ASSERT_EQ(failed.count(0), 1u);
  EXPECT_EQ(failed[0].operation(), "trainer setup");
  EXPECT_THAT(failed[0].message(), HasSubstr("FAILED_PRECONDITION"));
  EXPECT_THAT(failed[0].message(), HasSubstr("cuda:0"));
  EXPECT_THAT(failed[0].message(),
              HasSubstr(kCudaKernels ? "no CUDA device"
                                     : "built without CUDA kernels"));
  // The CPU peer's ring was aborted: it fails too (the job fails like on
  // any rank failure; the coordinator may ignore the second report).
  EXPECT_EQ(failed.count(1), 1u);
}

// A one-GPU job with ringBackend auto runs on the NCCL ring: the unique id
// goes through the coordinator's job store (world size 1 still makes and
// destroys a communicator). Needs a GPU.
TEST_F(JobRunnerTest, NcclJob_OneGpu_TrainsOnTheNcclRing) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device visible";
  JobSpec spec = MlpSpec(4);
  spec.set_num_workers(1);
  spec.set_device("cuda");
  Assignment a = MakeAssignment("job-nccl", spec, 1, {0});
  a.mutable_devices(0)->set_kind("cuda");
  a.mutable_devices(0)->set_index(0);
  std::unique_ptr<JobRunner> runner = Start(a);
  ASSERT_NE(runner, nullptr);
  ASSERT_TRUE(fake().WaitFor([&] { return runner->Done(); }));
  runner->Join();
  EXPECT_EQ(CountReports("job-nccl", RANK_STATE_SUCCEEDED), 1u);
  EXPECT_EQ(CountReports("job-nccl", RANK_STATE_FAILED), 0u);
}

// The daemon's path end to end (minus the real coordinator): one agent
// with the real runner takes two jobs in a row without restarting.
TEST_F(JobRunnerTest, Agent_RunsTwoJobsInARow) {
  AgentConfig config;
  config.coordinator = server_.address();
  config.host = "host-a";
  config.address = "127.0.0.1";
  config.devices = *ParseDevices("cpu:2");
  config.min_backoff = absl::Milliseconds(20);
  std::shared_ptr<CoordinatorClient> client = server_.NewClient();
  Agent agent(config, client, JobRunnerLauncher(Config(""), client));
  agent.Start();
  ASSERT_TRUE(fake().WaitFor([&] { return !agent.worker_id().empty(); }));
  for (const std::string job : {"job-a", "job-b"}) {
    fake().Assign(agent.worker_id(),
                  MakeAssignment(job, MlpSpec(3), 2, {0, 1}));
    ASSERT_TRUE(fake().WaitFor([&] {
      return CountReports(job, RANK_STATE_SUCCEEDED) == 2;
    })) << job;
    ASSERT_TRUE(fake().WaitFor([&] { return agent.jobs().empty(); })) << job;
  }
  EXPECT_EQ(agent.registrations(), 1);
  agent.Stop(absl::CancelledError("test ends"));
}

// --checkpoint-root holds for the whole job (issue 43, finding 3): the
// job's checkpoint directory swapped mid-job for a link to a directory
// outside the root fails the job at its next checkpoint, naming the
// directory; nothing is written outside, and the same agent (the daemon)
// runs the next job.
TEST_F(JobRunnerTest, CheckpointDirSwappedMidJob_FailsTheJobNotTheDaemon) {
  namespace fs = std::filesystem;
  const std::string base = (fs::path(::testing::TempDir()) /
                            absl::StrCat("job-runner-roots-", getpid()))
                               .lexically_normal()
                               .string();
  fs::remove_all(base);
  const std::string root = base + "/root";
  const std::string outside = base + "/outside";
  const std::string dir = root + "/job/ckpt";
  fs::create_directories(root);
  fs::create_directories(outside);
  JobRunnerConfig runner = Config("");
  runner.checkpoint_roots = {root};
  AgentConfig config;
  config.coordinator = server_.address();
  config.host = "host-a";
  config.address = "127.0.0.1";
  config.devices = *ParseDevices("cpu:2");
  config.min_backoff = absl::Milliseconds(20);
  std::shared_ptr<CoordinatorClient> client = server_.NewClient();
  Agent agent(config, client, JobRunnerLauncher(runner, client));
  agent.Start();
  ASSERT_TRUE(fake().WaitFor([&] { return !agent.worker_id().empty(); }));
  JobSpec spec = SyntheticSpec(1000000, 5);
  spec.mutable_checkpoint()->set_directory(dir);
  spec.mutable_checkpoint()->set_every_steps(5);
  fake().Assign(agent.worker_id(), MakeAssignment("job-swap", spec, 2, {0, 1}));
  ASSERT_TRUE(fake().WaitFor([&] {
    for (const StepMetrics& m : fake().metrics()) {
      if (!m.checkpoint().empty()) return true;
    }
    return false;
  })) << "no checkpoint reported";
  fs::rename(dir, dir + ".moved");
  fs::create_symlink(outside, dir);
  ASSERT_TRUE(fake().WaitFor(
      [&] { return CountReports("job-swap", RANK_STATE_FAILED) == 2; }));
  std::map<int, ReportRankRequest> failed;
  for (const ReportRankRequest& r :
       fake().Reports("job-swap", RANK_STATE_FAILED)) {
    failed.emplace(r.rank(), r);
  }
  EXPECT_EQ(failed[0].operation(), "checkpoint");
  EXPECT_THAT(failed[0].message(),
              HasSubstr(dir + " was replaced by a symbolic link or moved"));
  EXPECT_TRUE(fs::is_empty(outside));
  ASSERT_TRUE(fake().WaitFor([&] { return agent.jobs().empty(); }));
  fake().Assign(agent.worker_id(),
                MakeAssignment("job-next", MlpSpec(3), 2, {0, 1}));
  EXPECT_TRUE(fake().WaitFor(
      [&] { return CountReports("job-next", RANK_STATE_SUCCEEDED) == 2; }));
  EXPECT_EQ(agent.registrations(), 1);
  agent.Stop(absl::CancelledError("test ends"));
  fs::remove_all(base);
}

}  // namespace
}  // namespace gradsync
