// worker/launch/: the entrypoint job's processes, with real fork/exec.
// RankProcess (exit codes, signals, output pipes, the process group, the
// environment that reaches the child), BuildRankEnvironment, the report
// pipe's framing, and KillLeftovers on a process whose daemon is gone.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/launch/leftovers.h"
#include "common/wait_status.h"
#include "worker/launch/rank_env.h"
#include "worker/launch/rank_process.h"
#include "worker/launch/report_wire.h"

namespace gradsync {
namespace {

using ::testing::HasSubstr;

// Reads `fd` (non-blocking) until EOF or `timeout`.
std::string ReadAll(int fd, absl::Duration timeout = absl::Seconds(10)) {
  std::string out;
  const absl::Time give_up = absl::Now() + timeout;
  char buffer[4096];
  while (absl::Now() < give_up) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n == 0) break;
    if (n < 0) {
      absl::SleepFor(absl::Milliseconds(5));
      continue;
    }
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

// Waits for the process to end; its wait status.
int WaitEnd(RankProcess& p, absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time give_up = absl::Now() + timeout;
  while (absl::Now() < give_up) {
    if (std::optional<int> s = p.TryReap()) return *s;
    absl::SleepFor(absl::Milliseconds(5));
  }
  ADD_FAILURE() << "process " << p.pid() << " did not end";
  return -1;
}

bool Alive(pid_t pid) { return kill(pid, 0) == 0; }

std::string TempDir() {
  char name[] = "/tmp/gradsync-launch-test.XXXXXX";
  return mkdtemp(name);
}

SpawnOptions Shell(const std::string& script) {
  SpawnOptions o;
  o.argv = {"sh", "-c", script};
  o.workdir = "/";
  o.env = {"PATH=/usr/bin:/bin", "GREETING=hello"};
  return o;
}

TEST(RankProcessTest, Spawn_ExitCodeStdoutStderrAndEnvironmentReachUs) {
  auto p = RankProcess::Spawn(
      Shell("echo \"$GREETING from $(pwd)\"; echo oops >&2; exit 3"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(ReadAll((*p)->stdout_fd()), "hello from /\n");
  EXPECT_EQ(ReadAll((*p)->stderr_fd()), "oops\n");
  const int status = WaitEnd(**p);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_EQ(DescribeExit(status), "exited with status 3");
}

TEST(RankProcessTest, Spawn_OnlyTheGivenEnvironment) {
  auto p = RankProcess::Spawn(Shell("env | sort"));
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string env = ReadAll((*p)->stdout_fd());
  EXPECT_THAT(env, HasSubstr("GREETING=hello\n"));
  EXPECT_THAT(env, ::testing::Not(HasSubstr("HOME=")));
  EXPECT_EQ(WaitEnd(**p), 0);
}

TEST(RankProcessTest, Spawn_ReportPipeIsFd3AndOtherFdsAreClosed) {
  // The child writes to fd 3, and finds nothing open above it.
  auto p = RankProcess::Spawn(
      Shell("printf report >&3; ls /proc/self/fd | sort -n | tail -1"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(ReadAll((*p)->report_fd()), "report");
  // ls's own directory fd is the highest: 3 is the report pipe, 4 ls's.
  EXPECT_EQ(ReadAll((*p)->stdout_fd()), "4\n");
  EXPECT_EQ(WaitEnd(**p), 0);
}

TEST(RankProcessTest, Spawn_UnknownProgram_Exits127Saying) {
  SpawnOptions o = Shell("");
  o.argv = {"gradsync-no-such-program"};
  auto p = RankProcess::Spawn(o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(ReadAll((*p)->stderr_fd()),
              HasSubstr("gradsync-no-such-program: command not found"));
  const int status = WaitEnd(**p);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 127);
}

TEST(RankProcessTest, Spawn_BadWorkdirOrNoArgv_RefusedBeforeFork) {
  SpawnOptions o = Shell("true");
  o.workdir = "/no/such/dir";
  EXPECT_EQ(RankProcess::Spawn(o).status().code(), absl::StatusCode::kNotFound);
  o = Shell("true");
  o.argv.clear();
  EXPECT_EQ(RankProcess::Spawn(o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RankProcessTest, SignalGroup_ReachesWhatTheChildStarted) {
  // The child starts a grandchild and prints its pid; SIGTERM to the group
  // ends both, though the daemon's signal mask blocked SIGTERM.
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &old);
  auto p = RankProcess::Spawn(Shell("sleep 60 & echo $!; wait"));
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(p.ok()) << p.status();
  std::string line;
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (line.find('\n') == std::string::npos && absl::Now() < give_up) {
    char c[64];
    const ssize_t n = read((*p)->stdout_fd(), c, sizeof(c));
    if (n > 0) line.append(c, static_cast<size_t>(n));
    absl::SleepFor(absl::Milliseconds(5));
  }
  pid_t grandchild = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &grandchild))
      << line;
  EXPECT_TRUE(Alive(grandchild));
  (*p)->SignalGroup(SIGTERM);
  const int status = WaitEnd(**p);
  EXPECT_TRUE(WIFSIGNALED(status)) << DescribeExit(status);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (Alive(grandchild) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_FALSE(Alive(grandchild)) << "grandchild " << grandchild;
}

TEST(RankProcessTest, Destructor_KillsAndReaps) {
  pid_t pid = 0;
  {
    auto p = RankProcess::Spawn(Shell("sleep 60"));
    ASSERT_TRUE(p.ok()) << p.status();
    pid = (*p)->pid();
    EXPECT_TRUE(Alive(pid));
  }
  EXPECT_FALSE(Alive(pid));
}

Assignment TwoOfFour() {
  Assignment a;
  a.set_job_id("job-7");
  a.set_world_size(4);
  a.add_ranks(2);
  a.add_ranks(3);
  for (int i : {0, 1}) {
    Device* d = a.add_devices();
    d->set_kind("cpu");
    d->set_index(i);
  }
  a.mutable_spec()->set_max_restarts(2);
  a.mutable_spec()->set_restart_count(1);
  a.set_job_secret("s3cret");
  return a;
}

std::map<std::string, std::string> AsMap(const std::vector<std::string>& env) {
  std::map<std::string, std::string> out;
  for (const std::string& e : env) {
    const size_t eq = e.find('=');
    EXPECT_EQ(out.count(e.substr(0, eq)), 0u) << "twice: " << e;
    out[e.substr(0, eq)] = e.substr(eq + 1);
  }
  return out;
}

TEST(RankEnvTest, TorchrunVariablesAndGradsyncOnes) {
  const Assignment a = TwoOfFour();
  RankEnvInputs in;
  in.assignment = &a;
  in.index = 1;
  in.coordinator = "10.0.0.1:29400";
  in.tls_dir = "/etc/gradsync/tls";
  in.rank_file = "/tmp/rank-file";
  in.agent_tag = "12:34:10.0.0.1:29400";
  in.python_dir = "/opt/gradsync/python";
  in.base = {"PATH=/usr/bin",          "PYTHONPATH=/mine",
             "GRADSYNC_TOKEN_FILE=/t", "GRADSYNC_COORDINATOR=elsewhere:1",
             "TORCHELASTIC_RUN_ID=x",  "HOME=/root"};
  const auto env = AsMap(BuildRankEnvironment(in));
  EXPECT_EQ(env.at("RANK"), "3");
  EXPECT_EQ(env.at("LOCAL_RANK"), "1");
  EXPECT_EQ(env.at("WORLD_SIZE"), "4");
  EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(env.at("GROUP_RANK"), "1");
  EXPECT_EQ(env.at("GROUP_WORLD_SIZE"), "2");
  EXPECT_EQ(env.at("ROLE_RANK"), "3");
  EXPECT_EQ(env.at("TORCHELASTIC_RESTART_COUNT"), "1");
  EXPECT_EQ(env.at("TORCHELASTIC_MAX_RESTARTS"), "3");
  EXPECT_EQ(env.at("TORCHELASTIC_RUN_ID"), "job-7");
  EXPECT_EQ(env.at("OMP_NUM_THREADS"), "1");
  EXPECT_EQ(env.at("GRADSYNC_JOB_ID"), "job-7");
  EXPECT_EQ(env.at("GRADSYNC_COORDINATOR"), "10.0.0.1:29400");
  EXPECT_EQ(env.at("GRADSYNC_TLS_DIR"), "/etc/gradsync/tls");
  EXPECT_EQ(env.at("GRADSYNC_DEVICE"), "cpu:1");
  EXPECT_EQ(env.at("GRADSYNC_RANK_FILE"), "/tmp/rank-file");
  EXPECT_EQ(env.at("GRADSYNC_REPORT_FD"), "3");
  EXPECT_EQ(env.at("GRADSYNC_AGENT"), "12:34:10.0.0.1:29400");
  EXPECT_EQ(env.at("PYTHONPATH"), "/opt/gradsync/python:/mine");
  EXPECT_EQ(env.at("HOME"), "/root");
  EXPECT_EQ(env.count("GRADSYNC_TOKEN_FILE"), 0u);  // no user token leaks
  for (const auto& [name, value] : env) {
    EXPECT_THAT(value, ::testing::Not(HasSubstr("s3cret"))) << name;
  }
}

TEST(ReportWireTest, FramesSurviveAnySplit) {
  StepMetrics a, b;
  a.set_step(1);
  a.set_loss(0.5);
  b.set_step(2);
  b.set_samples(64);
  const std::string bytes = EncodeReportFrame(a) + EncodeReportFrame(b);
  for (size_t cut = 0; cut <= bytes.size(); ++cut) {
    ReportReader reader;
    std::vector<StepMetrics> got;
    for (absl::string_view part : {absl::string_view(bytes).substr(0, cut),
                                   absl::string_view(bytes).substr(cut)}) {
      reader.Append(part);
      while (true) {
        auto m = reader.Next();
        ASSERT_TRUE(m.ok()) << m.status();
        if (!m->has_value()) break;
        got.push_back(**m);
      }
    }
    ASSERT_EQ(got.size(), 2u) << "cut at " << cut;
    EXPECT_EQ(got[0].step(), 1);
    EXPECT_EQ(got[0].loss(), 0.5);
    EXPECT_EQ(got[1].samples(), 64);
  }
}

TEST(ReportWireTest, OversizedOrGarbageFrame_DataLossAndStaysFailed) {
  ReportReader big;
  big.Append(std::string("\xff\xff\xff\x7f", 4));
  EXPECT_EQ(big.Next().status().code(), absl::StatusCode::kDataLoss);
  big.Append(EncodeReportFrame(StepMetrics()));
  EXPECT_EQ(big.Next().status().code(), absl::StatusCode::kDataLoss);
  ReportReader garbage;
  garbage.Append(std::string("\x03\x00\x00\x00\xff\xff\xff", 7));
  EXPECT_EQ(garbage.Next().status().code(), absl::StatusCode::kDataLoss);
}

TEST(LeftoversTest, KillsProcessesOfADeadDaemonOnly) {
  // A "daemon" that has exited: a reaped child's pid and a start time that
  // no live process has.
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  const std::string coordinator = "127.0.0.1:1";
  const std::string dead_tag = absl::StrCat(dead, ":1:", coordinator);
  const std::string live_tag = AgentTag(coordinator);  // this test: alive
  auto orphan = RankProcess::Spawn(Shell("sleep 60"));
  ASSERT_TRUE(orphan.ok());
  SpawnOptions kept = Shell("sleep 60");
  kept.env.push_back("GRADSYNC_AGENT=" + live_tag);
  SpawnOptions other = Shell("sleep 60");
  other.env.push_back(absl::StrCat("GRADSYNC_AGENT=", dead, ":1:elsewhere:9"));
  SpawnOptions left = Shell("sleep 60");
  left.env.push_back("GRADSYNC_AGENT=" + dead_tag);
  auto live_child = RankProcess::Spawn(kept);
  auto other_cluster = RankProcess::Spawn(other);
  auto leftover = RankProcess::Spawn(left);
  ASSERT_TRUE(live_child.ok() && other_cluster.ok() && leftover.ok());
  absl::SleepFor(absl::Milliseconds(200));  // execs done: environ readable
  std::vector<std::string> said;
  EXPECT_EQ(KillLeftovers(coordinator,
                          [&](absl::string_view l) { said.emplace_back(l); }),
            1);
  const int status = WaitEnd(**leftover);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << DescribeExit(status);
  EXPECT_TRUE(Alive((*live_child)->pid()));
  EXPECT_TRUE(Alive((*other_cluster)->pid()));
  EXPECT_TRUE(Alive((*orphan)->pid()));
  ASSERT_EQ(said.size(), 1u);
  EXPECT_THAT(said[0],
              HasSubstr(absl::StrCat("left behind by worker daemon ", dead)));
}

}  // namespace
}  // namespace gradsync
