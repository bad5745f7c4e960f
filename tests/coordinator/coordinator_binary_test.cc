// The `gradsync-coordinator` binary: announces its address, serves, and
// exits cleanly on SIGTERM; bad command lines, and a --tls-dir without its
// files, exit 2; with --tls-dir it serves mutual TLS only; a --state-db
// that is an older state than its sidecar says exits 1 unless
// --accept-state-rollback.
// GRADSYNC_COORDINATOR_BINARY is its path, set by CMake.
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <signal.h>
#include <stdlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/grpc_status.h"
#include "common/wire_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/coordinator.grpc.pb.h"
#include "security/certs.h"
#include "security/tls.h"
#include "security/tls_dir.h"
#include "server/coordinator/sqlite_state_store.h"
#include "tests/util/daemon_process.h"
#include "tests/util/temp_dir.h"

namespace gradsync {
namespace {

using ::gradsync::testing::DaemonProcess;
using ::gradsync::testing::TempDir;

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr absl::Duration kProcessTimeout = absl::Seconds(10);

TEST(CoordinatorBinaryTest, Run_AnnouncesAddressServesAndExitsOnSigterm) {
  DaemonProcess process(
      GRADSYNC_COORDINATOR_BINARY,
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
  request.set_wire_version(kWireVersion);
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
        std::vector<std::string>{"--listen"},
        std::vector<std::string>{"--accept-state-rollback"}}) {
    DaemonProcess process(GRADSYNC_COORDINATOR_BINARY, args);
    ASSERT_TRUE(process.started());
    EXPECT_EQ(process.WaitForExit(kProcessTimeout), 2) << args[0];
  }
}

TEST(CoordinatorBinaryTest, Run_HeartbeatNotBelowLease_ExitsOne) {
  DaemonProcess process(GRADSYNC_COORDINATOR_BINARY,
                        {"--listen", "127.0.0.1:0", "--lease-ms", "100",
                         "--heartbeat-ms", "500"});
  ASSERT_TRUE(process.started());
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 1);
}

// ListWorkers at `address` over a channel with `security`.
[[nodiscard]] absl::Status ListWorkersAt(const std::string& address,
                                         const GrpcSecurity& security) {
  auto stub = Coordinator::NewStub(NewGrpcChannel(address, security));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kProcessTimeout));
  ListWorkersResponse response;
  return FromGrpcStatus(
      stub->ListWorkers(&context, ListWorkersRequest(), &response));
}

TEST(CoordinatorBinaryTest, Run_WithTlsDir_ServesMutualTlsOnly) {
  char pattern[] = "/tmp/gradsync-coordinator-tls.XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string dir = absl::StrCat(pattern, "/tls");
  absl::StatusOr<ClusterCertificates> certs = NewClusterCertificates(1);
  ASSERT_TRUE(certs.ok()) << certs.status();
  ASSERT_TRUE(WriteTlsDir(dir, *certs, false).ok());
  DaemonProcess process(GRADSYNC_COORDINATOR_BINARY,
                        {"--listen", "127.0.0.1:0", "--tls-dir", dir});
  ASSERT_TRUE(process.started());
  const std::string line = process.ReadLine(kProcessTimeout);
  ASSERT_THAT(line, StartsWith("gradsync-coordinator listening on 127.0.0.1:"));
  const std::string address(
      absl::StripPrefix(line, "gradsync-coordinator listening on "));
  const GrpcSecurity user = GrpcSecurity::Mtls(
      certs->ca.cert_pem, certs->client.cert_pem, certs->client.key_pem, dir);
  EXPECT_TRUE(ListWorkersAt(address, user).ok());
  EXPECT_EQ(ListWorkersAt(address, GrpcSecurity()).code(),
            absl::StatusCode::kUnavailable);
  process.Signal(SIGTERM);
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 0);
  RemoveTlsDir(dir);
  rmdir(pattern);
}

TEST(CoordinatorBinaryTest, Run_TlsDirWithoutItsFiles_ExitsTwo) {
  DaemonProcess process(
      GRADSYNC_COORDINATOR_BINARY,
      {"--listen", "127.0.0.1:0", "--tls-dir", "/nonexistent/gradsync-tls"});
  ASSERT_TRUE(process.started());
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 2);
}

bool CopyFile(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  std::ofstream out(to, std::ios::binary | std::ios::trunc);
  out << in.rdbuf();
  return in.good() && out.good();
}

// The coordinator with `args`, its stderr on the stdout that DaemonProcess
// reads.
DaemonProcess CoordinatorWithStderr(std::vector<std::string> args) {
  std::vector<std::string> sh = {"-c", "exec \"$0\" \"$@\" 2>&1",
                                 GRADSYNC_COORDINATOR_BINARY};
  sh.insert(sh.end(), args.begin(), args.end());
  return DaemonProcess("/bin/sh", std::move(sh));
}

// The first of the next 20 lines that contains `text`; "" if none does.
std::string ReadLineWith(DaemonProcess& process, absl::string_view text) {
  for (int i = 0; i < 20; ++i) {
    std::string line = process.ReadLine(kProcessTimeout);
    if (absl::StrContains(line, text)) return line;
  }
  return "";
}

TEST(CoordinatorBinaryTest,
     Run_StateDbCopiedWithoutItsLog_ExitsOneUnlessAccepted) {
  TempDir dir("coordinator_state_db");
  const std::string live = dir.path() + "/live.db";
  const std::string copy = dir.path() + "/coordinator.db";
  {
    absl::StatusOr<std::unique_ptr<StateStore>> store =
        OpenSqliteStateStore(live);
    ASSERT_TRUE(store.ok()) << store.status();
    StateChange change;
    change.jobs.emplace_back().set_id("job-1");
    ASSERT_TRUE((*store)->Apply(change).ok());
    // Copied while the coordinator runs, without its log.
    ASSERT_TRUE(CopyFile(live, copy));
    ASSERT_TRUE(CopyFile(live + ".generation", copy + ".generation"));
  }
  const std::vector<std::string> args = {"--listen", "127.0.0.1:0",
                                         "--state-db", copy};
  {
    DaemonProcess refused = CoordinatorWithStderr(args);
    ASSERT_TRUE(refused.started());
    const std::string line = ReadLineWith(refused, "--state-db:");
    EXPECT_THAT(line, HasSubstr(copy + "-wal"));
    EXPECT_THAT(line, HasSubstr("--accept-state-rollback"));
    EXPECT_EQ(refused.WaitForExit(kProcessTimeout), 1);
  }
  std::vector<std::string> accepting = args;
  accepting.push_back("--accept-state-rollback");
  for (const std::vector<std::string>& run : {accepting, args}) {
    DaemonProcess process = CoordinatorWithStderr(run);
    ASSERT_TRUE(process.started());
    EXPECT_THAT(ReadLineWith(process, "listening on"),
                StartsWith("gradsync-coordinator listening on 127.0.0.1:"))
        << run.back();
    process.Signal(SIGTERM);
    EXPECT_EQ(process.WaitForExit(kProcessTimeout), 0) << run.back();
  }
}

}  // namespace
}  // namespace gradsync
