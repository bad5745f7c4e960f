// Fault injection against a real cluster (a coordinator, two cpu:2
// workers, one parameter server), each case within a bounded time: a
// daemon frozen with SIGSTOP mid-job (ring and PS mode) is declared lost
// within its lease, the job fails naming what is missing, and once the
// daemon runs again it registers anew and the cluster trains again; idle
// and garbage connections on every port a daemon listens on (found in
// /proc: gRPC, the tensor plane, metrics, health, the ring's rendezvous)
// crash nothing and stall no job or probe. (SIGKILL of a worker or a
// server mid-job is worker_failure_test.cc and ps_switch_test.cc.)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/cluster_test_base.h"
#include "tests/util/health_check.h"
#include "tests/util/metrics_scrape.h"
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

// The TCP ports process `pid` (any of its threads) listens on: its
// sockets (/proc/PID/fd) in state LISTEN in /proc/PID/net/tcp and tcp6.
// So a port a daemon opens is found without the test knowing of it.
std::set<int> ListeningPorts(pid_t pid) {
  std::set<std::string> inodes;
  std::error_code error;
  for (const std::filesystem::directory_entry& fd :
       std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/fd"),
                                           error)) {
    std::error_code gone;
    const std::string target =
        std::filesystem::read_symlink(fd.path(), gone).string();
    if (!gone && absl::StartsWith(target, "socket:[") &&
        absl::EndsWith(target, "]")) {
      inodes.insert(target.substr(8, target.size() - 9));
    }
  }
  std::set<int> ports;
  for (const char* table : {"tcp", "tcp6"}) {
    std::ifstream in(absl::StrCat("/proc/", pid, "/net/", table));
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout
      // inode ...
      const std::vector<std::string> fields =
          absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (fields.size() < 10 || fields[3] != "0A" ||
          inodes.count(fields[9]) == 0) {
        continue;
      }
      const size_t colon = fields[1].rfind(':');
      if (colon == std::string::npos) continue;
      ports.insert(static_cast<int>(
          std::strtol(fields[1].c_str() + colon + 1, nullptr, 16)));
    }
  }
  return ports;
}

int PortOf(absl::string_view address) {
  int port = -1;
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port)) {
    return -1;
  }
  return port;
}

// What follows `prefix` in the log, up to `end` or the end of the line;
// "" if the log has no such line.
std::string LoggedAfter(const std::string& log, const std::string& prefix,
                        const char* end = "\n") {
  const size_t at = log.find(prefix);
  if (at == std::string::npos) return "";
  const size_t begin = at + prefix.size();
  const size_t stop = log.find_first_of(end, begin);
  return log.substr(begin, stop == std::string::npos ? stop : stop - begin);
}

std::string PortList(const std::set<int>& ports) {
  return absl::StrJoin(ports, ", ");
}

// A daemon of the cluster and the ports it must listen on (besides any
// others it does, which are dialled as well).
struct Daemon {
  std::string name;
  ChildProcess* process;
  std::string metrics;  // its --metrics-listen address, from its log
  std::string health;   // its --health-listen address, from its log
  std::set<int> known;  // every port it announced
};

// Every daemon with its probes on, and a lease long enough to keep a
// worker frozen while the other one's ranks wait for it in rendezvous.
class EveryPortTest : public FaultTest {
 protected:
  TestClusterOptions Options() const override {
    TestClusterOptions options = FaultTest::Options();
    options.lease_ms = 60000;
    options.probes = true;
    return options;
  }

  std::vector<Daemon> Daemons() {
    std::vector<Daemon> daemons;
    auto add = [&](std::string name, ChildProcess& process) {
      const std::string log = process.ReadLog();
      Daemon d{std::move(name), &process,
               LoggedAfter(log, "metrics on http://", "/\n"),
               LoggedAfter(log, "health checks on ")};
      d.known = {PortOf(d.metrics), PortOf(d.health)};
      daemons.push_back(std::move(d));
    };
    add("coordinator", cluster().coordinator());
    daemons.back().known.insert(PortOf(cluster().address()));
    add("ps 0", cluster().parameter_server(0));
    daemons.back().known.insert(PortOf(cluster().parameter_server_address(0)));
    int tensor_port = -1;
    EXPECT_TRUE(
        absl::SimpleAtoi(LoggedAfter(cluster().parameter_server(0).ReadLog(),
                                     "tensor plane (plain TCP) on port "),
                         &tensor_port));
    daemons.back().known.insert(tensor_port);
    for (int i = 0; i < cluster().num_workers(); ++i) {
      add(absl::StrCat("worker ", i), cluster().worker(i));
    }
    return daemons;
  }
};

