// The `gradsync-coordinator` binary: announces its address, serves, and
// exits cleanly on SIGTERM; bad command lines exit 2.
// GRADSYNC_COORDINATOR_BINARY is its path, set by CMake.
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/coordinator.grpc.pb.h"

namespace gradsync {
namespace {

using ::testing::StartsWith;

constexpr absl::Duration kProcessTimeout = absl::Seconds(10);

// A child process running gradsync-coordinator with stdout on a pipe.
class CoordinatorProcess {
 public:
  explicit CoordinatorProcess(std::vector<std::string> args) {
    int fds[2];
    if (pipe(fds) != 0) return;
    std::string binary = GRADSYNC_COORDINATOR_BINARY;
    std::vector<char*> argv = {binary.data()};
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    close(fds[1]);
    stdout_fd_ = fds[0];
  }

  ~CoordinatorProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (stdout_fd_ >= 0) close(stdout_fd_);
  }

  bool started() const { return pid_ > 0 && stdout_fd_ >= 0; }

  // Reads stdout up to a newline, EOF or `timeout`.
  std::string ReadLine(absl::Duration timeout) {
    std::string line;
    const absl::Time deadline = absl::Now() + timeout;
    char c;
    while (WaitReadable(deadline) && read(stdout_fd_, &c, 1) == 1 &&
           c != '\n') {
      line.push_back(c);
    }
    return line;
  }

  void Signal(int signal_number) { kill(pid_, signal_number); }

  // The exit code, or -1 if it did not exit normally within `timeout`.
  int WaitForExit(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    char c;
    while (WaitReadable(deadline) && read(stdout_fd_, &c, 1) == 1) {
    }
    if (absl::Now() >= deadline) return -1;
    int wstatus = 0;
    if (waitpid(pid_, &wstatus, 0) != pid_) return -1;
    reaped_ = true;
    return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  }

 private:
  bool WaitReadable(absl::Time deadline) {
    const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (ms <= 0) return false;
    pollfd pfd = {stdout_fd_, POLLIN, 0};
    return poll(&pfd, 1, static_cast<int>(ms)) == 1;
  }

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  bool reaped_ = false;
};

TEST(CoordinatorBinaryTest, Run_AnnouncesAddressServesAndExitsOnSigterm) {
  CoordinatorProcess process(
      {"--listen", "127.0.0.1:0", "--lease-ms", "3000", "--heartbeat-ms=300"});
  ASSERT_TRUE(process.started());
  std::string line = process.ReadLine(kProcessTimeout);
  ASSERT_THAT(line, StartsWith("gradsync-coordinator listening on 127.0.0.1:"));
  const std::string address(
      absl::StripPrefix(line, "gradsync-coordinator listening on "));

  auto stub = Coordinator::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kProcessTimeout));
  RegisterWorkerRequest request;
  request.set_host("host-a");
  request.set_address("127.0.0.1");
  request.add_devices()->set_kind("cpu");
  RegisterWorkerResponse response;
  ASSERT_TRUE(stub->RegisterWorker(&context, request, &response).ok());
  EXPECT_EQ(response.lease_ms(), 3000);
  EXPECT_EQ(response.heartbeat_ms(), 300);

  process.Signal(SIGTERM);
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 0);
}

TEST(CoordinatorBinaryTest, Run_BadCommandLine_ExitsTwo) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--bogus"},
        std::vector<std::string>{"--lease-ms", "soon"},
        std::vector<std::string>{"--listen"}}) {
    CoordinatorProcess process(args);
    ASSERT_TRUE(process.started());
    EXPECT_EQ(process.WaitForExit(kProcessTimeout), 2) << args[0];
  }
}

TEST(CoordinatorBinaryTest, Run_HeartbeatNotBelowLease_ExitsOne) {
  CoordinatorProcess process({"--listen", "127.0.0.1:0", "--lease-ms", "100",
                              "--heartbeat-ms", "500"});
  ASSERT_TRUE(process.started());
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 1);
}

}  // namespace
}  // namespace gradsync
