// gradsync-worker's daemon in-process (worker_daemon.h): its command line,
// and a run against the fake coordinator that registers, then stops when
// the test says so.
#include "worker/daemon/worker_daemon.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "observability/health_server.h"
#include "tests/util/fake_coordinator.h"
#include "tests/util/health_check.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::FakeCoordinatorServer;
using ::gradsync::testing::HealthStatusOf;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::kHealthNotServing;
using ::gradsync::testing::kHealthServing;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

absl::StatusOr<WorkerDaemonConfig> Parse(
    std::vector<std::string> args,
    std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), "gradsync-worker");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return ParseWorkerDaemonFlags(
      static_cast<int>(argv.size()), argv.data(),
      [env](absl::string_view name) -> std::optional<std::string> {
        auto it = env.find(std::string(name));
        if (it == env.end()) return std::nullopt;
        return it->second;
      });
}

TEST(WorkerDaemonFlagsTest, Defaults) {
  absl::StatusOr<WorkerDaemonConfig> config = Parse({});
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->coordinator, "127.0.0.1:29400");
  EXPECT_EQ(config->devices, "cpu");
  EXPECT_EQ(config->address, "");  // the interface toward the coordinator
  EXPECT_EQ(config->collective_timeout, absl::Seconds(60));
  EXPECT_EQ(config->rendezvous_timeout, absl::Seconds(120));
  EXPECT_EQ(config->tcp_congestion, "auto");
  EXPECT_FALSE(config->spin_polls.has_value());
}

TEST(WorkerDaemonFlagsTest, EveryFlagAndTheEnvironment) {
  absl::StatusOr<WorkerDaemonConfig> config =
      Parse({"--devices", "cpu:3", "--address=10.0.0.2", "--host", "node-b",
             "--collective-timeout-s", "5", "--rendezvous-timeout-s=7",
             "--tcp_congestion", "default", "--spin-polls", "0"},
            {{"GRADSYNC_COORDINATOR", "10.0.0.1:1"}});
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->coordinator, "10.0.0.1:1");
  EXPECT_EQ(config->devices, "cpu:3");
  EXPECT_EQ(config->address, "10.0.0.2");
  EXPECT_EQ(config->host, "node-b");
  EXPECT_EQ(config->collective_timeout, absl::Seconds(5));
  EXPECT_EQ(config->rendezvous_timeout, absl::Seconds(7));
  EXPECT_EQ(config->tcp_congestion, "default");
  EXPECT_EQ(config->spin_polls, 0);
  // --advertise names the same address, as on the PS.
  config = Parse({"--advertise", "10.0.0.3"});
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->address, "10.0.0.3");
  config = Parse({"--coordinator", "c:2"}, {{"GRADSYNC_COORDINATOR", "e:1"}});
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->coordinator, "c:2");
}

TEST(WorkerDaemonFlagsTest, BadValues_AreInvalidArgumentNamingTheFlag) {
  const std::pair<std::vector<std::string>, const char*> cases[] = {
      {{"--spin-polls", "many"},
       "--spin-polls 'many' is neither auto nor a count >= 0"},
      {{"--collective-timeout-s", "0"},
       "--collective-timeout-s '0' is not a positive number of seconds"},
      {{"--address="}, "--address is empty"},
      {{"--devices", "tpu:0"}, "tpu"},
      {{"--tcp-congestion", "no-such-cc"}, "--tcp-congestion: "},
      {{"--bogus"}, "unknown flag '--bogus'"},
      {{"extra"}, "unknown argument 'extra'"},
  };
  for (const auto& [args, message] : cases) {
    EXPECT_THAT(Parse(args), StatusIs(absl::StatusCode::kInvalidArgument,
                                      HasSubstr(message)))
        << args[0];
  }
}

TEST(WorkerDaemonFlagsTest, HelpAndVersion) {
  absl::StatusOr<WorkerDaemonConfig> config = Parse({"-h"});
  ASSERT_THAT(config, IsOk());
  EXPECT_TRUE(config->help);
  config = Parse({"--version"});
  ASSERT_THAT(config, IsOk());
  EXPECT_TRUE(config->version);
  EXPECT_THAT(WorkerDaemonUsage(), HasSubstr("--spin-polls auto|N"));
  EXPECT_THAT(WorkerDaemonUsage(), HasSubstr("[$GRADSYNC_COORDINATOR]"));
}

