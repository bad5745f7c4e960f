// The PS training path's additions over real gRPC: descending gradient
// chunks on the wire (and the gaps, overlaps and ranges they must not
// have), sum_gradients from CreateShard, FetchState at a switch step (the
// async drain), CreateAndSeedShard and ReleaseShards.
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/grpc_status.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/ps.grpc.pb.h"
#include "server/ps/client/ps_admin_client.h"
#include "server/ps/client/ps_client.h"
#include "server/ps/daemon/ps_server.h"
#include "tests/ps/ps_grpc_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::MakeClient;
using ::gradsync::testing::ShardRequest;
using ::gradsync::testing::StartServer;
using ::gradsync::testing::StartServers;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// One chunk of a hand-made PushPull stream: elements [begin, end) of the
// gradient, sent at element offset `begin`.
struct Chunk {
  int64_t begin;
  int64_t end;
};

// Sends rank 0's gradient `grads` for step 0 of job "j" as a descending
// push in `chunks` with the generated stub; returns the call's status and
// the parameters it got back.
[[nodiscard]] absl::Status PushChunks(const std::string& address,
                                      const std::vector<float>& grads,
                                      const std::vector<Chunk>& chunks,
                                      std::vector<float>* params) {
  std::unique_ptr<ps::ParameterServer::Stub> stub =
      ps::ParameterServer::NewStub(
          grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  auto stream = stub->PushPull(&context);
  ps::PushPullRequest header;
  header.mutable_header()->set_job_id("j");
  header.mutable_header()->set_descending(true);
  bool open = stream->Write(header);
  for (const Chunk& c : chunks) {
    if (!open) break;
    std::vector<float> data;  // zeros past the gradient's end
    for (int64_t i = c.begin; i < c.end; ++i) {
      data.push_back(i < static_cast<int64_t>(grads.size()) ? grads[i] : 0);
    }
    ps::PushPullRequest message;
    message.set_offset(c.begin);
    message.set_data(std::string(reinterpret_cast<const char*>(data.data()),
                                 data.size() * sizeof(float)));
    open = stream->Write(message);
  }
  if (open) stream->WritesDone();
  ps::PushPullResponse response;
  std::string bytes;
  while (stream->Read(&response)) bytes += response.data();
  params->assign(bytes.size() / sizeof(float), 0.0f);
  std::memcpy(params->data(), bytes.data(), bytes.size());
  return FromGrpcStatus(stream->Finish());
}

TEST(PsGrpcControlTest, DescendingChunks_AcceptedOrRefusedUnchanged) {
  std::unique_ptr<PsServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  ASSERT_THAT(PsAdminClient::Connect(server->address())
                  ->CreateShard(ShardRequest("j", 0, 1, 10, 1)),
              IsOk());
  const std::vector<float> grads = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  std::vector<float> params;
  struct Bad {
    std::vector<Chunk> chunks;
    const char* why;
  };
  const std::vector<Bad> bad = {
      {{{7, 10}, {2, 6}, {0, 2}}, "gap"},
      {{{7, 10}, {3, 8}, {0, 3}}, "overlap"},
      {{{8, 11}, {0, 8}}, "outside"},
      {{{0, 3}, {3, 10}}, "ascending order"},
      {{{7, 10}, {0, 7}, {0, 1}}, "more data"},
  };
  for (const Bad& b : bad) {
    EXPECT_THAT(PushChunks(server->address(), grads, b.chunks, &params),
                StatusIs(absl::StatusCode::kInvalidArgument))
        << b.why;
    absl::StatusOr<std::vector<ps::ShardStats>> stats =
        PsAdminClient::Connect(server->address())->GetShardStats("j", 0);
    ASSERT_THAT(stats, IsOk());
    EXPECT_EQ((*stats)[0].pushes(), 0) << b.why;
    EXPECT_EQ((*stats)[0].version(), 0) << b.why;
  }
  ASSERT_THAT(
      PushChunks(server->address(), grads, {{9, 10}, {4, 9}, {0, 4}}, &params),
      IsOk());
  EXPECT_EQ(params,
            (std::vector<float>{-1, -2, -3, -4, -5, -6, -7, -8, -9, -10}));
}

TEST(PsGrpcControlTest, CreateShard_SumGradients_AppliesTheSum) {
  std::unique_ptr<PsServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  ps::CreateShardRequest request = ShardRequest("sum", 0, 1, 4, 2);
  request.set_sum_gradients(true);
  ASSERT_THAT(PsAdminClient::Connect(server->address())->CreateShard(request),
              IsOk());
  std::vector<absl::Status> statuses(2);
  std::vector<std::vector<float>> params(2, std::vector<float>(4));
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r]() {
      std::unique_ptr<PsClient> client =
          MakeClient("sum", r, 4, {server->address()});
      std::vector<float> grads(4, static_cast<float>(r + 1));
      statuses[r] = client->PushPull(0, grads, absl::MakeSpan(params[r]));
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_THAT(statuses[r], IsOk());
    EXPECT_EQ(params[r], std::vector<float>(4, -3.0f));
  }
}

