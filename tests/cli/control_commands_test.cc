// The control commands end to end against a small fake Coordinator gRPC
// service in this process (submit, watch, status, cancel, switch, metrics,
// workers), and against a closed port (the unreachable-coordinator error).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/control/control_client.h"
#include "cli/control/job_commands.h"
#include "cli/framework/command_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/control_test_fixture.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

using test_support::ControlCommandsTest;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST_F(ControlCommandsTest, Submit_SendsTheSpecAndPrintsTheJobId) {
  EXPECT_EQ(Run(RunSubmit, {"--workers", "2", "--steps", "10", "--mode", "ps"}),
            kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(), StartsWith("submitted job j-1 (mlp-fashion-mnist: "
                                     "2 workers, ps)\n"));
  ASSERT_EQ(fake_.submitted().size(), 1u);
  const JobSpec spec = fake_.submitted()[0];
  EXPECT_EQ(spec.num_workers(), 2);
  EXPECT_EQ(spec.steps(), 10);
  EXPECT_EQ(spec.mode(), SYNC_MODE_PS);
  EXPECT_EQ(spec.model().layer_sizes_size(), 4);
}

TEST_F(ControlCommandsTest, Submit_Json_PrintsOnlyTheId) {
  EXPECT_EQ(Run(RunSubmit, {"--json"}), kExitOk);
  EXPECT_EQ(out_.str(), "{\"jobId\":\"j-1\"}\n");
}

TEST_F(ControlCommandsTest, Submit_CoordinatorFromTheEnvironment) {
  CommandEnv env;
  env.coordinator_env = server_.address();
  EXPECT_EQ(RunWithEnv(RunSubmit, {"--json"}, env), kExitOk) << err_.str();
  EXPECT_EQ(fake_.submitted().size(), 1u);
}

TEST_F(ControlCommandsTest, Submit_Follow_ShowsProgressAndTheBreakdown) {
  EXPECT_EQ(Run(RunSubmit, {"--follow", "--every", "1"}), kExitOk)
      << err_.str();
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("job j-1: RUNNING on 2 ranks\n"));
  EXPECT_THAT(out, HasSubstr("step 1/3  loss 2.0000  2560 samples/s  comm "
                             "20.0%  busbw 1.00 GB/s  ring  RUNNING\n"));
  EXPECT_THAT(out, HasSubstr("step 3/3  loss 0.6667"));
  EXPECT_THAT(out, HasSubstr("job j-1 SUCCEEDED after 3 steps in 1.0 s: test "
                             "accuracy 0.8125"));
  EXPECT_THAT(out, HasSubstr("per-step breakdown (means):\nRANK  STEPS  "
                             "COMPUTE_MS"));
  EXPECT_THAT(out, HasSubstr("\nall   6      30.00"));
}

TEST_F(ControlCommandsTest, Submit_RejectedSpec_ExitsTwoWithTheReason) {
  EXPECT_EQ(Run(RunSubmit, {"--workers", "9"}), kExitUsage);
  EXPECT_THAT(err_.str(),
              HasSubstr("gradsync submit: job spec field numWorkers"));
}

TEST_F(ControlCommandsTest, Submit_MalformedFile_ExitsTwoAndSendsNothing) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/bad_job_", getpid(), ".json");
  std::ofstream(path) << "{\"numWorkers\": }";
  EXPECT_EQ(Run(RunSubmit, {"--file", path}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr(path + ": not a valid job spec"));
  EXPECT_TRUE(fake_.submitted().empty());
  std::remove(path.c_str());
}

