// The `gradsync-ps` binary: prints its bound address first, serves shards,
// exits cleanly on SIGTERM, refuses a bad command line, registers with a
// coordinator (a tiny in-test one) and heartbeats, and, killed in the
// middle of a step, fails its clients' step promptly with UNAVAILABLE.
// GRADSYNC_PS_BINARY is its path, set by CMake.
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/ps_admin_client.h"
#include "server/ps/ps_client.h"
#include "tests/ps/fake_coordinator.h"
#include "tests/store/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::FakeCoordinator;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr absl::Duration kProcessTimeout = absl::Seconds(10);

// A child process running gradsync-ps with its stdout on a pipe.
class PsProcess {
 public:
  explicit PsProcess(const std::vector<std::string>& args) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      std::string binary = GRADSYNC_PS_BINARY;
      std::vector<std::string> copies = args;
      std::vector<char*> argv = {binary.data()};
      for (std::string& arg : copies) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    close(fds[1]);
    stdout_fd_ = fds[0];
  }

  ~PsProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (stdout_fd_ >= 0) close(stdout_fd_);
  }

  bool started() const { return pid_ > 0 && stdout_fd_ >= 0; }
  pid_t pid() const { return pid_; }

  // Reads stdout up to a newline, EOF or the timeout.
  std::string ReadLine(absl::Duration timeout) {
    std::string line;
    const absl::Time deadline = absl::Now() + timeout;
    while (line.empty() || line.back() != '\n') {
      const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
      pollfd pfd = {stdout_fd_, POLLIN, 0};
      if (ms <= 0 || poll(&pfd, 1, static_cast<int>(ms)) != 1) break;
      char c;
      if (read(stdout_fd_, &c, 1) != 1) break;
      line.push_back(c);
    }
    if (!line.empty() && line.back() == '\n') line.pop_back();
    return line;
  }

  void Signal(int signal_number) {
    kill(pid_, signal_number);
    if (signal_number == SIGKILL) {
      waitpid(pid_, nullptr, 0);
      reaped_ = true;
    }
  }

  // The exit code, or -1 if it did not exit normally within `timeout`.
  int WaitForExit(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      int wstatus = 0;
      const pid_t done = waitpid(pid_, &wstatus, WNOHANG);
      if (done == pid_) {
        reaped_ = true;
        return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  bool reaped_ = false;
};

TEST(GradsyncPsBinaryTest, Run_PrintsAddressServesAndExitsOnSigterm) {
  PsProcess process({"--listen", "127.0.0.1:0"});
  ASSERT_TRUE(process.started());
  const std::string address = process.ReadLine(kProcessTimeout);
  ASSERT_THAT(address, StartsWith("127.0.0.1:"));

  ps::CreateShardRequest request;
  request.set_job_id("job");
  request.set_num_shards(1);
  request.set_total_elements(10);
  request.set_end(10);
  request.set_num_workers(1);
  request.mutable_optimizer()->set_name("sgd");
  request.mutable_optimizer()->set_learning_rate(1.0);
  request.set_zeros(true);
  ASSERT_THAT(PsAdminClient::Connect(address)->CreateShard(request), IsOk());
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create("job", 0, 10, {{address, 0, 0, 10}});
  ASSERT_THAT(client, IsOk());
  std::vector<float> grads(10, 2.0f), params(10);
  ASSERT_THAT((*client)->PushPull(0, grads, absl::MakeSpan(params)), IsOk());
  EXPECT_EQ(params, std::vector<float>(10, -2.0f));

  process.Signal(SIGTERM);
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 0);
}

TEST(GradsyncPsBinaryTest, Run_UnknownFlag_ExitsTwo) {
  PsProcess process({"--bogus"});
  ASSERT_TRUE(process.started());
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 2);
}

TEST(GradsyncPsBinaryTest, Run_PortTaken_ExitsOne) {
  PsProcess first({"--listen", "127.0.0.1:0"});
  ASSERT_TRUE(first.started());
  const std::string address = first.ReadLine(kProcessTimeout);
  ASSERT_THAT(address, StartsWith("127.0.0.1:"));
  PsProcess second({"--listen", address});
  ASSERT_TRUE(second.started());
  EXPECT_EQ(second.WaitForExit(kProcessTimeout), 1);
}

