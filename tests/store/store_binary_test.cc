// The `gradsync-store` binary: prints its bound address first, serves the
// store, and exits cleanly on SIGTERM. GRADSYNC_STORE_BINARY is its path,
// set by CMake.
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/grpc_store.h"
#include "tests/store/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::testing::StartsWith;

constexpr absl::Duration kProcessTimeout = absl::Seconds(10);

// A child process running gradsync-store with its stdout on a pipe.
class StoreProcess {
 public:
  explicit StoreProcess(const std::vector<std::string>& args) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      std::vector<char*> argv;
      std::string binary = GRADSYNC_STORE_BINARY;
      argv.push_back(binary.data());
      std::vector<std::string> copies = args;
      for (std::string& arg : copies) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    close(fds[1]);
    stdout_fd_ = fds[0];
  }

  ~StoreProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (stdout_fd_ >= 0) close(stdout_fd_);
  }

  bool started() const { return pid_ > 0 && stdout_fd_ >= 0; }

  // Reads stdout until a newline, EOF or `timeout`; returns what was read.
  std::string ReadLine(absl::Duration timeout) {
    std::string line;
    const absl::Time deadline = absl::Now() + timeout;
    while (line.empty() || line.back() != '\n') {
      if (!WaitReadable(deadline)) break;
      char c;
      if (read(stdout_fd_, &c, 1) != 1) break;
      line.push_back(c);
    }
    if (!line.empty() && line.back() == '\n') line.pop_back();
    return line;
  }

  void Signal(int signal_number) { kill(pid_, signal_number); }

  // Waits for the process to exit (its stdout reaching EOF) up to `timeout`
  // and returns its exit code, or -1 if it did not exit normally in time.
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

TEST(GradsyncStoreBinaryTest, Run_PrintsAddressServesAndExitsOnSigterm) {
  StoreProcess process({"--listen", "127.0.0.1:0"});
  ASSERT_TRUE(process.started());
  const std::string address = process.ReadLine(kProcessTimeout);
  ASSERT_THAT(address, StartsWith("127.0.0.1:"));

  absl::StatusOr<std::unique_ptr<Store>> store =
      ConnectGrpcStore(address, kProcessTimeout);
  ASSERT_THAT(store, IsOk());
  ASSERT_THAT((*store)->Set("addr/0", "10.0.0.1:4000"), IsOk());
  absl::StatusOr<std::string> value =
      (*store)->Get("addr/0", absl::Now() + absl::Seconds(1));
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, "10.0.0.1:4000");

  process.Signal(SIGTERM);
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 0);
}

TEST(GradsyncStoreBinaryTest, Run_ListenFlagWithEquals_IsAccepted) {
  StoreProcess process({"--listen=127.0.0.1:0"});
  ASSERT_TRUE(process.started());
  EXPECT_THAT(process.ReadLine(kProcessTimeout), StartsWith("127.0.0.1:"));
  process.Signal(SIGINT);
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 0);
}

TEST(GradsyncStoreBinaryTest, Run_UnknownFlag_ExitsTwo) {
  StoreProcess process({"--bogus"});
  ASSERT_TRUE(process.started());
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 2);
}

TEST(GradsyncStoreBinaryTest, Run_BadListenAddress_ExitsOne) {
  StoreProcess process({"--listen", "nonsense"});
  ASSERT_TRUE(process.started());
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 1);
}

}  // namespace
}  // namespace gradsync
