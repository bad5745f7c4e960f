// Who may use a job's shards (docs/security.md), over real gRPC: a server
// that registers with a coordinator requires the job's token
// (PsTokenForJob(shard key, job)) on every call for the job's shards.
// Without it, or with another job's, CreateShard, PushPull, FetchState,
// SeedShard, GetShardStats and ReleaseShard(job, -1) are PERMISSION_DENIED
// and change nothing; before the key arrived they are UNAVAILABLE.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/secret.h"
#include "server/ps/client/ps_client.h"
#include "server/ps/daemon/ps_server.h"
#include "tests/ps/ps_grpc_test_util.h"
#include "tests/ps/ps_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::ShardRequest;
using ::gradsync::testing::ShardSnapshot;
using ::gradsync::testing::Snapshot;
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

// The same bits, not just equal values (0.0f == -0.0f, NaN != NaN).
bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool SameBits(const ShardSnapshot& a, const ShardSnapshot& b) {
  if (!(a == b) || !SameBits(a.state.params, b.state.params) ||
      a.state.optimizer.buffers.size() != b.state.optimizer.buffers.size()) {
    return false;
  }
  for (size_t i = 0; i < a.state.optimizer.buffers.size(); ++i) {
    if (!SameBits(a.state.optimizer.buffers[i], b.state.optimizer.buffers[i])) {
      return false;
    }
  }
  return true;
}

// SeedShard replaces a shard's parameters and its optimizer's state and
// step: the call an intruder would want most. Without the job's token, or
// with another's, it is refused and the shard stays bitwise as it was; the
// same state seeded with the job's token goes in, so the token alone kept
// it out.
TEST(PsTokenTest, WithoutTheJobsToken_SeedShardIsRefusedAndChangesNothing) {
  std::unique_ptr<PsServer> server = StartGuardedServer();
  ASSERT_NE(server, nullptr);
  const std::string key = RandomSecret();
  server->service()->SetShardKey(key);
  const std::string token = PsTokenForJob(key, "job-1");
  ps::CreateShardRequest create = ShardRequest("job-1", 0, 1, kTotal, 1);
  create.mutable_optimizer()->set_name("adam");
  create.mutable_optimizer()->set_learning_rate(0.01);
  create.set_token(token);
  ASSERT_THAT(PsAdminClient::Connect(server->address())->CreateShard(create),
              IsOk());
  // Two steps, so that Adam's buffers and step count are not the defaults.
  std::unique_ptr<PsClient> owner = Client("job-1", server->address(), token);
  std::vector<float> grads(kTotal), params(kTotal);
  for (size_t i = 0; i < kTotal; ++i) grads[i] = 0.001f * (i % 97) - 0.05f;
  for (int64_t step = 0; step < 2; ++step) {
    ASSERT_THAT(owner->PushPull(step, grads, absl::MakeSpan(params)), IsOk());
  }
  absl::StatusOr<std::shared_ptr<PsShard>> shard =
      server->service()->FindShard("job-1", 0);
  ASSERT_THAT(shard, IsOk());
  const ShardSnapshot before = Snapshot(**shard);
  ASSERT_EQ(before.state.step, 2);
  ASSERT_EQ(before.state.optimizer.buffers.size(), 2u);

  // A well-formed state at the shard's step, every value different.
  absl::StatusOr<ParameterState> forged = owner->FetchState();
  ASSERT_THAT(forged, IsOk());
  forged->params.assign(kTotal, 42.0f);
  for (std::vector<float>& buffer : forged->optimizer.buffers) {
    buffer.assign(kTotal, 7.0f);
  }
  forged->optimizer.step = 1000;

  for (const std::string& bad : {std::string(), PsTokenForJob(key, "job-2"),
                                 PsTokenForJob(RandomSecret(), "job-1")}) {
    const std::string what = bad.empty() ? "carries no token" : "not the job's";
    std::unique_ptr<PsClient> intruder =
        Client("job-1", server->address(), bad);
    EXPECT_THAT(intruder->SeedShards(*forged),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         AllOf(HasSubstr("job-1's shards"), HasSubstr(what))));
    EXPECT_TRUE(SameBits(Snapshot(**shard), before)) << what;
  }

  // The owner's seed of the same state is taken.
  ASSERT_THAT(owner->SeedShards(*forged), IsOk());
  const ShardSnapshot seeded = Snapshot(**shard);
  EXPECT_EQ(seeded.state.params, forged->params);
  EXPECT_EQ(seeded.state.optimizer.buffers, forged->optimizer.buffers);
  EXPECT_EQ(seeded.state.optimizer.step, 1000u);
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
