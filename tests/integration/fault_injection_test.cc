// Fault injection against a real cluster (a coordinator, two cpu:2
// workers, one parameter server), each case within a bounded time: a
// daemon frozen with SIGSTOP mid-job (ring and PS mode) is declared lost
// within its lease, the job fails naming what is missing, and once the
// daemon runs again it registers anew and the cluster trains again; idle
// and garbage connections on the coordinator's and the server's ports
// crash nothing and stall no job. (SIGKILL of a worker or a server mid-job
// is worker_failure_test.cc and ps_switch_test.cc.)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/cluster_test_base.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::AnyOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;

constexpr int64_t kLeaseMs = 3000;
// Room for the lease checker's period and a busy 2-core machine.
constexpr absl::Duration kSlack = absl::Seconds(4);
constexpr absl::Duration kStartTimeout = absl::Seconds(60);
constexpr absl::Duration kJobTimeout = absl::Seconds(90);

class FaultTest : public ClusterTest {
 protected:
  TestClusterOptions Options() const override {
    TestClusterOptions options;
    options.lease_ms = kLeaseMs;
    options.heartbeat_ms = 250;
    options.parameter_servers = 1;
    return options;
  }

  // Submits a long 4-rank job in `mode` and waits until it has stepped.
  std::string StartLongJob(SyncMode mode) {
    JobSpec spec = LongSyntheticSpec(4);
    spec.set_mode(mode);
    absl::StatusOr<std::string> job = cluster().Submit(spec);
    EXPECT_THAT(job, IsOk());
    if (!job.ok()) return "";
    absl::StatusOr<JobStatus> running = cluster().WaitForJob(
        *job,
        [](const JobStatus& s) {
          return s.state() == JOB_STATE_RUNNING && s.step() >= 3;
        },
        kStartTimeout, "RUNNING at step 3");
    EXPECT_THAT(running, IsOk());
    return *job;
  }

  // Live (not lost) workers and servers, as the coordinator lists them.
  void WaitForLive(int workers, int servers) {
    EXPECT_THAT(
        cluster().WaitForWorkers(
            [&](const ListWorkersResponse& list) {
              int w = 0, s = 0;
              for (const WorkerInfo& info : list.workers()) {
                if (info.state() != WORKER_STATE_LOST) ++w;
              }
              for (const ParameterServerInfo& info : list.parameter_servers()) {
                if (!info.lost()) ++s;
              }
              return w == workers && s == servers;
            },
            kStartTimeout,
            absl::StrCat(workers, " live workers and ", servers,
                         " live parameter servers")),
        IsOk());
  }

  // Freezes `daemon` (SIGSTOP) while `job` runs, waits for the job to
  // end and thaws it (SIGCONT); the job must fail within the lease, its
  // message naming the daemon as `named` says.
  void FreezeUntilTheJobEnds(ChildProcess& daemon, const std::string& job,
                             absl::string_view what,
                             const ::testing::Matcher<std::string>& named) {
    const absl::Time stopped = absl::Now();
    daemon.Signal(SIGSTOP);
    absl::StatusOr<JobStatus> end = cluster().WaitForJobEnd(
        job, absl::Milliseconds(kLeaseMs) + kSlack + kJobTimeout);
    const absl::Duration took = absl::Now() - stopped;
    daemon.Signal(SIGCONT);
    ASSERT_THAT(end, IsOk());
    std::cout << "job " << job << " " << ShortStateName(end->state()) << " "
              << absl::FormatDuration(took) << " after the " << what
              << " froze: " << end->message() << "\n";
    EXPECT_EQ(end->state(), JOB_STATE_FAILED);
    EXPECT_THAT(end->message(), named);
    EXPECT_LE(took, absl::Milliseconds(kLeaseMs) + kSlack);
  }

  // A short 4-rank job in `mode` runs to success.
  void ExpectTrainsAgain(SyncMode mode) {
    JobSpec spec = LongSyntheticSpec(4);
    spec.set_mode(mode);
    spec.set_steps(20);
    absl::StatusOr<TestCluster::FinishedJob> done =
        cluster().RunToSuccess(spec, kJobTimeout);
    ASSERT_THAT(done, IsOk());
    EXPECT_GE(done->status.step(), 19);
  }
};

class StoppedWorkerTest : public FaultTest,
                          public ::testing::WithParamInterface<SyncMode> {};

TEST_P(StoppedWorkerTest, FrozenMidJob_LostWithinLease_RejoinsWhenThawed) {
  const std::string job = StartLongJob(GetParam());
  ASSERT_FALSE(job.empty());
  // Ranks 2 and 3 are on node-b (worker 1): freeze it, as a hung host or
  // a debugger would. Its process lives; only its heartbeats stop.
  FreezeUntilTheJobEnds(
      cluster().worker(1), job, "worker",
      AnyOf(HasSubstr(cluster().worker_id(1)), ContainsRegex("ranks? [23]")));
  // Thawed, it learns it was declared lost, stops its ranks, registers
  // under a new id, and the cluster trains on both workers again.
  WaitForLive(2, 1);
  ASSERT_THAT(cluster().WaitForIdleWorkers(kStartTimeout), IsOk());
  ExpectTrainsAgain(GetParam());
  EXPECT_TRUE(cluster().worker(1).Running());
}

