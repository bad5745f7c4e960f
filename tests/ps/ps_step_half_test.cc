// 16-bit gradients to the parameter server (CreateShardRequest.wire_dtype,
// PsClientOptions::wire_dtype) over both transports on 127.0.0.1: PsStep
// through partitions on two servers, gRPC streams and the tensor plane,
// bf16 and fp16: integer gradients give exact parameters, every rank and
// both transports get the same bits, and the bytes on the wire are 2 per
// element. A raw 16-bit stream: a chunk of an odd byte count, or of fp32
// size, is refused and changes nothing. A bad wire_dtype at CreateShard is
// INVALID_ARGUMENT and creates nothing; a client with another wire type
// is refused.
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collectives/half.h"
#include "common/status_macros.h"
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
using ::gradsync::testing::ShardRequest;
using ::gradsync::testing::StartPlaneServer;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

constexpr int kWorkers = 3;
constexpr size_t kTotal = 3001;              // odd
constexpr size_t kPartitionBytes = 512 * 4;  // several partitions a server
constexpr int64_t kSteps = 3;

std::string WireName(DataType type) {
  return type == DataType::kBFloat16 ? "bf16" : "fp16";
}

// Job `job`'s partitions on `addresses` (zeros, SGD at lr 1, the mean of
// the ranks' gradients), created with wire type `type`.
void CreatePartitions(const std::vector<std::string>& addresses,
                      const std::string& job, DataType type,
                      std::vector<PsShardLocation>* out) {
  absl::StatusOr<std::vector<PsShardLocation>> shards =
      PartitionedShardLocations(kTotal, addresses, kPartitionBytes);
  ASSERT_THAT(shards, IsOk());
  for (const PsShardLocation& l : *shards) {
    ps::CreateShardRequest request = ShardRequest(
        job, l.shard, static_cast<int>(shards->size()), kTotal, kWorkers);
    request.set_begin(static_cast<int64_t>(l.begin));
    request.set_end(static_cast<int64_t>(l.end));
    request.set_wire_dtype(WireName(type));
    ASSERT_THAT(PsAdminClient::Connect(l.address)->CreateShard(request),
                IsOk());
  }
  *out = *std::move(shards);
}

// Rank r's gradient of step t, (i % 7) + 3r - 2t: small integers, exact in
// both 16-bit types; ready in buckets of 97, end first.
[[nodiscard]] absl::StatusOr<PsStepResult> Step(PsClient& client, int rank,
                                                int64_t t,
                                                std::vector<float>& params) {
  std::vector<float> grads(kTotal);
  for (size_t i = 0; i < kTotal; ++i) {
    grads[i] =
        static_cast<float>(static_cast<int64_t>(i % 7) + 3 * rank - 2 * t);
  }
  PsStepControl control;
  control.late_scalars = 1;
  ASSIGN_OR_RETURN(
      std::unique_ptr<PsStep> step,
      client.StartStep(t, grads, absl::MakeSpan(params), std::move(control)));
  for (size_t end = kTotal; end > 0;) {
    const size_t begin = end > 97 ? end - 97 : 0;
    step->Ready(begin, end);
    end = begin;
  }
  step->SetScalars({rank + 0.5});
  return step->Finish(absl::Now() + absl::Seconds(30));
}

class PsStepHalfTest : public ::testing::TestWithParam<DataType> {};

