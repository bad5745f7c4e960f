// PsShard with a 16-bit gradient wire (PsShardConfig::wire_dtype bf16 and
// fp16), with plain calls: pushes of small integers (exact in 16 bits)
// summed exactly in fp32 in rank order, pulls rounded once to the wire type
// and bitwise the same for every rank, fp32 master parameters kept between
// steps, fp16's clamp at 65504, elements split between a push's pieces,
// async mode, fp32 state, and a bad wire type refused.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "collectives/half.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/shard/ps_shard.h"
#include "tests/ps/ps_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::MakeShard;
using ::gradsync::testing::ShardConfig;
using ::gradsync::testing::Soon;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

uint16_t ToWire(DataType type, float v) {
  return type == DataType::kBFloat16 ? FloatToBFloat16(v) : FloatToFloat16(v);
}

float FromWire(DataType type, uint16_t h) {
  return type == DataType::kBFloat16 ? BFloat16ToFloat(h) : Float16ToFloat(h);
}

std::vector<uint16_t> ToWire(DataType type, const std::vector<float>& v) {
  std::vector<uint16_t> out;
  for (float x : v) out.push_back(ToWire(type, x));
  return out;
}

// BeginPush + Append of `grads` (16-bit elements) in pieces of
// `piece_bytes` bytes (odd sizes split elements between pieces), then
// Commit.
[[nodiscard]] absl::Status PushWire(PsShard& shard, int rank, int64_t step,
                                    const std::vector<uint16_t>& grads,
                                    size_t piece_bytes = 6) {
  absl::StatusOr<PsShard::Push> push = shard.BeginPush(rank, step, Soon());
  if (!push.ok()) return push.status();
  const char* bytes = reinterpret_cast<const char*>(grads.data());
  const size_t total = grads.size() * sizeof(uint16_t);
  for (size_t at = 0; at < total; at += piece_bytes) {
    const size_t n = std::min(piece_bytes, total - at);
    absl::Status status = push->Append(absl::MakeConstSpan(bytes + at, n));
    if (!status.ok()) return status;
  }
  return shard.Commit(std::move(*push), Soon());
}

// The bytes rank `rank`'s pull of `step` sends.
[[nodiscard]] absl::StatusOr<std::string> PullWireBytes(PsShard& shard,
                                                        int rank,
                                                        int64_t step) {
  absl::StatusOr<ShardViewRef> view = shard.Pull(rank, step, Soon());
  if (!view.ok()) return view.status();
  const absl::Span<const char> bytes = (*view)->PullBytes();
  return std::string(bytes.data(), bytes.size());
}

std::vector<float> Decode(DataType type, const std::string& bytes) {
  std::vector<float> out(bytes.size() / sizeof(uint16_t));
  for (size_t i = 0; i < out.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + i * sizeof(h), sizeof(h));
    out[i] = FromWire(type, h);
  }
  return out;
}

class PsShardHalfTest : public ::testing::TestWithParam<DataType> {};

// Rank r's gradient at step t: (i % 7) - 3 + r - t, small integers that
// both 16-bit types hold exactly. SGD at lr 1 on integer parameters keeps
// every value an integer well inside both types' exact range.
TEST_P(PsShardHalfTest, Sync_IntegerGradients_ExactAndBitwiseEqualPulls) {
  const DataType type = GetParam();
  constexpr int kWorkers = 4;
  constexpr size_t kSize = 1001;  // odd
  PsShardConfig config = ShardConfig(kWorkers, 0, kSize);
  config.wire_dtype = type;
  config.sum_gradients = true;
  std::vector<float> expected(kSize);
  for (size_t i = 0; i < kSize; ++i) {
    expected[i] = static_cast<float>(static_cast<int>(i % 11) - 5);
  }
  std::shared_ptr<PsShard> shard = MakeShard(config, expected);
  ASSERT_NE(shard, nullptr);
  for (int64_t step = 0; step < 3; ++step) {
    // Ranks push in reverse order; pieces of 3 bytes split every other
    // element between two pieces.
    for (int r = kWorkers - 1; r >= 0; --r) {
      std::vector<float> g(kSize);
      for (size_t i = 0; i < kSize; ++i) {
        g[i] = static_cast<float>(static_cast<int>(i % 7) - 3 + r -
                                  static_cast<int>(step));
      }
      ASSERT_THAT(PushWire(*shard, r, step, ToWire(type, g), 3 + 2 * r),
                  IsOk());
      for (size_t i = 0; i < kSize; ++i) expected[i] -= g[i];
    }
    std::string first;
    for (int r = 0; r < kWorkers; ++r) {
      absl::StatusOr<std::string> bytes = PullWireBytes(*shard, r, step + 1);
      ASSERT_THAT(bytes, IsOk());
      ASSERT_EQ(bytes->size(), kSize * sizeof(uint16_t));
      if (r == 0) {
        first = *bytes;
        const std::vector<float> got = Decode(type, *bytes);
        for (size_t i = 0; i < kSize; ++i) {
          ASSERT_EQ(expected[i], got[i])
              << "at index " << i << ", step " << step;
        }
      } else {
        ASSERT_EQ(first, *bytes) << "rank " << r << " got other bits than "
                                 << "rank 0 at step " << step;
      }
    }
  }
}

