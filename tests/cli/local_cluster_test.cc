// The local cluster launcher's parts: cluster.json, binary lookup, daemon
// processes (with /bin/sleep standing in for a daemon), `local down`,
// `local up`'s failure paths (a coordinator that exits at once; a port a
// coordinator already answers on), and `local up --ps` with stand-in
// daemons.
#include "cli/control/local_cluster.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/control/command_common.h"
#include "cli/control/local_command.h"
#include "cli/framework/command_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/coordinator.grpc.pb.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A fresh directory under the test's temporary directory, removed at the
// end.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = absl::StrCat(::testing::TempDir(), "/gradsync_local_", getpid(),
                         "_", counter++);
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string SleepBinary() {
  for (const char* path : {"/bin/sleep", "/usr/bin/sleep"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

void WriteExecutable(const std::string& path, const std::string& script) {
  std::ofstream(path) << script;
  chmod(path.c_str(), 0755);
}

TEST(ClusterRecordTest, JsonRoundTrip) {
  ClusterRecord record;
  record.run_dir = "/tmp/run \"x\"";
  record.coordinator_address = "127.0.0.1:29400";
  record.started_at = 1700000000.5;
  record.daemons.push_back({"coordinator", "/b/gradsync-coordinator", 123,
                            "/tmp/c.log", "127.0.0.1:29400", ""});
  record.daemons.push_back({"worker-0", "/b/gradsync-worker", 124, "/tmp/w.log",
                            "127.0.0.1", "cpu:2"});
  absl::StatusOr<ClusterRecord> back =
      ClusterRecordFromJson(ClusterRecordToJson(record), "cluster.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->run_dir, record.run_dir);
  EXPECT_EQ(back->coordinator_address, record.coordinator_address);
  EXPECT_DOUBLE_EQ(back->started_at, record.started_at);
  ASSERT_EQ(back->daemons.size(), 2u);
  EXPECT_EQ(back->daemons[1].name, "worker-0");
  EXPECT_EQ(back->daemons[1].pid, 124);
  EXPECT_EQ(back->daemons[1].devices, "cpu:2");
  EXPECT_EQ(back->daemons[0].binary, "/b/gradsync-coordinator");
}

TEST(ClusterRecordTest, Malformed_NamesTheFile) {
  absl::StatusOr<ClusterRecord> record =
      ClusterRecordFromJson("{\"daemons\": [", "/r/cluster.json");
  ASSERT_EQ(record.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(record.status().message()),
              HasSubstr("/r/cluster.json is not valid JSON"));
  record = ClusterRecordFromJson("{\"daemons\": [{\"name\": \"x\"}]}", "f");
  EXPECT_EQ(record.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FindDaemonBinaryTest, BuildTreeThenBesideThenPath) {
  TempDir dir;
  const std::string root = dir.path();
  std::filesystem::create_directories(root + "/build/cli");
  std::filesystem::create_directories(root + "/build/worker");
  std::filesystem::create_directories(root + "/bin");
  WriteExecutable(root + "/bin/gradsync-worker", "#!/bin/sh\n");
  const std::vector<std::string> relative = {"../worker", ""};
  // Only on PATH.
  absl::StatusOr<std::string> found =
      FindDaemonBinary("gradsync-worker", root + "/build/cli", relative,
                       "/nope:" + root + "/bin");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, root + "/bin/gradsync-worker");
  // Beside the binary wins over PATH, the build tree over beside.
  WriteExecutable(root + "/build/cli/gradsync-worker", "#!/bin/sh\n");
  EXPECT_EQ(*FindDaemonBinary("gradsync-worker", root + "/build/cli", relative,
                              root + "/bin"),
            root + "/build/cli/gradsync-worker");
  WriteExecutable(root + "/build/worker/gradsync-worker", "#!/bin/sh\n");
  EXPECT_EQ(*FindDaemonBinary("gradsync-worker", root + "/build/cli", relative,
                              root + "/bin"),
            root + "/build/cli/../worker/gradsync-worker");
  // Nowhere: the error lists where it looked.
  absl::StatusOr<std::string> missing =
      FindDaemonBinary("gradsync-coordinator", root + "/build/cli",
                       {"../server/coordinator"}, "");
  ASSERT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("cannot find gradsync-coordinator (looked in " + root +
                        "/build/cli/../server/coordinator and $PATH)"));
}

TEST(DaemonTest, SpawnLogsAndStop) {
  const std::string sleep = SleepBinary();
  ASSERT_FALSE(sleep.empty());
  TempDir dir;
  const std::string log = dir.path() + "/sleeper.log";
  absl::StatusOr<pid_t> pid = SpawnDaemon(sleep, {"60"}, log);
  ASSERT_TRUE(pid.ok()) << pid.status();
  // The daemon runs in a session of its own.
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(getsid(*pid), *pid);
  EXPECT_TRUE(IsDaemonAlive(*pid, "sleep"));
  EXPECT_FALSE(IsDaemonAlive(*pid, "gradsync-worker"));  // not ours
  const std::vector<std::string> killed =
      StopDaemons({{"sleeper", sleep, *pid, log, "", ""}}, absl::Seconds(5));
  EXPECT_TRUE(killed.empty());  // sleep exits on SIGTERM
  EXPECT_FALSE(IsDaemonAlive(*pid, "sleep"));
}

TEST(DaemonTest, StopKillsWhatIgnoresSigterm) {
  TempDir dir;
  const std::string script = dir.path() + "/stubborn";
  WriteExecutable(script,
                  "#!/bin/sh\ntrap '' TERM\nwhile :; do sleep 1; done\n");
  absl::StatusOr<pid_t> pid =
      SpawnDaemon("/bin/sh", {script}, dir.path() + "/stubborn.log");
  ASSERT_TRUE(pid.ok());
  absl::SleepFor(absl::Milliseconds(200));
  const absl::Time start = absl::Now();
  const std::vector<std::string> killed = StopDaemons(
      {{"stubborn", "/bin/sh", *pid, "", "", ""}}, absl::Milliseconds(300));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_THAT(killed, ElementsAre("stubborn"));
  EXPECT_FALSE(IsDaemonAlive(*pid, "sh"));
}

TEST(LocalDownTest, NoClusterFile_NothingToDo) {
  TempDir dir;
  absl::StatusOr<LocalDownResult> down =
      LocalDown(dir.path(), absl::Seconds(1));
  ASSERT_TRUE(down.ok()) << down.status();
  EXPECT_FALSE(down->was_up);
}

TEST(LocalDownTest, StopsTheRecordedDaemonsAndRemovesTheFile) {
  const std::string sleep = SleepBinary();
  TempDir dir;
  ClusterRecord record;
  record.run_dir = dir.path();
  record.coordinator_address = "127.0.0.1:1";
  for (const char* name : {"coordinator", "worker-0"}) {
    const std::string log = absl::StrCat(dir.path(), "/", name, ".log");
    absl::StatusOr<pid_t> pid = SpawnDaemon(sleep, {"60"}, log);
    ASSERT_TRUE(pid.ok());
    record.daemons.push_back({name, sleep, *pid, log, "", ""});
  }
  // A recycled pid that is not the recorded binary is left alone.
  record.daemons.push_back({"worker-1", "/x/gradsync-worker",
                            static_cast<int>(getpid()), "", "", ""});
  std::ofstream(dir.path() + "/cluster.json") << ClusterRecordToJson(record);
  absl::StatusOr<LocalDownResult> down =
      LocalDown(dir.path(), absl::Seconds(5));
  ASSERT_TRUE(down.ok()) << down.status();
  EXPECT_TRUE(down->was_up);
  EXPECT_THAT(down->stopped, ElementsAre("coordinator", "worker-0"));
  EXPECT_TRUE(down->killed.empty());
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/cluster.json"));
  EXPECT_FALSE(IsDaemonAlive(record.daemons[0].pid, "sleep"));
}

TEST(LocalDownTest, ACoordinatorRestartedByHand_IsStoppedToo) {
  // Trust finding 9: `local down` stopped the recorded pids only, so a
  // coordinator restarted by hand (on the cluster's state database) kept
  // running. It is found by its --state-db and stopped as well.
  const std::string sleep = SleepBinary();
  TempDir dir;
  ClusterRecord record;
  record.run_dir = dir.path();
  record.coordinator_address = "127.0.0.1:1";
  absl::StatusOr<pid_t> recorded =
      SpawnDaemon(sleep, {"60"}, dir.path() + "/coordinator.log");
  ASSERT_TRUE(recorded.ok());
  record.daemons.push_back({"coordinator", sleep, *recorded,
                            dir.path() + "/coordinator.log", "", ""});
  std::ofstream(dir.path() + "/cluster.json") << ClusterRecordToJson(record);
  // The restart by hand: the same database, a pid cluster.json does not
  // know (a shell that keeps its arguments, and leaves nothing behind).
  const std::string db = absl::StrCat(dir.path(), "/", kStateDbFileName);
  const std::string restart = dir.path() + "/restarted-coordinator";
  WriteExecutable(restart,
                  "#!/bin/sh\nsleep 60 &\ntrap 'kill $!; exit 0' TERM\nwait\n");
  absl::StatusOr<pid_t> restarted =
      SpawnDaemon(restart, {"--state-db", db}, dir.path() + "/again.log");
  ASSERT_TRUE(restarted.ok());
  // Until its exec, the child's command line is still this test's (and
  // the shell's own child has the shell's for a moment): wait for the
  // shell to show.
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (
      !absl::c_linear_search(ProcessesWithFlag("--state-db", db), *restarted) &&
      absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_THAT(ProcessesWithFlag("--state-db", db), Contains(*restarted));
  absl::StatusOr<LocalDownResult> down =
      LocalDown(dir.path(), absl::Seconds(5));
  ASSERT_TRUE(down.ok()) << down.status();
  ASSERT_FALSE(down->stopped.empty());
  EXPECT_EQ(down->stopped[0], "coordinator");
  EXPECT_THAT(down->stopped,
              Contains(absl::StrCat("coordinator (restarted by hand, pid ",
                                    *restarted, ")")));
  EXPECT_TRUE(ProcessesWithFlag("--state-db", db).empty());
}

TEST(LocalUpTest, CoordinatorThatExits_ErrorShowsItsLog) {
  TempDir dir;
  const std::string fake = dir.path() + "/gradsync-coordinator";
  WriteExecutable(
      fake, "#!/bin/sh\necho \"cannot listen on $2 (args: $*)\" >&2\nexit 1\n");
  LocalUpConfig config;
  config.run_dir = dir.path() + "/run";
  config.workers = 2;
  config.port = 0;
  config.coordinator_binary = fake;
  config.worker_binary = fake;
  config.timeout = absl::Seconds(10);
  absl::StatusOr<LocalUpResult> up = LocalUp(config);
  ASSERT_EQ(up.status().code(), absl::StatusCode::kUnavailable) << up.status();
  const std::string message(up.status().message());
  EXPECT_THAT(message, HasSubstr("coordinator (pid "));
  EXPECT_THAT(message, HasSubstr("exited with status 1 while starting"));
  EXPECT_THAT(message, HasSubstr("cannot listen on 127.0.0.1:"));
  // mTLS by default: a fresh CA and certificates in RUN_DIR/tls, which
  // the coordinator is given.
  EXPECT_THAT(message,
              HasSubstr(absl::StrCat("--tls-dir ", config.run_dir, "/tls")));
  EXPECT_TRUE(std::filesystem::exists(config.run_dir + "/tls/node.key"));
  EXPECT_TRUE(std::filesystem::exists(config.run_dir + "/tls/ca.pem"));
  // Nothing signs another certificate once they are issued: the CA's key
  // is gone before any daemon starts (issue 43, finding 9).
  EXPECT_FALSE(std::filesystem::exists(config.run_dir + "/tls/ca.key"));
  EXPECT_FALSE(std::filesystem::exists(config.run_dir + "/cluster.json"));
}

// A coordinator that only answers ListWorkers (what LocalUp probes with).
class AnsweringCoordinator final : public Coordinator::Service {
  grpc::Status ListWorkers(grpc::ServerContext*, const ListWorkersRequest*,
                           ListWorkersResponse*) override {
    return grpc::Status::OK;
  }
};

TEST(LocalUpTest, PortTakenByAnotherCoordinator_IsRefused) {
  AnsweringCoordinator answering;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&answering);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  TempDir dir;
  LocalUpConfig config;
  config.run_dir = dir.path();
  config.port = port;
  config.coordinator_binary = "/nonexistent";
  config.worker_binary = "/nonexistent";
  absl::StatusOr<LocalUpResult> up = LocalUp(config);
  ASSERT_EQ(up.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(up.status().message()),
              HasSubstr(absl::StrCat("a coordinator already answers at "
                                     "127.0.0.1:",
                                     port)));
  server->Shutdown();
}

// A coordinator that lists `servers` parameter servers (and one worker).
class ListingCoordinator final : public Coordinator::Service {
 public:
  explicit ListingCoordinator(int servers) : servers_(servers) {}
  grpc::Status ListWorkers(grpc::ServerContext*, const ListWorkersRequest*,
                           ListWorkersResponse* response) override {
    response->add_workers()->set_state(WORKER_STATE_IDLE);
    for (int i = 0; i < servers_; ++i) {
      response->add_parameter_servers()->set_ps_id(absl::StrCat("ps-", i + 1));
    }
    ParameterServerInfo* lost = response->add_parameter_servers();
    lost->set_lost(true);  // never counted
    return grpc::Status::OK;
  }

 private:
  const int servers_;
};

// LocalUp with stand-in daemons: the "coordinator" prints the address of
// `listing` (served in this process, in plaintext: the daemons are told
// --insecure) and sleeps; workers sleep; each parameter server prints an
// address first, then sleeps.
class LocalUpWithServersTest : public ::testing::Test {
 protected:
  // Args each fake daemon was started with, a line per daemon. local up
  // does not wait for a fake worker (it never registers), so its script
  // may not have run yet: waits up to 10 s for `want` lines.
  std::vector<std::string> ArgsOf(absl::string_view daemon, size_t want) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    std::vector<std::string> lines;
    do {
      lines.clear();
      std::ifstream file(absl::StrCat(dir_.path(), "/", daemon, "-args"));
      for (std::string line; std::getline(file, line);) lines.push_back(line);
      if (lines.size() >= want) break;
      absl::SleepFor(absl::Milliseconds(10));
    } while (absl::Now() < deadline);
    return lines;
  }

  [[nodiscard]] absl::StatusOr<LocalUpResult> Up(
      int listed, int wanted, std::vector<std::string>* ps_args,
      const std::string& ps_transport = "plane") {
    listing_ = std::make_unique<ListingCoordinator>(listed);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(listing_.get());
    server_ = builder.BuildAndStart();
    EXPECT_NE(server_, nullptr);
    const std::string bin = dir_.path();
    WriteExecutable(bin + "/gradsync-coordinator",
                    absl::StrCat("#!/bin/sh\necho \"$@\" > ", bin,
                                 "/coordinator-args\n"
                                 "echo \"gradsync-coordinator "
                                 "listening on 127.0.0.1:",
                                 port, "\"\nexec sleep 60\n"));
    WriteExecutable(bin + "/gradsync-worker",
                    absl::StrCat("#!/bin/sh\necho \"$@\" >> ", bin,
                                 "/worker-args\nexec sleep 60\n"));
    WriteExecutable(bin + "/gradsync-ps",
                    absl::StrCat("#!/bin/sh\necho \"$@\" > ", bin,
                                 "/ps-args\necho starting >&2\n"
                                 "echo 127.0.0.1:7001\nexec sleep 60\n"));
    LocalUpConfig config;
    config.run_dir = bin + "/run";
    config.workers = 1;
    config.parameter_servers = wanted;
    config.port = 0;
    config.coordinator_binary = bin + "/gradsync-coordinator";
    config.worker_binary = bin + "/gradsync-worker";
    config.ps_binary = bin + "/gradsync-ps";
    config.timeout = absl::Seconds(2);
    config.stop_grace = absl::Seconds(5);
    config.insecure = true;
    config.ps_transport = ps_transport;
    absl::StatusOr<LocalUpResult> up = LocalUp(config);
    std::ifstream args_file(bin + "/ps-args");
    std::string line;
    if (std::getline(args_file, line)) ps_args->push_back(line);
    return up;
  }

  void TearDown() override {
    (void)LocalDown(dir_.path() + "/run", absl::Seconds(5));
    if (server_ != nullptr) server_->Shutdown();
  }

  TempDir dir_;
  std::unique_ptr<ListingCoordinator> listing_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(LocalUpWithServersTest, WaitsForEveryServer_RecordsThemAndStopsThem) {
  std::vector<std::string> ps_args;
  absl::StatusOr<LocalUpResult> up = Up(1, 1, &ps_args);
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_EQ(up->registered_parameter_servers, 1);
  ASSERT_EQ(up->record.daemons.size(), 3u);
  const DaemonRecord& ps = up->record.daemons[2];
  EXPECT_EQ(ps.name, "ps-0");
  EXPECT_EQ(ps.address, "127.0.0.1:7001");  // its first HOST:PORT line
  ASSERT_EQ(ps_args.size(), 1u);
  // The daemons' join token, which no user gets: in the run directory,
  // readable by its owner only.
  const std::string join = dir_.path() + "/run/join-token";
  EXPECT_EQ(ps_args[0], absl::StrCat("--listen 127.0.0.1:0 --join-token-file ",
                                     join, " --insecure --coordinator ",
                                     up->record.coordinator_address));
  struct stat st {};
  ASSERT_EQ(stat(join.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(up->record.tls_dir, "");
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/run/tls"));
  // --port 0: local up picked the port, so the coordinator's command line
  // names a real one, which a restart by hand comes back on.
  const std::vector<std::string> coordinator = ArgsOf("coordinator", 1);
  ASSERT_EQ(coordinator.size(), 1u);
  EXPECT_THAT(coordinator[0], ::testing::StartsWith("--listen 127.0.0.1:"));
  EXPECT_THAT(coordinator[0],
              ::testing::Not(::testing::StartsWith("--listen 127.0.0.1:0 ")));
  // cluster.json lists it, and local down stops it with the others.
  absl::StatusOr<std::optional<ClusterRecord>> record =
      ReadClusterRecord(dir_.path() + "/run");
  ASSERT_TRUE(record.ok() && record->has_value());
  EXPECT_EQ((*record)->daemons[2].address, "127.0.0.1:7001");
  absl::StatusOr<LocalDownResult> down =
      LocalDown(dir_.path() + "/run", absl::Seconds(5));
  ASSERT_TRUE(down.ok()) << down.status();
  EXPECT_THAT(down->stopped, ElementsAre("coordinator", "worker-0", "ps-0"));
  EXPECT_FALSE(IsRecordedDaemonAlive(ps));
}

TEST_F(LocalUpWithServersTest, ServerNeverRegisters_DeadlineErrorNamesIt) {
  std::vector<std::string> ps_args;
  const absl::Time start = absl::Now();
  absl::StatusOr<LocalUpResult> up = Up(0, 2, &ps_args);
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  ASSERT_EQ(up.status().code(), absl::StatusCode::kDeadlineExceeded)
      << up.status();
  const std::string message(up.status().message());
  EXPECT_THAT(message, HasSubstr("0 of 2 parameter servers (gradsync-ps) "
                                 "registered with the coordinator within 2s"));
  EXPECT_THAT(message, HasSubstr("ps-1.log:\n  starting\n  127.0.0.1:7001"));
  EXPECT_THAT(message, HasSubstr("did not come up (stopped it)"));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/run/cluster.json"));
}

// The tensor plane is the default, beside TLS too: every gradsync-ps
// serves one (its default) and the workers get the transport asked for.
TEST_F(LocalUpWithServersTest, PsTransport_WorkersGetIt) {
  std::vector<std::string> ps_args;
  absl::StatusOr<LocalUpResult> up = Up(1, 1, &ps_args, "grpc");
  ASSERT_TRUE(up.ok()) << up.status();
  ASSERT_EQ(ps_args.size(), 1u);
  const std::string join = dir_.path() + "/run/join-token";
  EXPECT_EQ(ps_args[0], absl::StrCat("--listen 127.0.0.1:0 --join-token-file ",
                                     join, " --insecure --coordinator ",
                                     up->record.coordinator_address));
  EXPECT_THAT(ArgsOf("worker", 1),
              ElementsAre(absl::StrCat(
                  "--devices cpu:1 --address 127.0.0.1 --allow-entrypoints "
                  "--join-token-file ",
                  join, " --ps-transport grpc --insecure --coordinator ",
                  up->record.coordinator_address)));
}

TEST(LocalUpTest, UnknownPsTransport_RefusedBeforeAnythingStarts) {
  TempDir dir;
  LocalUpConfig config;
  config.run_dir = dir.path() + "/run";
  config.ps_transport = "rdma";
  config.parameter_servers = 1;
  absl::StatusOr<LocalUpResult> up = LocalUp(config);
  EXPECT_EQ(up.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(up.status().message(),
              HasSubstr("--ps-transport is 'rdma'; use plane"));
  EXPECT_FALSE(std::filesystem::exists(config.run_dir));
}

TEST(LocalCommandTest, RunDirFromFlagThenEnvThenDefault) {
  EXPECT_EQ(ResolveRunDir("/a/b/", "/c", "/w"), "/a/b");
  EXPECT_EQ(ResolveRunDir("", "rel", "/w"), "/w/rel");
  EXPECT_EQ(ResolveRunDir("", "", "/w"), "/w/.run");
}

// The users' token: --token-file, else $GRADSYNC_TOKEN_FILE, else the
// local cluster's when it runs the coordinator the command talks to.
TEST(LocalCommandTest, TokenFileFromFlagThenEnvThenTheLocalCluster) {
  TempDir dir;
  CommandEnv env;
  env.cwd = "/";
  env.run_dir_env = dir.path();
  EXPECT_EQ(ResolveTokenFile("", env, "127.0.0.1:29400"), "");  // no cluster
  ClusterRecord record;
  record.run_dir = dir.path();
  record.coordinator_address = "127.0.0.1:29400";
  std::ofstream(dir.path() + "/cluster.json") << ClusterRecordToJson(record);
  EXPECT_EQ(ResolveTokenFile("", env, "127.0.0.1:29400"), "");  // no token
  std::ofstream(dir.path() + "/user-token") << "x";
  EXPECT_EQ(ResolveTokenFile("", env, "127.0.0.1:29400"),
            dir.path() + "/user-token");
  // Another coordinator is not the local cluster's.
  EXPECT_EQ(ResolveTokenFile("", env, "10.0.0.1:29400"), "");
  env.token_file_env = "/etc/gradsync/token";
  EXPECT_EQ(ResolveTokenFile("", env, "10.0.0.1:29400"), "/etc/gradsync/token");
  EXPECT_EQ(ResolveTokenFile("/mine", env, "10.0.0.1:29400"), "/mine");
}

TEST(LocalCommandTest, DownWithoutCluster_SaysSoAsJson) {
  TempDir dir;
  std::ostringstream out, err;
  CommandEnv env;
  env.out = &out;
  env.err = &err;
  env.cwd = "/";
  EXPECT_EQ(RunLocal({"down", "--run-dir", dir.path(), "--json"}, env),
            kExitOk);
  EXPECT_EQ(out.str(), absl::StrCat("{\"runDir\":\"", dir.path(),
                                    "\",\"wasUp\":false,\"stopped\":[],"
                                    "\"killed\":[]}\n"));
  EXPECT_EQ(RunLocal({"sideways"}, env), kExitUsage);
  EXPECT_THAT(err.str(), HasSubstr("say up or down"));
}

TEST(LocalCommandTest, UpWithoutBinaries_SaysWhereItLooked) {
  TempDir dir;
  std::ostringstream out, err;
  CommandEnv env;
  env.out = &out;
  env.err = &err;
  env.cwd = dir.path();
  env.self_exe = dir.path() + "/cli/gradsync";
  env.path_env = "";
  EXPECT_EQ(RunLocal({"up", "--workers", "2"}, env), kExitFailure);
  EXPECT_THAT(err.str(), HasSubstr("cannot find gradsync-coordinator"));
}

}  // namespace
}  // namespace control
}  // namespace cli
}  // namespace gradsync