TEST_F(ControlCommandsTest, Submit_BadFlag_ExitsTwoWithAPointerToHelp) {
  EXPECT_EQ(Run(RunSubmit, {"--wrokers", "2"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("unknown flag '--wrokers'"));
  EXPECT_THAT(err_.str(), HasSubstr("gradsync submit --help"));
}

TEST_F(ControlCommandsTest, Help_ListsTheFlags) {
  EXPECT_EQ(Run(RunSubmit, {"--help"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("--synthetic-floats F"));
  EXPECT_THAT(out_.str(), HasSubstr("--file JOB.json"));
}

TEST_F(ControlCommandsTest, Watch_FailedJob_ExitsOneWithTheMessage) {
  EXPECT_EQ(Run(RunWatch, {"j-fail"}), kExitFailure);
  EXPECT_THAT(out_.str(),
              HasSubstr("job j-fail FAILED: rank 1 failed at step 2: "
                        "allreduce timed out\n"));
}

TEST_F(ControlCommandsTest, Watch_Json_EventLinesThenTheFinalLine) {
  EXPECT_EQ(Run(RunWatch, {"j-1", "--json"}), kExitOk);
  std::istringstream lines(out_.str());
  std::vector<std::string> all;
  for (std::string line; std::getline(lines, line);) all.push_back(line);
  ASSERT_EQ(all.size(), 6u);
  EXPECT_THAT(all[0], StartsWith("{\"status\":{\"jobId\":\"j-1\""));
  EXPECT_THAT(all[1], HasSubstr("\"steps\":[{\"rank\":0,\"step\":0,"));
  EXPECT_THAT(all[5], StartsWith("{\"final\":{\"jobId\":\"j-1\""));
  EXPECT_THAT(all[5], HasSubstr("\"breakdown\":[{\"rank\":\"0\",\"steps\":3,"));
}

// The coordinator went away mid-watch (a restart): watch follows it again
// and counts every step once.
TEST_F(ControlCommandsTest, Watch_CoordinatorGoneMidWatch_WatchesAgain) {
  auto lines_of = [](const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  };
  ASSERT_EQ(Run(RunWatch, {"j-1", "--json"}), kExitOk);
  const std::vector<std::string> uninterrupted = lines_of(out_.str());
  out_.str("");
  fake_.BreakWatches(2);
  EXPECT_EQ(Run(RunWatch, {"j-1", "--json"}), kExitOk);
  EXPECT_THAT(err_.str(),
              HasSubstr("lost the coordinator while following job j-1"));
  EXPECT_THAT(err_.str(), HasSubstr("reconnecting"));
  const std::vector<std::string> watched_again = lines_of(out_.str());
  ASSERT_FALSE(uninterrupted.empty());
  ASSERT_FALSE(watched_again.empty());
  // The same final line (status and per-rank breakdown): no step counted
  // twice, none missed.
  EXPECT_EQ(watched_again.back(), uninterrupted.back());
  // Each step's JSON once: the broken watches' repeats carry no steps.
  const std::string all = out_.str();
  EXPECT_EQ(all.find("\"rank\":0,\"step\":0,"),
            all.rfind("\"rank\":0,\"step\":0,"));
}

TEST_F(ControlCommandsTest, Watch_UnknownJob_ExitsOne) {
  EXPECT_EQ(Run(RunWatch, {"j-404"}), kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("no job 'j-404'"));
}

TEST_F(ControlCommandsTest, Status_OneJob) {
  EXPECT_EQ(Run(RunStatus, {"j-1"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("state:     SUCCEEDED\n"));
  EXPECT_THAT(out_.str(), HasSubstr("accuracy:  0.8125"));
  EXPECT_THAT(out_.str(), HasSubstr("1     w-2     node  cpu:0\n"));
  EXPECT_EQ(Run(RunStatus, {"j-1", "--json"}), kExitOk);
  EXPECT_THAT(out_.str(), StartsWith("{\"jobId\":\"j-1\",\"spec\":{"));
  EXPECT_THAT(out_.str(), HasSubstr("\"state\":\"JOB_STATE_SUCCEEDED\""));
}

TEST_F(ControlCommandsTest, Status_AllJobs) {
  EXPECT_EQ(Run(RunStatus, {}), kExitOk);
  EXPECT_THAT(out_.str(), StartsWith("JOB          NAME    STATE"));
  EXPECT_THAT(out_.str(), HasSubstr("\nj-fail       fmnist  FAILED"));
  EXPECT_EQ(Run(RunStatus, {"--json"}), kExitOk);
  EXPECT_THAT(out_.str(), StartsWith("{\"jobs\":[{\"jobId\":\"j-1\""));
}

TEST_F(ControlCommandsTest, Status_UnknownJob_ExitsOne_JsonErrorOnStdout) {
  EXPECT_EQ(Run(RunStatus, {"j-404", "--json"}), kExitFailure);
  EXPECT_EQ(out_.str(),
            "{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"no job "
            "'j-404'\"}}\n");
  EXPECT_THAT(err_.str(), HasSubstr("gradsync status: no job 'j-404'"));
}

TEST_F(ControlCommandsTest, UsageError_WithJson_PrintsTheErrorAsJson) {
  EXPECT_EQ(Run(RunCancel, {"--json"}), kExitUsage);
  EXPECT_EQ(out_.str(),
            "{\"error\":{\"code\":\"INVALID_ARGUMENT\",\"message\":\"name "
            "the job\"}}\n");
}

TEST_F(ControlCommandsTest, Cancel) {
  EXPECT_EQ(Run(RunCancel, {"j-run"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("cancelled job j-run (now CANCELLED"));
  // Cancelled now, so a second cancel finds it ended.
  EXPECT_EQ(Run(RunCancel, {"j-run"}), kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("job j-run already ended (CANCELLED)"));
  EXPECT_EQ(Run(RunCancel, {"j-fail"}), kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("already ended"));
  EXPECT_EQ(Run(RunCancel, {}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("name the job"));
}

TEST_F(ControlCommandsTest, Metrics_CsvSortedAndJson) {
  EXPECT_EQ(Run(RunMetrics, {"j-1"}), kExitOk);
  std::istringstream lines(out_.str());
  std::string header, a, b, c;
  std::getline(lines, header);
  std::getline(lines, a);
  std::getline(lines, b);
  std::getline(lines, c);
  EXPECT_THAT(header, StartsWith("rank,step,loss,compute_s,comm_s"));
  EXPECT_THAT(a, StartsWith("0,0,2,"));
  EXPECT_THAT(b, StartsWith("0,1,1,"));
  EXPECT_THAT(c, StartsWith("1,1,1,"));
  EXPECT_EQ(Run(RunMetrics, {"j-1", "--format", "json"}), kExitOk);
  EXPECT_THAT(out_.str(),
              StartsWith("{\"jobId\":\"j-1\",\"metrics\":[{\"rank\":0,"));
  EXPECT_EQ(Run(RunMetrics, {"j-1", "--format", "xml"}), kExitUsage);
}

TEST_F(ControlCommandsTest, Metrics_TableAgainstTheIdealBandwidth) {
  // j-1: 2 ranks on one host, so the ideal busbw is B.
  EXPECT_EQ(Run(RunMetrics, {"j-1", "--format", "table", "--link-gbps", "2"}),
            kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(),
              StartsWith("ideal busbw 2.00 GB/s (B 2.00 GB/s; 1 node, 2 "
                         "ranks each)\n\nper-step means:\n"));
  EXPECT_THAT(out_.str(), HasSubstr("ALGBW  BUSBW  OF_IDEAL\n"));
  EXPECT_THAT(out_.str(), HasSubstr("1.00   1.00   50.0%\n"));
  // Without links: the bandwidths, no ideal.
  EXPECT_EQ(Run(RunMetrics, {"j-1", "--format", "table"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("ALGBW  BUSBW\n"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("OF_IDEAL")));
  // Links are for the table; I needs B; an unknown job fails cleanly.
  EXPECT_EQ(Run(RunMetrics, {"j-1", "--link-gbps", "2"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("apply to --format table"));
  EXPECT_EQ(
      Run(RunMetrics, {"j-1", "--format", "table", "--node-link-gbps", "1"}),
      kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--node-link-gbps needs --link-gbps"));
  EXPECT_EQ(Run(RunMetrics, {"j-1", "--format", "table", "--link-gbps", "-1"}),
            kExitUsage);
  EXPECT_EQ(Run(RunMetrics, {"j-404", "--format", "table", "--link-gbps", "2"}),
            kExitFailure);
}

// The README's line on a job over two hosts: without --node-link-gbps a
// node's link is taken as fast as a rank's (I = B), and the line says so.
TEST_F(ControlCommandsTest, Metrics_TwoHostsLinkGbpsAlone_TakesIEqualB) {
  EXPECT_EQ(Run(RunMetrics, {"j-hosts", "-o", "table", "--link-gbps", "2.4"}),
            kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(),
              StartsWith("ideal busbw 2.40 GB/s (B 2.40 GB/s, I 2.40 GB/s; "
                         "2 nodes, 1 rank each) (I = B: --node-link-gbps "
                         "gives a node's own link)\n"));
  EXPECT_EQ(Run(RunMetrics, {"j-hosts", "-o", "table", "--link-gbps", "2.4",
                             "--node-link-gbps", "1.2"}),
            kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("I 1.20 GB/s; 2 nodes"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("I = B")));
}

TEST_F(ControlCommandsTest, Workers_TableAndJson) {
  EXPECT_EQ(Run(RunWorkers, {}), kExitOk);
  EXPECT_THAT(out_.str(), StartsWith("ID   HOST  ADDRESS    DEVICES  STATE"));
  EXPECT_THAT(out_.str(), HasSubstr("w-2  node  127.0.0.1  cpu:0    IDLE"));
  EXPECT_EQ(Run(RunWorkers, {"--json"}), kExitOk);
  EXPECT_THAT(out_.str(),
              StartsWith("{\"workers\":[{\"workerId\":\"w-1\",\"host\":"));
}

// A port nothing listens on: bound, read, closed.
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(UnreachableCoordinatorTest, Client_FailsFastWithTheClearMessage) {
  const std::string address = absl::StrCat("127.0.0.1:", ClosedPort());
  ClientConfig config;
  config.address = address;
  config.rpc_timeout = absl::Seconds(30);
  ControlClient client(config);
  const absl::Time start = absl::Now();
  absl::StatusOr<ListWorkersResponse> workers = client.ListWorkers();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  ASSERT_EQ(workers.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(workers.status().message()),
              StartsWith(absl::StrCat(
                  "cannot reach the coordinator at ", address,
                  ": is it running? start a local cluster with `gradsync "
                  "local up` or set --coordinator / GRADSYNC_COORDINATOR")));
  // Streams too.
  absl::Status watch =
      client.WatchJob("j-1", absl::InfiniteDuration(),
                      [](const JobEvent&) { return absl::OkStatus(); });
  EXPECT_EQ(watch.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(watch.message()),
              HasSubstr("cannot reach the coordinator"));
}

// `gradsync watch` started a moment before the coordinator listens (or
// through gRPC 1.51's spurious connect failure, which takes the same path,
// see common/grpc_connect.h) follows the job instead of failing at once.
TEST(UnreachableCoordinatorTest, RemoteAddress_NoLocalUpAdvice) {
  // Issue 44, item 5: `local up` is no answer for another host's
  // coordinator; the message says what to check there instead.
  const std::string remote = UnreachableMessage("10.1.2.3:29400");
  EXPECT_THAT(remote, HasSubstr("is it running on that host"));
  EXPECT_THAT(remote, HasSubstr("firewall"));
  EXPECT_THAT(remote, Not(HasSubstr("local up")));
  EXPECT_THAT(UnreachableMessage("127.0.0.1:29400"),
              HasSubstr("gradsync local up"));
  EXPECT_THAT(UnreachableMessage("localhost:29400"),
              HasSubstr("gradsync local up"));
}

TEST(UnreachableCoordinatorTest, Watch_CoordinatorComesUpLate_Follows) {
  const int port = ClosedPort();
  const std::string address = absl::StrCat("127.0.0.1:", port);
  std::unique_ptr<gradsync::testing::FakeCoordinatorServer> server;
  std::thread starter([&]() {
    // Several connection attempts are refused first (100 ms backoff).
    absl::SleepFor(absl::Milliseconds(300));
    server = std::make_unique<gradsync::testing::FakeCoordinatorServer>(port);
    if (server->port() != port) {
      server.reset();
    } else {
      test_support::AddCannedJobs(&server->fake());
    }
  });
  ClientConfig config;
  config.address = address;
  config.rpc_timeout = absl::Seconds(20);
  ControlClient client(config);
  int events = 0;
  const absl::Status watch =
      client.WatchJob("j-1", absl::Seconds(20), [&](const JobEvent&) {
        ++events;
        return absl::OkStatus();
      });
  starter.join();
  // The port may have been taken in between; then there is nothing to show.
  if (server == nullptr) GTEST_SKIP() << "port " << port << " was taken";
  EXPECT_TRUE(watch.ok()) << watch;
  EXPECT_EQ(events, 5);  // the fake's RUNNING, three steps, SUCCEEDED
}

TEST(UnreachableCoordinatorTest, Commands_ExitOneWithTheMessage) {
  const std::string address = absl::StrCat("127.0.0.1:", ClosedPort());
  std::ostringstream out, err;
  CommandEnv env;
  env.out = &out;
  env.err = &err;
  env.coordinator_env = address;
  const absl::Time start = absl::Now();
  EXPECT_EQ(RunWorkers({"--json"}, env), kExitFailure);
  EXPECT_EQ(RunStatus({}, env), kExitFailure);
  EXPECT_EQ(RunSubmit({"--follow"}, env), kExitFailure);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_THAT(err.str(),
              HasSubstr(absl::StrCat("gradsync workers: cannot reach the "
                                     "coordinator at ",
                                     address, ": is it running?")));
  EXPECT_THAT(out.str(),
              StartsWith("{\"error\":{\"code\":\"UNAVAILABLE\",\"message\":"
                         "\"cannot reach the coordinator"));
  EXPECT_THAT(out.str(), Not(HasSubstr("submitted")));
}

TEST(ResolveCoordinatorAddressTest, FlagThenEnvThenDefault) {
  EXPECT_EQ(ResolveCoordinatorAddress("a:1", "b:2"), "a:1");
  EXPECT_EQ(ResolveCoordinatorAddress("", "b:2"), "b:2");
  EXPECT_EQ(ResolveCoordinatorAddress("", ""), "127.0.0.1:29400");
}

}  // namespace
}  // namespace control
}  // namespace cli
}  // namespace gradsync
