// The parameter server over real gRPC on 127.0.0.1:0: several clients and
// shards with chunk sizes that do not divide the shards, initialisation,
// errors as the client sees them (with the shard left unchanged), state
// hand-over for mode switches, and a large tensor.
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/model_init/mlp_layout.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "proto/ps.grpc.pb.h"
#include "server/ps/client/ps_admin_client.h"
#include "server/ps/client/ps_client.h"
#include "server/ps/daemon/ps_proto.h"
#include "server/ps/daemon/ps_server.h"
#include "server/ps/transport/shard_range.h"
#include "tests/ps/ps_grpc_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::CreateShards;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::MakeClient;
using ::gradsync::testing::ShardRequest;
using ::gradsync::testing::StartServer;
using ::gradsync::testing::StartServers;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(PsGrpcTest, PushPull_ThreeClientsTwoShardsOddChunks_ExactParameters) {
  constexpr int kWorkers = 3;
  constexpr size_t kTotal = 1001;    // shards of 501 and 500 elements
  constexpr size_t kChunk = 13 * 4;  // 13 floats: divides neither shard
  std::vector<std::unique_ptr<PsServer>> servers;
  std::vector<std::string> addresses;
  ASSERT_TRUE(StartServers(2, &servers, &addresses));
  ASSERT_THAT(CreateShards(addresses, "job", kTotal, kWorkers), IsOk());
  std::vector<std::vector<float>> results(kWorkers);
  std::vector<absl::Status> statuses(kWorkers);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorkers; ++r) {
    ranks.emplace_back([&, r]() {
      std::unique_ptr<PsClient> client =
          MakeClient("job", r, kTotal, addresses, kChunk);
      std::vector<float> grads(kTotal), params(kTotal);
      for (int64_t step = 0; step < 3 && statuses[r].ok(); ++step) {
        for (size_t i = 0; i < kTotal; ++i) {
          grads[i] = static_cast<float>(static_cast<int64_t>(i % 5) + 2 * r +
                                        1 - 3 * step);
        }
        statuses[r] = client->PushPull(step, grads, absl::MakeSpan(params));
      }
      results[r] = params;
      EXPECT_EQ(client->last_versions(), (std::vector<int64_t>{3, 3}));
      EXPECT_EQ(client->stats().bytes_sent, 3 * kTotal * sizeof(float));
      EXPECT_EQ(client->stats().bytes_received, 3 * kTotal * sizeof(float));
    });
  }
  for (auto& t : ranks) t.join();
  // Per step the mean gradient is (i % 5) + 3 - 3 step; over steps 0..2
  // the parameters fall by 3 (i % 5) + 9 - 9.
  for (int r = 0; r < kWorkers; ++r) {
    ASSERT_THAT(statuses[r], IsOk()) << "rank " << r;
    for (size_t i = 0; i < kTotal; ++i) {
      ASSERT_EQ(results[r][i], -3.0f * static_cast<float>(i % 5))
          << "rank " << r << " at index " << i;
    }
  }
  absl::StatusOr<std::vector<ps::ShardStats>> stats =
      PsAdminClient::Connect(addresses[1])->GetShardStats("job", -1);
  ASSERT_THAT(stats, IsOk());
  ASSERT_EQ(stats->size(), 1u);
  EXPECT_EQ((*stats)[0].updates(), 3);
  EXPECT_EQ((*stats)[0].pushes(), 9);
  EXPECT_EQ((*stats)[0].bytes_in(), 9 * 500 * 4);
  EXPECT_EQ((*stats)[0].bytes_out(), 9 * 500 * 4);
  EXPECT_EQ((*stats)[0].recent_pushes_size(), 9);
}

TEST(PsGrpcTest, CreateShard_MlpInit_ServesThatSliceOfTheInitialisation) {
  std::unique_ptr<PsServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  const std::vector<size_t> sizes = {20, 16, 5};
  absl::StatusOr<MlpLayout> layout = MlpLayout::Create(sizes);
  ASSERT_THAT(layout, IsOk());
  const size_t total = layout->num_parameters();
  std::vector<float> expected(total);
  ASSERT_THAT(InitializeParameters(*layout, 42, 0, absl::MakeSpan(expected)),
              IsOk());
  std::unique_ptr<PsAdminClient> admin =
      PsAdminClient::Connect(server->address());
  for (int k = 0; k < 3; ++k) {
    ps::CreateShardRequest request = ShardRequest("mlp", k, 3, total, 1);
    request.mutable_mlp()->set_seed(42);
    for (size_t w : sizes) request.mutable_mlp()->add_layer_sizes(w);
    ASSERT_THAT(admin->CreateShard(request), IsOk());
  }
  std::unique_ptr<PsClient> client =
      MakeClient("mlp", 0, total,
                 {server->address(), server->address(), server->address()}, 64);
  std::vector<float> params(total);
  ASSERT_THAT(client->Pull(0, absl::MakeSpan(params)), IsOk());
  EXPECT_EQ(params, expected);
}