INSTANTIATE_TEST_SUITE_P(BothModes, StoppedWorkerTest,
                         ::testing::Values(SYNC_MODE_RING, SYNC_MODE_PS),
                         [](const ::testing::TestParamInfo<SyncMode>& info) {
                           return info.param == SYNC_MODE_RING
                                      ? std::string("Ring")
                                      : std::string("Ps");
                         });

TEST_F(FaultTest, ServerFrozenMidJob_JobFailsNamingIt_RejoinsWhenThawed) {
  const std::string job = StartLongJob(SYNC_MODE_PS);
  ASSERT_FALSE(job.empty());
  FreezeUntilTheJobEnds(cluster().parameter_server(0), job, "server",
                        AnyOf(HasSubstr("ps-1"), HasSubstr("shard 0")));
  // Thawed, the server finds itself unknown, drops the dead job's shards
  // and registers again; PS jobs run on it.
  WaitForLive(2, 1);
  ASSERT_THAT(cluster().WaitForIdleWorkers(kStartTimeout), IsOk());
  ExpectTrainsAgain(SYNC_MODE_PS);
  EXPECT_TRUE(cluster().parameter_server(0).Running());
}

// The coordinator frozen (SIGSTOP) for twice the lease mid-job, in both
// modes: the ranks train on without it, and thawed it must not take the
// heartbeats it could not hear for lost daemons (it ran no lease clock
// while frozen): the job keeps running on the same daemons and succeeds.
TEST_P(StoppedWorkerTest, CoordinatorFrozen_JobRunsOnAndNoDaemonIsLost) {
  const std::string job = StartLongJob(GetParam());
  ASSERT_FALSE(job.empty());
  absl::StatusOr<JobStatus> before = cluster().GetJob(job);
  ASSERT_THAT(before, IsOk());
  cluster().coordinator().Signal(SIGSTOP);
  absl::SleepFor(absl::Milliseconds(2 * kLeaseMs));
  cluster().coordinator().Signal(SIGCONT);
  // Past a lease after the thaw, nothing was declared lost.
  absl::SleepFor(absl::Milliseconds(kLeaseMs) + absl::Seconds(1));
  absl::StatusOr<JobStatus> after = cluster().GetJob(job);
  ASSERT_THAT(after, IsOk());
  EXPECT_EQ(after->state(), JOB_STATE_RUNNING) << after->message();
  EXPECT_GT(after->step(), before->step());
  WaitForLive(2, 1);
  absl::StatusOr<ListWorkersResponse> list = cluster().ListWorkers();
  ASSERT_THAT(list, IsOk());
  for (const WorkerInfo& w : list->workers()) {
    EXPECT_NE(w.state(), WORKER_STATE_LOST) << w.worker_id();
  }
  ASSERT_THAT(cluster().Cancel(job), IsOk());
  ASSERT_THAT(cluster().WaitForIdleWorkers(kStartTimeout), IsOk());
  ExpectTrainsAgain(GetParam());
}

// Opens a TCP connection to "host:port"; -1 on failure.
int Dial(const std::string& address) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port)) {
    return -1;
  }
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, address.substr(0, colon).c_str(), &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

TEST_F(FaultTest, IdleAndGarbageConnections_OnEveryPort_CrashAndStallNothing) {
  std::vector<int> fds;
  for (const std::string& address :
       {cluster().address(), cluster().parameter_server_address(0)}) {
    for (int i = 0; i < 30; ++i) {  // idle: connect, say nothing
      const int fd = Dial(address);
      ASSERT_GE(fd, 0) << address;
      fds.push_back(fd);
    }
    for (int i = 0; i < 10; ++i) {  // garbage, some of it HTTP/2-looking
      const int fd = Dial(address);
      ASSERT_GE(fd, 0) << address;
      std::string garbage(4096, static_cast<char>(0xab + i));
      if (i % 2 == 0) {
        garbage.replace(0, 24, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
      }
      ASSERT_EQ(write(fd, garbage.data(), garbage.size()),
                static_cast<ssize_t>(garbage.size()));
      fds.push_back(fd);
    }
  }
  // With every one of them still open, jobs in both modes run to success.
  ExpectTrainsAgain(SYNC_MODE_PS);
  ExpectTrainsAgain(SYNC_MODE_RING);
  for (int fd : fds) close(fd);
  EXPECT_TRUE(cluster().coordinator().Running());
  EXPECT_TRUE(cluster().parameter_server(0).Running());
  for (int i = 0; i < cluster().num_workers(); ++i) {
    EXPECT_TRUE(cluster().worker(i).Running()) << "worker " << i;
  }
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