class LogSink {
 public:
  LogFn Fn() {
    return [this](absl::string_view line) {
      absl::MutexLock lock(&mu_);
      lines_.emplace_back(line);
    };
  }
  bool Contains(absl::string_view text) const {
    absl::MutexLock lock(&mu_);
    for (const std::string& line : lines_) {
      if (absl::StrContains(line, text)) return true;
    }
    return false;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

TEST(RunWorkerDaemonTest, RegistersItsDevicesThenStopsCleanly) {
  FakeCoordinatorServer server;
  WorkerDaemonConfig config;
  config.coordinator = server.address();
  config.devices = "cpu:2";
  config.host = "node-t";
  LogSink log;
  WorkerDaemonHooks hooks;
  hooks.connect_coordinator = [&](const std::string& address) {
    EXPECT_EQ(address, server.address());
    return server.NewClient();
  };
  hooks.wait_for_stop = [&] {
    EXPECT_TRUE(server.fake().WaitFor(
        [&] { return !server.fake().registrations().empty(); }));
    return std::string("the test's stop");
  };
  hooks.log = log.Fn();
  EXPECT_EQ(RunWorkerDaemon(config, hooks), 0);
  ASSERT_EQ(server.fake().registrations().size(), 1u);
  const RegisterWorkerRequest request = server.fake().registrations()[0];
  EXPECT_EQ(request.host(), "node-t");
  EXPECT_EQ(request.address(), "127.0.0.1");
  EXPECT_EQ(request.devices_size(), 2);
  EXPECT_TRUE(log.Contains("got the test's stop"));
  EXPECT_TRUE(log.Contains("stopped"));
}

TEST(RunWorkerDaemonTest, DeviceNoHostHas_ExitsTwoBeforeRegistering) {
  FakeCoordinatorServer server;
  WorkerDaemonConfig config;
  config.coordinator = server.address();
  config.devices = "cuda:99";
  LogSink log;
  WorkerDaemonHooks hooks;
  hooks.connect_coordinator = [&](const std::string&) {
    return server.NewClient();
  };
  hooks.wait_for_stop = [] { return std::string("unexpected"); };
  hooks.log = log.Fn();
  EXPECT_EQ(RunWorkerDaemon(config, hooks), 2);
  EXPECT_TRUE(server.fake().registrations().empty());
  EXPECT_TRUE(log.Contains("--devices cuda:99"));
}

// --health-listen: live before the worker registers, ready once it has,
// and gone when it stops.
TEST(RunWorkerDaemonTest, HealthListen_LiveThenReadyOnceRegistered) {
  FakeCoordinatorServer server;
  WorkerDaemonConfig config;
  config.coordinator = server.address();
  config.devices = "cpu:1";
  config.health_listen = "127.0.0.1:0";
  LogSink log;
  WorkerDaemonHooks hooks;
  hooks.connect_coordinator = [&](const std::string&) {
    return server.NewClient();
  };
  std::string probe;
  hooks.health_serving = [&](const std::string& address) {
    probe = address;
    // Called before the agent starts: alive, not ready.
    absl::StatusOr<int> live = HealthStatusOf(address);
    absl::StatusOr<int> ready = HealthStatusOf(address, kReadyService);
    EXPECT_TRUE(live.ok() && *live == kHealthServing) << live.status();
    EXPECT_TRUE(ready.ok() && *ready == kHealthNotServing) << ready.status();
  };
  hooks.wait_for_stop = [&] {
    EXPECT_TRUE(server.fake().WaitFor(
        [&] { return !server.fake().registrations().empty(); }));
    absl::StatusOr<int> ready = HealthStatusOf(probe, kReadyService);
    for (const absl::Time deadline = absl::Now() + absl::Seconds(10);
         absl::Now() < deadline && !(ready.ok() && *ready == kHealthServing);
         ready = HealthStatusOf(probe, kReadyService)) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    EXPECT_TRUE(ready.ok() && *ready == kHealthServing) << ready.status();
    return std::string("the test's stop");
  };
  hooks.log = log.Fn();
  EXPECT_EQ(RunWorkerDaemon(config, hooks), 0);
  ASSERT_FALSE(probe.empty());
  EXPECT_TRUE(log.Contains("health checks on " + probe));
  EXPECT_FALSE(HealthStatusOf(probe).ok()) << "the probe port outlived it";
}

TEST(WorkerDaemonFlagsTest, HealthListen_ParsedAndChecked) {
  absl::StatusOr<WorkerDaemonConfig> config =
      Parse({"--health-listen", "0.0.0.0:9401"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->health_listen, "0.0.0.0:9401");
  EXPECT_THAT(Parse({"--health-listen", "9401"}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--health-listen '9401' is not HOST:PORT")));
}

}  // namespace
}  // namespace gradsync