// A client built from the generated protobuf classes (as a non-C++ peer
// would be) talks to the raw ByteBuffer service: the wire format is plain
// protobuf both ways.
TEST(PsGrpcTest, GeneratedProtobufStub_PushPullFetchState_Interoperate) {
  std::unique_ptr<PsServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  ASSERT_THAT(PsAdminClient::Connect(server->address())
                  ->CreateShard(ShardRequest("j", 0, 1, 10, 1)),
              IsOk());
  std::unique_ptr<ps::ParameterServer::Stub> stub =
      ps::ParameterServer::NewStub(grpc::CreateChannel(
          server->address(), grpc::InsecureChannelCredentials()));
  const std::vector<float> grads = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  auto bytes = [&](size_t begin, size_t end) {
    return std::string(reinterpret_cast<const char*>(grads.data() + begin),
                       (end - begin) * sizeof(float));
  };
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    auto stream = stub->PushPull(&context);
    ps::PushPullRequest first;  // the header and the first chunk together
    first.mutable_header()->set_job_id("j");
    first.mutable_header()->set_step(0);
    first.mutable_header()->set_chunk_bytes(12);
    first.set_data(bytes(0, 4));
    ps::PushPullRequest second;
    second.set_offset(4);
    second.set_data(bytes(4, 10));
    ASSERT_TRUE(stream->Write(first));
    ASSERT_TRUE(stream->Write(second));
    ASSERT_TRUE(stream->WritesDone());
    ps::PushPullResponse response;
    std::string params;
    int messages = 0;
    while (stream->Read(&response)) {
      if (messages++ == 0) {
        EXPECT_EQ(response.header().version(), 1);
        EXPECT_EQ(response.header().end(), 10);
      }
      EXPECT_EQ(response.offset() * 4, static_cast<int64_t>(params.size()));
      params += response.data();
    }
    ASSERT_TRUE(stream->Finish().ok());
    EXPECT_EQ(messages, 4);  // 3 floats per chunk
    ASSERT_EQ(params.size(), 40u);
    std::vector<float> got(10);
    std::memcpy(got.data(), params.data(), 40);
    EXPECT_EQ(got,
              (std::vector<float>{-1, -2, -3, -4, -5, -6, -7, -8, -9, -10}));
  }
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  ps::FetchStateRequest request;
  request.set_job_id("j");
  auto reader = stub->FetchState(&context, request);
  ps::FetchStateMessage message;
  ASSERT_TRUE(reader->Read(&message));
  EXPECT_EQ(message.header().step(), 1);
  EXPECT_EQ(message.header().optimizer(), "sgd");
  EXPECT_EQ(message.header().num_state_buffers(), 0);
  EXPECT_EQ(message.data().size(), 40u);
  EXPECT_FALSE(reader->Read(&message));
  EXPECT_TRUE(reader->Finish().ok());
}