// Idle connections and garbage (some of it HTTP/2-looking) on every port
// of every daemon (the coordinator's and the server's gRPC, the tensor
// plane, every metrics and health port, and the ring's rendezvous ports
// while ranks wait there) crash nothing and stall no job or probe.
TEST_F(EveryPortTest,
       IdleAndGarbageConnections_OnEveryPort_CrashAndStallNothing) {
  std::vector<Daemon> daemons = Daemons();
  std::vector<std::set<int>> ports;
  for (const Daemon& d : daemons) {
    ports.push_back(ListeningPorts(d.process->pid()));
    // Found by /proc, so not just the ports the test knows of; these
    // every one of them must be among.
    for (int port : d.known) {
      EXPECT_TRUE(ports.back().count(port) > 0)
          << d.name << " announced port " << port << " but listens on "
          << PortList(ports.back());
    }
  }
  // The coordinator: gRPC, metrics, health; the server: gRPC, the tensor
  // plane, metrics, health; a worker: metrics, health (its ranks' ports
  // come with jobs).
  EXPECT_EQ(ports[0].size(), 3u) << PortList(ports[0]);
  EXPECT_EQ(ports[1].size(), 4u) << PortList(ports[1]);
  EXPECT_EQ(ports[2].size(), 2u) << PortList(ports[2]);
  EXPECT_EQ(ports[3].size(), 2u) << PortList(ports[3]);

  // Ring ports open for rendezvous only: with node-b frozen, node-a's
  // ranks 0 and 1 listen for ranks 2 and 3 until it is thawed. (A forced
  // algorithm: "auto" first exchanges host identities through the store,
  // which would hold the ranks before they listen.)
  ChildProcess& node_b = cluster().worker(1);
  node_b.Signal(SIGSTOP);
  JobSpec spec = LongSyntheticSpec(4);
  spec.set_mode(SYNC_MODE_RING);
  spec.set_ring_algorithm("ring");
  spec.set_steps(20);
  absl::StatusOr<std::string> ring_job = cluster().Submit(spec);
  const absl::Time deadline = absl::Now() + kStartTimeout;
  while (ring_job.ok() && absl::Now() < deadline &&
         ListeningPorts(cluster().worker(0).pid()).size() <
             ports[2].size() + 2) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  const std::set<int> node_a = ListeningPorts(cluster().worker(0).pid());
  if (!ring_job.ok() || node_a.size() != ports[2].size() + 2) {
    node_b.Signal(SIGCONT);
    ASSERT_THAT(ring_job, IsOk());
    FAIL() << "node-a's ranks never listened for their peers: "
           << PortList(node_a);
  }
  ports[2] = node_a;

  std::vector<int> fds;
  for (size_t d = 0; d < daemons.size(); ++d) {
    for (int port : ports[d]) {
      const std::string address = absl::StrCat("127.0.0.1:", port);
      for (int i = 0; i < 20; ++i) {  // idle: connect, say nothing
        const int fd = Dial(address);
        EXPECT_GE(fd, 0) << daemons[d].name << " at " << address;
        if (fd >= 0) fds.push_back(fd);
      }
      for (int i = 0; i < 10; ++i) {  // garbage, some of it HTTP/2-looking
        const int fd = Dial(address);
        EXPECT_GE(fd, 0) << daemons[d].name << " at " << address;
        if (fd < 0) continue;
        fds.push_back(fd);
        std::string garbage(4096, static_cast<char>(0xab + i));
        if (i % 2 == 0) {
          garbage.replace(0, 24, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        }
        EXPECT_EQ(write(fd, garbage.data(), garbage.size()),
                  static_cast<ssize_t>(garbage.size()))
            << daemons[d].name << " at " << address;
      }
    }
  }
  // Thawed, node-b's ranks join the rendezvous past the strays, and the
  // ring job trains to its end.
  node_b.Signal(SIGCONT);
  absl::StatusOr<JobStatus> end =
      cluster().WaitForJobEnd(*ring_job, kJobTimeout);
  ASSERT_THAT(end, IsOk());
  EXPECT_EQ(end->state(), JOB_STATE_SUCCEEDED) << end->message();
  // The strays did reach the ranks, which turned them away.
  EXPECT_THAT(cluster().worker(0).ReadLog(),
              HasSubstr("refused a connection at rendezvous"));

  // With every connection still open, the probes answer and jobs in both
  // modes run to success.
  for (const Daemon& d : daemons) {
    absl::StatusOr<MetricsResponse> live = HttpRequest(d.metrics, "/healthz");
    ASSERT_THAT(live, IsOk()) << d.name;
    EXPECT_EQ(live->status, 200) << d.name;
    EXPECT_THAT(HealthStatusOf(d.health), IsOkAndHolds(kHealthServing))
        << d.name;
  }
  ASSERT_THAT(cluster().WaitForIdleWorkers(kStartTimeout), IsOk());
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
