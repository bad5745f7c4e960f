// Who may use a job's shards (docs/security.md), over real gRPC: a server
// that registers with a coordinator requires the job's token
// (PsTokenForJob(shard key, job)) on every call for the job's shards.
// Without it, or with another job's, CreateShard, PushPull, FetchState,
// SeedShard, GetShardStats and ReleaseShard(job, -1) are PERMISSION_DENIED
// and change nothing; before the key arrived they are UNAVAILABLE.
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/secret.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/ps_client.h"
#include "server/ps/ps_server.h"
#include "tests/ps/ps_grpc_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::ShardRequest;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr size_t kTotal = 1000;

std::unique_ptr<PsServer> StartGuardedServer() {
  PsServerOptions options;
  options.require_tokens = true;
  absl::StatusOr<std::unique_ptr<PsServer>> server =
      PsServer::Start("127.0.0.1:0", options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::unique_ptr<PsClient> Client(const std::string& job,
                                 const std::string& address,
                                 const std::string& token) {
  absl::StatusOr<std::vector<PsShardLocation>> shards =
      BalancedShardLocations(kTotal, {address});
  EXPECT_TRUE(shards.ok()) << shards.status();
  PsClientOptions options;
  options.timeout = absl::Seconds(10);
  options.token = token;
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create(job, 0, kTotal, *shards, options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

TEST(PsTokenTest, WithoutTheJobsToken_EveryShardCallIsRefused) {
  std::unique_ptr<PsServer> server = StartGuardedServer();
  ASSERT_NE(server, nullptr);
  const std::string key = RandomSecret();
  server->service()->SetShardKey(key);
  const std::string token = PsTokenForJob(key, "job-1");

  // The job's own rank creates its shard and trains on it.
  std::unique_ptr<PsClient> owner = Client("job-1", server->address(), token);
  ps::CreateShardRequest create = ShardRequest("job-1", 0, 1, kTotal, 1);
  create.set_token(token);
  ASSERT_THAT(PsAdminClient::Connect(server->address())->CreateShard(create),
              IsOk());
  std::vector<float> grads(kTotal, 1.0f), params(kTotal, -1.0f);
  ASSERT_THAT(owner->PushPull(0, grads, absl::MakeSpan(params)), IsOk());
  EXPECT_EQ(params, std::vector<float>(kTotal, -1.0f));  // 0 - lr * 1

  const auto refused = [](const std::string& what) {
    return StatusIs(absl::StatusCode::kPermissionDenied,
                    AllOf(HasSubstr("job-1's shards"), HasSubstr(what)));
  };
  for (const std::string& bad : {std::string(), PsTokenForJob(key, "job-2"),
                                 PsTokenForJob(RandomSecret(), "job-1")}) {
    const std::string what = bad.empty() ? "carries no token" : "not the job's";
    std::unique_ptr<PsClient> intruder =
        Client("job-1", server->address(), bad);
    std::vector<float> out(kTotal);
    EXPECT_THAT(intruder->PushPull(1, grads, absl::MakeSpan(out)),
                refused(what));
    EXPECT_THAT(intruder->Pull(1, absl::MakeSpan(out)), refused(what));
    EXPECT_THAT(intruder->FetchState().status(), refused(what));
    EXPECT_THAT(intruder->ReleaseShards(), refused(what));
    std::unique_ptr<PsAdminClient> admin =
        PsAdminClient::Connect(server->address());
    EXPECT_THAT(admin->ReleaseShard("job-1", -1), refused("no token"));
    EXPECT_THAT(admin->GetShardStats("job-1", -1).status(),
                refused("no token"));
    EXPECT_THAT(admin->CreateShard(ShardRequest("job-1", 0, 1, kTotal, 1)),
                refused("no token"));
  }
  // Nothing changed: the shard is there, at step 1, and the owner goes on.
  ASSERT_EQ(server->service()->num_shards(), 1u);
  ASSERT_THAT(owner->PushPull(1, grads, absl::MakeSpan(params)), IsOk());
  EXPECT_EQ(params, std::vector<float>(kTotal, -2.0f));
  ASSERT_THAT(owner->ReleaseShards(), IsOk());
  EXPECT_EQ(server->service()->num_shards(), 0u);
}

TEST(PsTokenTest, BeforeTheKeyArrives_ShardCallsAreUnavailable) {
  std::unique_ptr<PsServer> server = StartGuardedServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<PsAdminClient> admin =
      PsAdminClient::Connect(server->address());
  EXPECT_THAT(admin->CreateShard(ShardRequest("job-1", 0, 1, kTotal, 1)),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("has not registered with its coordinator")));
  EXPECT_EQ(server->service()->num_shards(), 0u);
}

TEST(PsTokenTest, AnOpenServer_TakesCallsWithoutTokens) {
  std::unique_ptr<PsServer> server = ::gradsync::testing::StartServer();
  ASSERT_NE(server, nullptr);
  ASSERT_THAT(::gradsync::testing::CreateShards({server->address()}, "job-1",
                                                kTotal, 1),
              IsOk());
  std::unique_ptr<PsClient> client = Client("job-1", server->address(), "");
  std::vector<float> grads(kTotal, 1.0f), params(kTotal);
  EXPECT_THAT(client->PushPull(0, grads, absl::MakeSpan(params)), IsOk());
}

}  // namespace
}  // namespace gradsync