TEST(PsGrpcTest, CreateShard_BadRequests_InvalidArgumentOrAlreadyExists) {
  std::unique_ptr<PsServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<PsAdminClient> admin =
      PsAdminClient::Connect(server->address());
  ps::CreateShardRequest unbalanced = ShardRequest("j", 0, 2, 100, 1);
  unbalanced.set_end(60);
  EXPECT_THAT(admin->CreateShard(unbalanced),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("balanced split")));
  ps::CreateShardRequest no_init = ShardRequest("j", 0, 2, 100, 1);
  no_init.clear_init();
  EXPECT_THAT(admin->CreateShard(no_init),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("init")));
  ps::CreateShardRequest bad_optimizer = ShardRequest("j", 0, 2, 100, 1);
  bad_optimizer.mutable_optimizer()->set_name("lion");
  EXPECT_THAT(admin->CreateShard(bad_optimizer),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lion")));
  ps::CreateShardRequest mlp = ShardRequest("j", 0, 2, 100, 1);
  mlp.mutable_mlp()->add_layer_sizes(3);
  mlp.mutable_mlp()->add_layer_sizes(4);
  EXPECT_THAT(
      admin->CreateShard(mlp),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("16 parameters")));
  EXPECT_EQ(server->service()->num_shards(), 0u);
  ASSERT_THAT(admin->CreateShard(ShardRequest("j", 0, 2, 100, 1)), IsOk());
  EXPECT_THAT(admin->CreateShard(ShardRequest("j", 0, 2, 100, 1)),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(admin->ReleaseShard("j", -1), IsOk());
  EXPECT_THAT(admin->ReleaseShard("j", -1),
              StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(admin->GetShardStats("j", 0),
              StatusIs(absl::StatusCode::kNotFound));
}

class PsGrpcErrorTest : public ::testing::Test {
 protected:
  static constexpr size_t kTotal = 101;
  void SetUp() override {
    server_ = StartServer();
    ASSERT_NE(server_, nullptr);
    admin_ = PsAdminClient::Connect(server_->address());
    ps::CreateShardRequest request = ShardRequest("job", 0, 1, kTotal, 2);
    request.set_mode(ps::UPDATE_MODE_ASYNC);
    ASSERT_THAT(admin_->CreateShard(request), IsOk());
    client_ = MakeClient("job", 0, kTotal, {server_->address()}, 40);
    ASSERT_THAT(client_->PushPull(0, grads_, absl::MakeSpan(params_)), IsOk());
    before_ = Stats();
  }

  ps::ShardStats Stats() {
    absl::StatusOr<std::vector<ps::ShardStats>> stats =
        admin_->GetShardStats("job", 0);
    EXPECT_THAT(stats, IsOk());
    ps::ShardStats s = stats.ok() ? (*stats)[0] : ps::ShardStats();
    s.clear_bytes_in();  // failed pushes still count their bytes
    return s;
  }
  void ExpectUnchanged() {
    EXPECT_EQ(Stats().SerializeAsString(), before_.SerializeAsString());
    std::vector<float> now(kTotal);
    ASSERT_THAT(client_->Pull(0, absl::MakeSpan(now)), IsOk());
    EXPECT_EQ(now, params_);
    before_ = Stats();  // the pull counted
  }

  std::unique_ptr<PsServer> server_;
  std::unique_ptr<PsAdminClient> admin_;
  std::unique_ptr<PsClient> client_;
  std::vector<float> grads_ = std::vector<float>(kTotal, 1.0f);
  std::vector<float> params_ = std::vector<float>(kTotal);
  ps::ShardStats before_;
};

TEST_F(PsGrpcErrorTest, PushPull_UnknownJobOrShard_NotFound) {
  std::unique_ptr<PsClient> other =
      MakeClient("other-job", 0, kTotal, {server_->address()});
  EXPECT_THAT(
      other->PushPull(1, grads_, absl::MakeSpan(params_)),
      StatusIs(absl::StatusCode::kNotFound,
               AllOf(HasSubstr("other-job"), HasSubstr(server_->address()))));
  ExpectUnchanged();
}

TEST_F(PsGrpcErrorTest, PushPull_RankNotInJob_PermissionDenied) {
  std::unique_ptr<PsClient> stranger =
      MakeClient("job", 2, kTotal, {server_->address()});
  EXPECT_THAT(stranger->PushPull(0, grads_, absl::MakeSpan(params_)),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("rank 2 is not in the job")));
  ExpectUnchanged();
}

TEST_F(PsGrpcErrorTest, PushPull_DuplicateOrUnknownStep_Refused) {
  EXPECT_THAT(client_->PushPull(0, grads_, absl::MakeSpan(params_)),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(client_->PushPull(7, grads_, absl::MakeSpan(params_)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("next step is 1")));
  ExpectUnchanged();
}

TEST_F(PsGrpcErrorTest, PushPull_WrongSize_InvalidArgument) {
  // A client that believes the vector is one element shorter.
  PsClientOptions options;
  absl::StatusOr<std::unique_ptr<PsClient>> short_client = PsClient::Create(
      "job", 0, kTotal - 1, {{server_->address(), 0, 0, kTotal - 1}}, options);
  ASSERT_THAT(short_client, IsOk());
  std::vector<float> g(kTotal - 1, 1.0f), p(kTotal - 1);
  EXPECT_THAT((*short_client)->PushPull(1, g, absl::MakeSpan(p)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("sizes do not match")));
  ExpectUnchanged();
  // And a well-sized push goes through afterwards.
  EXPECT_THAT(client_->PushPull(1, grads_, absl::MakeSpan(params_)), IsOk());
  EXPECT_EQ(params_[0], -2.0f);
}

TEST_F(PsGrpcErrorTest, PushPull_ShardReleasedWhileWaiting_Aborted) {
  ps::CreateShardRequest request = ShardRequest("sync", 0, 1, kTotal, 2);
  ASSERT_THAT(admin_->CreateShard(request), IsOk());
  std::unique_ptr<PsClient> rank0 =
      MakeClient("sync", 0, kTotal, {server_->address()});
  absl::Status waited;
  std::thread t(
      [&]() { waited = rank0->PushPull(0, grads_, absl::MakeSpan(params_)); });
  absl::SleepFor(absl::Milliseconds(200));
  ASSERT_THAT(admin_->ReleaseShard("sync", 0), IsOk());
  t.join();
  EXPECT_THAT(waited,
              StatusIs(absl::StatusCode::kAborted, HasSubstr("released")));
}

// The server gives up a little before the client's deadline, so that the
// client hears which rank it waited for, not only gRPC's "Deadline
// Exceeded".
TEST_F(PsGrpcErrorTest, PushPull_MissingRank_DeadlineExceededNamingIt) {
  ASSERT_THAT(admin_->CreateShard(ShardRequest("sync", 0, 1, kTotal, 2)),
              IsOk());
  std::unique_ptr<PsClient> rank0 =
      MakeClient("sync", 0, kTotal, {server_->address()}, kDefaultChunkBytes,
                 absl::Milliseconds(300));
  EXPECT_THAT(rank0->PushPull(0, grads_, absl::MakeSpan(params_)),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       AllOf(HasSubstr("ps shard 0"), HasSubstr("step 0"),
                             HasSubstr("ranks 1 have not pushed it"))));
}