TEST_P(PsStepHalfTest, BothTransports_ExactBitwiseEqualHalfTheBytes) {
  const DataType type = GetParam();
  std::vector<std::unique_ptr<PsServer>> servers;
  std::vector<std::string> addresses;
  for (int i = 0; i < 2; ++i) {
    servers.push_back(StartPlaneServer());
    ASSERT_NE(servers.back(), nullptr);
    addresses.push_back(servers.back()->address());
  }
  std::vector<PsShardLocation> plane_shards, grpc_shards;
  ASSERT_NO_FATAL_FAILURE(
      CreatePartitions(addresses, "plane", type, &plane_shards));
  ASSERT_NO_FATAL_FAILURE(
      CreatePartitions(addresses, "grpc", type, &grpc_shards));
  ASSERT_GT(plane_shards.size(), 2u);
  std::vector<std::vector<float>> plane(kWorkers), grpc(kWorkers);
  std::vector<absl::Status> status(kWorkers);
  std::vector<uint64_t> plane_sent(kWorkers), grpc_received(kWorkers);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorkers; ++r) {
    ranks.emplace_back([&, r] {
      auto client = [&](const std::string& job,
                        const std::vector<PsShardLocation>& shards,
                        bool tensor_plane) -> std::unique_ptr<PsClient> {
        PsClientOptions options;
        options.chunk_bytes = 13 * 4;  // 26 16-bit elements a chunk
        options.timeout = absl::Seconds(30);
        options.tensor_plane = tensor_plane;
        options.wire_dtype = type;
        absl::StatusOr<std::unique_ptr<PsClient>> c =
            PsClient::Create(job, r, kTotal, shards, options);
        if (!c.ok()) status[r] = c.status();
        return c.ok() ? *std::move(c) : nullptr;
      };
      std::unique_ptr<PsClient> a = client("plane", plane_shards, true);
      std::unique_ptr<PsClient> b = client("grpc", grpc_shards, false);
      if (a == nullptr || b == nullptr) return;
      plane[r].assign(kTotal, 0);
      grpc[r].assign(kTotal, 0);
      for (int64_t t = 0; t < kSteps && status[r].ok(); ++t) {
        absl::StatusOr<PsStepResult> x = Step(*a, r, t, plane[r]);
        absl::StatusOr<PsStepResult> y = Step(*b, r, t, grpc[r]);
        if (!x.ok() || !y.ok()) {
          status[r] = !x.ok() ? x.status() : y.status();
          return;
        }
        plane_sent[r] += x->bytes_sent;
        grpc_received[r] += y->bytes_received;
      }
      if (a->transport() != "plane" || b->transport() != "grpc") {
        status[r] = absl::InternalError(absl::StrCat(
            "transports ", a->transport(), " and ", b->transport()));
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  // The mean over the ranks of (i % 7) + 3r - 2t is (i % 7) + 3 - 2t;
  // SGD at lr 1 from zeros over steps 0, 1, 2: -(3 (i % 7) + 3).
  for (int r = 0; r < kWorkers; ++r) {
    ASSERT_THAT(status[r], IsOk()) << "rank " << r;
    for (size_t i = 0; i < kTotal; ++i) {
      const float want = -static_cast<float>(3 * (i % 7) + 3);
      ASSERT_EQ(want, plane[r][i]) << "plane, rank " << r << ", index " << i;
      ASSERT_EQ(want, grpc[r][i]) << "grpc, rank " << r << ", index " << i;
    }
    EXPECT_EQ(
        std::memcmp(plane[r].data(), plane[0].data(), kTotal * sizeof(float)),
        0)
        << "rank " << r;
    EXPECT_EQ(plane_sent[r], kTotal * kSteps * 2) << "rank " << r;
    EXPECT_EQ(grpc_received[r], kTotal * kSteps * 2) << "rank " << r;
  }
}

// The pulled parameters are rounded once on the shard: a mean of 1/3 is
// no 16-bit value, and every rank gets the same rounding of the fp32
// result, over either transport.
TEST_P(PsStepHalfTest, InexactMean_EveryRankGetsTheShardsRounding) {
  const DataType type = GetParam();
  std::unique_ptr<PsServer> server = StartPlaneServer();
  ASSERT_NE(server, nullptr);
  constexpr size_t kN = 5;
  ps::CreateShardRequest request = ShardRequest("third", 0, 1, kN, kWorkers);
  request.set_wire_dtype(WireName(type));
  ASSERT_THAT(PsAdminClient::Connect(server->address())->CreateShard(request),
              IsOk());
  const std::vector<PsShardLocation> shards = {{server->address(), 0, 0, kN}};
  std::vector<std::vector<float>> params(kWorkers);
  std::vector<absl::Status> status(kWorkers);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorkers; ++r) {
    ranks.emplace_back([&, r] {
      PsClientOptions options;
      options.timeout = absl::Seconds(30);
      options.tensor_plane = r % 2 == 0;  // ranks 0, 2: plane; 1: gRPC
      options.wire_dtype = type;
      absl::StatusOr<std::unique_ptr<PsClient>> client =
          PsClient::Create("third", r, kN, shards, options);
      if (!client.ok()) {
        status[r] = client.status();
        return;
      }
      // Rank 0 pushes -1, the others 0: the mean is -1/3.
      std::vector<float> grads(kN, r == 0 ? -1.0f : 0.0f);
      params[r].assign(kN, 0);
      absl::StatusOr<std::unique_ptr<PsStep>> step = (*client)->StartStep(
          0, grads, absl::MakeSpan(params[r]), PsStepControl());
      if (!step.ok()) {
        status[r] = step.status();
        return;
      }
      (*step)->Ready(0, kN);
      status[r] = (*step)->Finish(absl::Now() + absl::Seconds(30)).status();
    });
  }
  for (std::thread& t : ranks) t.join();
  const float third = 1.0f / 3.0f;
  const float want = type == DataType::kBFloat16
                         ? BFloat16ToFloat(FloatToBFloat16(third))
                         : Float16ToFloat(FloatToFloat16(third));
  ASSERT_NE(want, third);
  for (int r = 0; r < kWorkers; ++r) {
    ASSERT_THAT(status[r], IsOk()) << "rank " << r;
    EXPECT_EQ(params[r], std::vector<float>(kN, want)) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(WireTypes, PsStepHalfTest,
                         ::testing::Values(DataType::kBFloat16,
                                           DataType::kFloat16),
                         [](const ::testing::TestParamInfo<DataType>& info) {
                           return WireName(info.param);
                         });

// A raw PushPull stream to a bf16 shard of 10 elements (one worker, SGD at
// lr 1): malformed chunks are refused and leave the shard as it was.
class PsHalfStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = testing::StartServer();
    ASSERT_NE(server_, nullptr);
    ps::CreateShardRequest request = ShardRequest("h", 0, 1, 10, 1);
    request.set_wire_dtype("bf16");
    ASSERT_THAT(
        PsAdminClient::Connect(server_->address())->CreateShard(request),
        IsOk());
    stub_ = ps::ParameterServer::NewStub(grpc::CreateChannel(
        server_->address(), grpc::InsecureChannelCredentials()));
  }

  // Step 0's push of `chunks` (offset, bytes); the reply's bytes.
  grpc::Status Run(const std::vector<std::pair<int64_t, std::string>>& chunks,
                   std::string* reply = nullptr) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
    auto stream = stub_->PushPull(&context);
    ps::PushPullRequest first;
    first.mutable_header()->set_job_id("h");
    first.mutable_header()->set_step(0);
    bool open = stream->Write(first);
    for (const auto& [offset, bytes] : chunks) {
      ps::PushPullRequest m;
      m.set_offset(offset);
      m.set_data(bytes);
      if (open) open = stream->Write(m);
    }
    stream->WritesDone();
    ps::PushPullResponse response;
    while (stream->Read(&response)) {
      if (reply != nullptr) *reply += response.data();
    }
    return stream->Finish();
  }

  // bf16 values 1, 2, ..., of elements [begin, end).
  static std::string Bf16(size_t begin, size_t end) {
    std::string out;
    for (size_t i = begin; i < end; ++i) {
      const uint16_t h = FloatToBFloat16(1.0f + static_cast<float>(i));
      out.append(reinterpret_cast<const char*>(&h), sizeof(h));
    }
    return out;
  }

  std::unique_ptr<PsServer> server_;
  std::unique_ptr<ps::ParameterServer::Stub> stub_;
};

TEST_F(PsHalfStreamTest, OddByteChunkOrFp32Size_RefusedShardUnchanged) {
  grpc::Status status = Run({{0, Bf16(0, 10).substr(0, 7)}});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("not whole bf16 values"));
  // 40 bytes: fp32's size of the shard, 20 bf16 elements for 10.
  status = Run({{0, std::string(40, '\0')}});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("outside the shard's 10"));
  // Unchanged: step 0 goes through now, in two chunks, and the reply is
  // exactly -g in bf16, 20 bytes.
  std::string reply;
  status = Run({{0, Bf16(0, 4)}, {4, Bf16(4, 10)}}, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(reply.size(), 20u);
  for (size_t i = 0; i < 10; ++i) {
    uint16_t h;
    std::memcpy(&h, reply.data() + 2 * i, 2);
    EXPECT_EQ(BFloat16ToFloat(h), -1.0f - static_cast<float>(i)) << i;
  }
}

TEST(PsHalfCreateTest, BadWireDtype_InvalidArgumentNothingCreated) {
  std::unique_ptr<PsServer> server = testing::StartServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<PsAdminClient> admin =
      PsAdminClient::Connect(server->address());
  ps::CreateShardRequest request = ShardRequest("w", 0, 1, 10, 1);
  request.set_wire_dtype("fp8");
  EXPECT_THAT(admin->CreateShard(request),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("wire_dtype is 'fp8'")));
  EXPECT_THAT(admin->GetShardStats("w", -1),
              StatusIs(absl::StatusCode::kNotFound));
  // The same shard with a good type is created (nothing was left behind).
  request.set_wire_dtype("fp16");
  EXPECT_THAT(admin->CreateShard(request), IsOk());
}

TEST(PsHalfCreateTest, ClientWireTypeNotFp32Bf16Fp16_InvalidArgument) {
  PsClientOptions options;
  options.wire_dtype = DataType::kInt32;
  EXPECT_THAT(
      PsClient::Create("w", 0, 10, {{"127.0.0.1:1", 0, 0, 10}}, options),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("gradient wire type is int32")));
}

}  // namespace
}  // namespace gradsync