// The shard keeps fp32 master parameters: 256 + 1 is not a bf16 (it pulls
// as 256, ties to even), but the next + 1 makes 258, which is. A shard
// that kept only the rounded values would pull 256 twice.
TEST(PsShardHalfOneTypeTest, Sync_Bf16_RoundsPullsOnceKeepsFp32Master) {
  PsShardConfig config = ShardConfig(1, 0, 3);
  config.wire_dtype = DataType::kBFloat16;
  std::shared_ptr<PsShard> shard =
      MakeShard(config, std::vector<float>{256, 256, 256});
  ASSERT_NE(shard, nullptr);
  const std::vector<uint16_t> minus_one(3, FloatToBFloat16(-1.0f));
  ASSERT_THAT(PushWire(*shard, 0, 0, minus_one), IsOk());
  absl::StatusOr<std::string> bytes = PullWireBytes(*shard, 0, 1);
  ASSERT_THAT(bytes, IsOk());
  EXPECT_EQ(Decode(DataType::kBFloat16, *bytes),
            (std::vector<float>{256, 256, 256}));
  ASSERT_THAT(PushWire(*shard, 0, 1, minus_one), IsOk());
  bytes = PullWireBytes(*shard, 0, 2);
  ASSERT_THAT(bytes, IsOk());
  EXPECT_EQ(Decode(DataType::kBFloat16, *bytes),
            (std::vector<float>{258, 258, 258}));
  // The state (a switch, a checkpoint) is the fp32 master.
  absl::StatusOr<ParameterState> state = shard->ExportState(Soon());
  ASSERT_THAT(state, IsOk());
  EXPECT_EQ(state->params, (std::vector<float>{258, 258, 258}));
}

// fp16 clamps a finite parameter beyond 65504 to 65504 on the wire, while
// the master keeps the exact value.
TEST(PsShardHalfOneTypeTest, Sync_Fp16_ClampsPulledParametersAt65504) {
  PsShardConfig config = ShardConfig(2, 0, 2);
  config.wire_dtype = DataType::kFloat16;
  config.sum_gradients = true;
  std::shared_ptr<PsShard> shard =
      MakeShard(config, std::vector<float>{65000, -65000});
  ASSERT_NE(shard, nullptr);
  const std::vector<uint16_t> g = {FloatToFloat16(-512), FloatToFloat16(512)};
  ASSERT_THAT(PushWire(*shard, 0, 0, g), IsOk());
  ASSERT_THAT(PushWire(*shard, 1, 0, g), IsOk());
  absl::StatusOr<std::string> bytes = PullWireBytes(*shard, 1, 1);
  ASSERT_THAT(bytes, IsOk());
  EXPECT_EQ(Decode(DataType::kFloat16, *bytes),
            (std::vector<float>{65504, -65504}));
  absl::StatusOr<ParameterState> state = shard->ExportState(Soon());
  ASSERT_THAT(state, IsOk());
  EXPECT_EQ(state->params, (std::vector<float>{66024, -66024}));
}