TEST(PsGrpcStateTest, FetchStateSeedShards_RoundTripThroughShards) {
  constexpr size_t kTotal = 1000;
  std::unique_ptr<PsServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<PsAdminClient> admin =
      PsAdminClient::Connect(server->address());
  for (int k = 0; k < 2; ++k) {
    ps::CreateShardRequest request = ShardRequest("a", k, 2, kTotal, 1);
    request.mutable_optimizer()->set_name("momentum");
    request.mutable_optimizer()->set_learning_rate(0.1);
    ASSERT_THAT(admin->CreateShard(request), IsOk());
    request.set_job_id("b");
    request.set_seeded(true);
    ASSERT_THAT(admin->CreateShard(request), IsOk());
  }
  const std::vector<std::string> addresses = {server->address(),
                                              server->address()};
  std::unique_ptr<PsClient> a = MakeClient("a", 0, kTotal, addresses, 300);
  std::unique_ptr<PsClient> b = MakeClient("b", 0, kTotal, addresses, 300);
  std::vector<float> grads(kTotal), params(kTotal);
  for (size_t i = 0; i < kTotal; ++i) grads[i] = 0.25f * (i % 9);
  for (int64_t step = 0; step < 2; ++step) {
    ASSERT_THAT(a->PushPull(step, grads, absl::MakeSpan(params)), IsOk());
  }
  absl::StatusOr<ParameterState> state = a->FetchState();
  ASSERT_THAT(state, IsOk());
  EXPECT_EQ(state->step, 2);
  EXPECT_EQ(state->params, params);
  EXPECT_EQ(state->optimizer.kind, OptimizerKind::kMomentum);
  EXPECT_EQ(state->optimizer.step, 2u);
  ASSERT_EQ(state->optimizer.buffers.size(), 1u);
  EXPECT_EQ(state->optimizer.buffers[0][9], 0.25f * 0 * 0.9f + 0.25f * 0);
  EXPECT_EQ(state->optimizer.buffers[0][1], 0.25f * 0.9f + 0.25f);

  std::vector<float> unseeded(kTotal);
  EXPECT_THAT(
      b->Pull(2, absl::MakeSpan(unseeded)),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("SeedShard")));
  ASSERT_THAT(b->SeedShards(*state), IsOk());
  absl::StatusOr<ParameterState> back = b->FetchState();
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->step, 2);
  EXPECT_EQ(back->params, state->params);
  EXPECT_EQ(back->optimizer.buffers, state->optimizer.buffers);
  EXPECT_EQ(back->optimizer.step, 2u);
  // Both jobs then take the same step to the same parameters.
  std::vector<float> pa(kTotal), pb(kTotal);
  ASSERT_THAT(a->PushPull(2, grads, absl::MakeSpan(pa)), IsOk());
  ASSERT_THAT(b->PushPull(2, grads, absl::MakeSpan(pb)), IsOk());
  EXPECT_EQ(pa, pb);
}

TEST(PsGrpcLargeTest, PushPull_64MiBTensor_NoMessageLimitHit) {
  constexpr size_t kTotal = size_t{16} << 20;  // 64 MiB of floats
  std::unique_ptr<PsServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  ASSERT_THAT(PsAdminClient::Connect(server->address())
                  ->CreateShard(ShardRequest("big", 0, 1, kTotal, 1)),
              IsOk());
  std::vector<float> grads(kTotal, 1.0f), params(kTotal);
  for (size_t chunk : {kDefaultChunkBytes, kMaxChunkBytes}) {
    std::unique_ptr<PsClient> client =
        MakeClient("big", 0, kTotal, {server->address()}, chunk);
    const int64_t step = chunk == kDefaultChunkBytes ? 0 : 1;
    ASSERT_THAT(client->PushPull(step, grads, absl::MakeSpan(params)), IsOk())
        << chunk;
    const float expected = -1.0f - static_cast<float>(step);
    size_t wrong = 0;
    for (float p : params) wrong += p != expected;
    EXPECT_EQ(wrong, 0u) << "chunk " << chunk;
  }
}

}  // namespace
}  // namespace gradsync