TEST(PsGrpcControlTest, FetchStateAtStep_AsyncDrainsSyncMustBeThere) {
  constexpr size_t kTotal = 100;
  std::unique_ptr<PsServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  const std::vector<std::string> addresses = {server->address(),
                                              server->address()};
  std::unique_ptr<PsAdminClient> admin =
      PsAdminClient::Connect(server->address());
  for (int k = 0; k < 2; ++k) {
    ps::CreateShardRequest request = ShardRequest("async", k, 2, kTotal, 2);
    request.set_mode(ps::UPDATE_MODE_ASYNC);
    ASSERT_THAT(admin->CreateShard(request), IsOk());
    ASSERT_THAT(admin->CreateShard(ShardRequest("sync", k, 2, kTotal, 1)),
                IsOk());
  }
  std::unique_ptr<PsClient> rank0 = MakeClient("async", 0, kTotal, addresses);
  std::unique_ptr<PsClient> rank1 = MakeClient("async", 1, kTotal, addresses);
  std::vector<float> grads(kTotal, 1.0f), params(kTotal);
  for (int64_t t = 0; t < 2; ++t) {
    ASSERT_THAT(rank0->PushPull(t, grads, absl::MakeSpan(params)), IsOk());
  }
  absl::StatusOr<ParameterState> state;
  std::thread fetcher([&]() { state = rank0->FetchState(2); });
  absl::SleepFor(absl::Milliseconds(100));
  for (int64_t t = 0; t < 2; ++t) {
    ASSERT_THAT(rank1->PushPull(t, grads, absl::MakeSpan(params)), IsOk());
  }
  fetcher.join();
  ASSERT_THAT(state, IsOk());
  EXPECT_EQ(state->step, 2);
  EXPECT_EQ(state->params, std::vector<float>(kTotal, -4.0f));

  std::unique_ptr<PsClient> sync = MakeClient("sync", 0, kTotal, addresses);
  ASSERT_THAT(sync->PushPull(0, grads, absl::MakeSpan(params)), IsOk());
  EXPECT_THAT(sync->FetchState(2),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("ps shard 0 at "),
                             HasSubstr("the shard is at step 1"))));
  absl::StatusOr<ParameterState> at_one = sync->FetchState(1);
  ASSERT_THAT(at_one, IsOk());
  EXPECT_EQ(at_one->step, 1);
  EXPECT_THAT(sync->FetchState(-1),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// A rank cancelled while its FetchState waits for a rank that never
// pushes (an async drain before a switch) returns at once with the
// reason, not at the call's deadline; later calls fail the same way,
// without an RPC; the server is unharmed.
TEST(PsGrpcControlTest, Cancel_StopsAWaitingFetchStateAndLaterCalls) {
  constexpr size_t kTotal = 64;
  std::unique_ptr<PsServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  const std::vector<std::string> addresses = {server->address()};
  ps::CreateShardRequest request = ShardRequest("drain", 0, 1, kTotal, 2);
  request.set_mode(ps::UPDATE_MODE_ASYNC);
  ASSERT_THAT(PsAdminClient::Connect(server->address())->CreateShard(request),
              IsOk());
  std::unique_ptr<PsClient> rank0 = MakeClient("drain", 0, kTotal, addresses);
  std::unique_ptr<PsClient> rank1 = MakeClient("drain", 1, kTotal, addresses);
  std::vector<float> grads(kTotal, 1.0f), params(kTotal);
  ASSERT_THAT(rank0->PushPull(0, grads, absl::MakeSpan(params)), IsOk());
  absl::StatusOr<ParameterState> state;
  absl::Time returned;
  std::thread fetcher([&]() {
    state = rank0->FetchState(1);  // waits for rank 1's push of step 0
    returned = absl::Now();
  });
  absl::SleepFor(absl::Milliseconds(300));
  const absl::Time cancelled = absl::Now();
  rank0->Cancel(absl::CancelledError("job-9 was cancelled"));
  fetcher.join();
  EXPECT_THAT(state, StatusIs(absl::StatusCode::kCancelled,
                              HasSubstr("job-9 was cancelled")));
  EXPECT_LT(returned - cancelled, absl::Seconds(2));
  EXPECT_THAT(
      rank0->Pull(1, absl::MakeSpan(params)),
      StatusIs(absl::StatusCode::kCancelled, HasSubstr("job-9 was cancelled")));
  EXPECT_THAT(rank1->PushPull(0, grads, absl::MakeSpan(params)), IsOk());
}

TEST(PsGrpcControlTest, CreateAndSeedShard_ThenTrain_ThenReleaseShards) {
  constexpr size_t kTotal = 301;
  std::vector<std::unique_ptr<PsServer>> servers;
  std::vector<std::string> addresses;
  ASSERT_TRUE(StartServers(2, &servers, &addresses));
  // The ranks' state at step 5: momentum SGD.
  ParameterState state;
  state.step = 5;
  state.params.resize(kTotal);
  state.optimizer.kind = OptimizerKind::kMomentum;
  state.optimizer.step = 5;
  state.optimizer.size = kTotal;
  state.optimizer.buffers.assign(1, std::vector<float>(kTotal));
  for (size_t i = 0; i < kTotal; ++i) {
    state.params[i] = static_cast<float>(i);
    state.optimizer.buffers[0][i] = 0.5f * static_cast<float>(i % 3);
  }
  ps::CreateShardRequest base;
  base.set_num_workers(1);
  base.mutable_optimizer()->set_name("momentum");
  base.mutable_optimizer()->set_learning_rate(0.1);
  std::unique_ptr<PsClient> client =
      MakeClient("seeded", 0, kTotal, addresses, 256);
  EXPECT_THAT(client->CreateAndSeedShard(2, base, state),
              StatusIs(absl::StatusCode::kInvalidArgument));
  for (size_t k = 0; k < 2; ++k) {
    ASSERT_THAT(client->CreateAndSeedShard(k, base, state), IsOk());
  }
  EXPECT_THAT(
      client->CreateAndSeedShard(1, base, state),
      StatusIs(absl::StatusCode::kAlreadyExists,
               HasSubstr(absl::StrCat("ps shard 1 at ", addresses[1]))));
  absl::StatusOr<ParameterState> back = client->FetchState();
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->step, 5);
  EXPECT_EQ(back->params, state.params);
  EXPECT_EQ(back->optimizer.buffers, state.optimizer.buffers);
  EXPECT_EQ(back->optimizer.step, 5u);
  std::vector<float> grads(kTotal, 1.0f), params(kTotal);
  ASSERT_THAT(client->PushPull(5, grads, absl::MakeSpan(params)), IsOk());

  ASSERT_THAT(client->ReleaseShards(), IsOk());
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_THAT(
        PsAdminClient::Connect(addresses[k])->GetShardStats("seeded", -1),
        StatusIs(absl::StatusCode::kNotFound));
  }
  EXPECT_THAT(client->ReleaseShards(), IsOk());  // nothing left: fine

  // A seed the shard refuses (the optimizer differs) leaves no shard.
  ps::CreateShardRequest adam = base;
  adam.mutable_optimizer()->set_name("adam");
  EXPECT_THAT(
      client->CreateAndSeedShard(0, adam, state),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr(absl::StrCat("ps shard 0 at ", addresses[0]))));
  EXPECT_THAT(PsAdminClient::Connect(addresses[0])->GetShardStats("seeded", -1),
              StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace gradsync
