// ConnectChannel: a channel whose connection attempts fail for a while
// (here: nobody listens yet) is retried until a server answers; one where
// nobody ever listens gives up with UNAVAILABLE after the retry window, not
// at the call's deadline; a cancelled caller stops waiting. This is the
// path that absorbs gRPC 1.51's spurious connect failures, which cannot be
// provoked on purpose; a refused connection takes the same path through
// TRANSIENT_FAILURE.
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_connect.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/client/ps_admin_client.h"
#include "server/ps/daemon/ps_server.h"
#include "server/ps/transport/ps_transport.h"
#include "tests/ps/ps_grpc_test_util.h"

namespace gradsync {
namespace {

using ::testing::HasSubstr;

absl::Status Alive() { return absl::OkStatus(); }

// A loopback port that a server held a moment ago and nobody holds now.
int FreedPort() {
  std::unique_ptr<PsServer> server = testing::StartServer();
  return server != nullptr ? server->port() : 1;
}

TEST(ConnectChannelTest, LiveServer_Ready) {
  std::unique_ptr<PsServer> server = testing::StartServer();
  ASSERT_NE(server, nullptr);
  std::shared_ptr<grpc::Channel> channel = CreatePsChannel(server->address());
  EXPECT_TRUE(
      ConnectChannel(channel.get(), absl::Now() + absl::Seconds(20), Alive)
          .ok());
  // Ready already: returns at once.
  const absl::Time start = absl::Now();
  EXPECT_TRUE(
      ConnectChannel(channel.get(), absl::Now() + absl::Seconds(20), Alive)
          .ok());
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(100));
}

TEST(ConnectChannelTest, ServerComesUpAfterFailedAttempts_Connects) {
  const int port = FreedPort();
  const std::string address = absl::StrCat("127.0.0.1:", port);
  std::shared_ptr<grpc::Channel> channel = CreatePsChannel(address);
  std::unique_ptr<PsServer> late;
  std::thread starter([&]() {
    // Several attempts fail first (refused; the backoff is 100 ms).
    absl::SleepFor(absl::Milliseconds(400));
    absl::StatusOr<std::unique_ptr<PsServer>> server = PsServer::Start(address);
    if (server.ok()) late = *std::move(server);
  });
  const absl::Status status =
      ConnectChannel(channel.get(), absl::Now() + absl::Seconds(20), Alive);
  starter.join();
  // The port might have been taken in between; then there is nothing to
  // show.
  if (late == nullptr) GTEST_SKIP() << "port " << port << " was taken";
  EXPECT_TRUE(status.ok()) << status;
}

TEST(ConnectChannelTest, NobodyListens_UnavailableAfterTheRetryWindow) {
  std::shared_ptr<grpc::Channel> channel =
      CreatePsChannel(absl::StrCat("127.0.0.1:", FreedPort()));
  const absl::Time start = absl::Now();
  const absl::Status status =
      ConnectChannel(channel.get(), absl::Now() + absl::Seconds(60), Alive);
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("could not connect"));
  EXPECT_GE(took, kConnectRetryWindow);
  EXPECT_LT(took, absl::Seconds(10));  // not the 60 s deadline
}

TEST(ConnectChannelTest, CancelledCaller_StopsWithItsReason) {
  std::shared_ptr<grpc::Channel> channel =
      CreatePsChannel(absl::StrCat("127.0.0.1:", FreedPort()));
  const absl::Status status = ConnectChannel(
      channel.get(), absl::Now() + absl::Seconds(60),
      []() { return absl::CancelledError("the job was cancelled"); });
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("job was cancelled"));
}

TEST(ConnectChannelTest, AdminClientOfADeadServer_UnavailableNamingIt) {
  const std::string dead = absl::StrCat("127.0.0.1:", FreedPort());
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<ps::ShardStats>> stats =
      PsAdminClient::Connect(dead, absl::Seconds(60))->GetShardStats("job", -1);
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kUnavailable)
      << stats.status();
  EXPECT_THAT(std::string(stats.status().message()),
              HasSubstr(absl::StrCat("parameter server ", dead)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

}  // namespace
}  // namespace gradsync