// A one-shard job of `total` zeros for `workers` ranks on `address`.
absl::Status CreateJob(const std::string& address, int64_t total, int workers) {
  ps::CreateShardRequest request;
  request.set_job_id("job");
  request.set_num_shards(1);
  request.set_total_elements(total);
  request.set_end(total);
  request.set_num_workers(workers);
  request.mutable_optimizer()->set_name("sgd");
  request.mutable_optimizer()->set_learning_rate(1.0);
  request.set_zeros(true);
  return PsAdminClient::Connect(address)->CreateShard(request);
}

template <typename Done>
bool Eventually(Done done) {
  const absl::Time deadline = absl::Now() + kProcessTimeout;
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return done();
}

TEST(GradsyncPsBinaryTest, Run_WithCoordinator_RegistersAndHeartbeats) {
  FakeCoordinator coordinator;
  ASSERT_NE(coordinator.port(), 0);
  PsProcess process(
      {"--listen", "127.0.0.1:0", "--coordinator", coordinator.address()});
  ASSERT_TRUE(process.started());
  const std::string address = process.ReadLine(kProcessTimeout);
  ASSERT_THAT(address, StartsWith("127.0.0.1:"));
  // Registered before the address was printed.
  ASSERT_EQ(coordinator.registrations().size(), 1u);
  EXPECT_EQ(coordinator.registrations()[0].address(), address);
  EXPECT_EQ(coordinator.registrations()[0].pid(), process.pid());
  EXPECT_FALSE(coordinator.registrations()[0].host().empty());
  ASSERT_THAT(CreateJob(address, 10, 1), IsOk());
  ASSERT_TRUE(Eventually([&]() {
    const std::vector<PsHeartbeatRequest> beats = coordinator.heartbeats();
    return !beats.empty() && beats.back().shards_size() == 1 &&
           beats.back().shards(0).job_id() == "job";
  }));
  // The coordinator says the job ended: its shard goes.
  coordinator.ReleaseJobs({"job"});
  ASSERT_TRUE(Eventually([&]() {
    return !PsAdminClient::Connect(address)->GetShardStats("job", -1).ok();
  }));
  process.Signal(SIGTERM);
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 0);
}

TEST(GradsyncPsBinaryTest, Run_CoordinatorRefuses_ExitsOneWithoutAddress) {
  FakeCoordinator coordinator;
  coordinator.RefuseRegistrations();
  PsProcess process(
      {"--listen", "127.0.0.1:0", "--coordinator", coordinator.address()});
  ASSERT_TRUE(process.started());
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 1);
  EXPECT_EQ(process.ReadLine(absl::Milliseconds(100)), "");
}

TEST(GradsyncPsBinaryTest, Run_SigtermWhileRegistering_ExitsZeroPromptly) {
  std::string unreachable;
  {
    FakeCoordinator gone;
    unreachable = gone.address();
  }
  PsProcess process({"--listen", "127.0.0.1:0", "--coordinator", unreachable});
  ASSERT_TRUE(process.started());
  absl::SleepFor(absl::Milliseconds(300));
  process.Signal(SIGTERM);
  EXPECT_EQ(process.WaitForExit(absl::Seconds(5)), 0);
}

TEST(GradsyncPsBinaryTest, KilledMidStep_StepFailsUnavailablePromptly) {
  PsProcess process({"--listen", "127.0.0.1:0"});
  ASSERT_TRUE(process.started());
  const std::string address = process.ReadLine(kProcessTimeout);
  ASSERT_THAT(address, StartsWith("127.0.0.1:"));
  ASSERT_THAT(CreateJob(address, 1000, 1), IsOk());
  PsClientOptions options;
  options.chunk_bytes = 64;
  options.timeout = absl::Seconds(60);
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create("job", 0, 1000, {{address, 0, 0, 1000}}, options);
  ASSERT_THAT(client, IsOk());
  std::vector<float> grads(1000, 1.0f), params(1000);
  absl::StatusOr<std::unique_ptr<PsStep>> step =
      (*client)->StartStep(0, grads, absl::MakeSpan(params));
  ASSERT_THAT(step, IsOk());
  (*step)->Ready(500, 1000);
  ASSERT_TRUE(Eventually([&]() {
    absl::StatusOr<std::vector<ps::ShardStats>> stats =
        PsAdminClient::Connect(address)->GetShardStats("job", 0);
    return stats.ok() && (*stats)[0].bytes_in() == 2000;
  }));
  process.Signal(SIGKILL);
  (*step)->Ready(0, 500);
  const absl::Time start = absl::Now();
  EXPECT_THAT((*step)->Finish(absl::Now() + absl::Seconds(60)),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr(absl::StrCat("ps shard 0 at ", address)),
                             HasSubstr("rank 0, step 0"))));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

}  // namespace
}  // namespace gradsync