// Async: each push is widened in the staging buffer and applied at once.
TEST_P(PsShardHalfTest, Async_IntegerGradients_Exact) {
  const DataType type = GetParam();
  constexpr size_t kSize = 257;
  PsShardConfig config = ShardConfig(2, 0, kSize, UpdateMode::kAsync);
  config.wire_dtype = type;
  std::vector<float> expected(kSize, 100.0f);
  std::shared_ptr<PsShard> shard = MakeShard(config, expected);
  ASSERT_NE(shard, nullptr);
  for (int r = 0; r < 2; ++r) {
    std::vector<float> g(kSize);
    for (size_t i = 0; i < kSize; ++i) {
      g[i] = static_cast<float>(static_cast<int>(i % 9) - 4 + r);
      expected[i] -= g[i];
    }
    ASSERT_THAT(PushWire(*shard, r, 0, ToWire(type, g), 5), IsOk());
  }
  absl::StatusOr<std::string> bytes = PullWireBytes(*shard, 0, 1);
  ASSERT_THAT(bytes, IsOk());
  EXPECT_EQ(Decode(type, *bytes), expected);
}

// A push of a 16-bit job is size * 2 bytes: one byte more is refused, one
// byte less does not commit, and neither changes the shard.
TEST_P(PsShardHalfTest, Push_WrongByteCount_RefusedShardUnchanged) {
  const DataType type = GetParam();
  PsShardConfig config = ShardConfig(1, 0, 5);
  config.wire_dtype = type;
  std::shared_ptr<PsShard> shard = MakeShard(config, std::vector<float>(5, 1));
  ASSERT_NE(shard, nullptr);
  const std::vector<char> eleven(11, 0);
  {
    absl::StatusOr<PsShard::Push> push = shard->BeginPush(0, 0, Soon());
    ASSERT_THAT(push, IsOk());
    EXPECT_EQ(push->size_bytes(), 10u);
    EXPECT_THAT(push->Append(eleven),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("more than its gradient")));
  }
  {
    absl::StatusOr<PsShard::Push> push = shard->BeginPush(0, 0, Soon());
    ASSERT_THAT(push, IsOk());
    ASSERT_THAT(push->Append(absl::MakeConstSpan(eleven).subspan(0, 9)),
                IsOk());
    EXPECT_THAT(
        shard->Commit(std::move(*push), Soon()),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("incomplete")));
  }
  EXPECT_EQ(shard->Stats().version, 0);
  absl::StatusOr<ParameterState> state = shard->ExportState(Soon());
  ASSERT_THAT(state, IsOk());
  EXPECT_EQ(state->params, std::vector<float>(5, 1));
}

// A seed (ring -> PS switch) is fp32, and the next pull is it rounded.
TEST_P(PsShardHalfTest, ImportState_Fp32Seed_PullRoundsIt) {
  const DataType type = GetParam();
  PsShardConfig config = ShardConfig(1, 0, 2);
  config.wire_dtype = type;
  std::shared_ptr<PsShard> shard = MakeShard(config, std::vector<float>(2, 0));
  ASSERT_NE(shard, nullptr);
  ParameterState seed;
  seed.step = 7;
  seed.params = {1.0f / 3.0f, 3.0f};
  seed.optimizer.kind = OptimizerKind::kSgd;
  seed.optimizer.size = 2;
  ASSERT_THAT(shard->ImportState(seed, Soon()), IsOk());
  absl::StatusOr<std::string> bytes = PullWireBytes(*shard, 0, 7);
  ASSERT_THAT(bytes, IsOk());
  EXPECT_EQ(
      Decode(type, *bytes),
      (std::vector<float>{FromWire(type, ToWire(type, 1.0f / 3.0f)), 3.0f}));
  absl::StatusOr<ParameterState> state = shard->ExportState(Soon());
  ASSERT_THAT(state, IsOk());
  EXPECT_EQ(state->params, seed.params);
}

INSTANTIATE_TEST_SUITE_P(WireTypes, PsShardHalfTest,
                         ::testing::Values(DataType::kBFloat16,
                                           DataType::kFloat16),
                         [](const ::testing::TestParamInfo<DataType>& info) {
                           return info.param == DataType::kBFloat16
                                      ? std::string("bf16")
                                      : std::string("fp16");
                         });

TEST(PsShardHalfConfigTest, Create_WireTypeNot16BitOrFp32_InvalidArgument) {
  PsShardConfig config = ShardConfig(1, 0, 2);
  config.wire_dtype = DataType::kInt32;
  EXPECT_THAT(PsShard::Create(config, std::vector<float>(2, 0)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("fp32, bf16 or fp16")));
}

}  // namespace
}  // namespace gradsync
