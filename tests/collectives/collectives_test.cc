// Exact tests of the TCP backend's collectives, ranks as threads: every
// world size x element count x type x op, in-place and out-of-place, with
// known results and bitwise-identical outputs on every rank.
#include <cstring>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "gtest/gtest.h"
#include "tests/collectives/rank_group.h"

namespace gradsync::testing {
namespace {

std::vector<size_t> Counts(int n) {
  std::vector<size_t> c = {0, 1, static_cast<size_t>(n), size_t(n) + 1, 20011};
  if (n > 1) c.push_back(static_cast<size_t>(n - 1));
  return c;
}

std::string Bytes(DataType type, size_t count) {
  return std::string(count * DataTypeSize(type), '\0');
}

// Checks element i of every rank's output against the exact reduction and
// that all ranks hold the same bits.
void ExpectReduced(DataType type, ReduceOp op, int size,
                   const std::vector<std::string>& out, size_t count,
                   size_t first_index) {
  const size_t es = DataTypeSize(type);
  for (size_t i = 0; i < count; ++i) {
    char want[8];
    ExpectedReduction(type, op, size, first_index + i, want);
    ASSERT_EQ(0, std::memcmp(want, out[0].data() + i * es, es))
        << "rank 0 at index " << i << " (count " << count << ")";
  }
  for (size_t r = 1; r < out.size(); ++r) {
    ASSERT_EQ(out[0], out[r]) << "rank " << r << " differs from rank 0";
  }
}

// An in-place fp32 sum of `count` elements on every rank of `group`,
// checked exactly and for identical bits on every rank.
void ExpectInPlaceSumExact(RankGroup& group, size_t count) {
  const int n = group.size();
  std::vector<std::string> out(n);
  auto status = group.Run([&](int r) {
    out[r] = Bytes(DataType::kFloat32, count);
    FillInput(DataType::kFloat32, r, out[r].data(), count);
    return group.comm(r).AllReduce(out[r].data(), out[r].data(), count,
                                   DataType::kFloat32, ReduceOp::kSum);
  });
  for (const auto& s : status) ASSERT_TRUE(s.ok()) << s;
  ExpectReduced(DataType::kFloat32, ReduceOp::kSum, n, out, count, 0);
}

using AllReduceParam = std::tuple<int, DataType, ReduceOp, AllReduceAlgorithm>;

class AllReduceTest : public ::testing::TestWithParam<AllReduceParam> {};

TEST_P(AllReduceTest, ExactAndIdenticalOnEveryRank) {
  const auto [n, type, op, algo] = GetParam();
  TcpOptions options = SmallPipelineOptions();
  options.algorithm = algo;
  RankGroup group(n, options);
  for (size_t count : Counts(n)) {
    for (bool in_place : {false, true}) {
      std::vector<std::string> in(n), out(n);
      auto status = group.Run([&](int r) {
        in[r] = Bytes(type, count);
        out[r] = Bytes(type, count);
        FillInput(type, r, in[r].data(), count);
        if (in_place) {
          out[r] = in[r];
          return group.comm(r).AllReduce(out[r].data(), out[r].data(), count,
                                         type, op);
        }
        return group.comm(r).AllReduce(in[r].data(), out[r].data(), count, type,
                                       op);
      });
      for (int r = 0; r < n; ++r) {
        ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
      }
      SCOPED_TRACE(::testing::Message()
                   << "count " << count << (in_place ? " in-place" : ""));
      ExpectReduced(type, op, n, out, count, 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, AllReduceTest,
    ::testing::Combine(
        ::testing::Values(1, 2, 3, 4, 5, 8),
        ::testing::Values(DataType::kFloat32, DataType::kFloat64,
                          DataType::kInt32),
        ::testing::Values(ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax,
                          ReduceOp::kMin),
        ::testing::Values(AllReduceAlgorithm::kRing,
                          AllReduceAlgorithm::kHalvingDoubling)));

using TypeOpParam = std::tuple<int, DataType, ReduceOp>;
class ReduceScatterTest : public ::testing::TestWithParam<TypeOpParam> {};

TEST_P(ReduceScatterTest, RankGetsItsReducedBlock) {
  const auto [n, type, op] = GetParam();
  RankGroup group(n, SmallPipelineOptions());
  const size_t es = DataTypeSize(type);
  for (size_t block : Counts(n)) {
    for (bool in_place : {false, true}) {
      std::vector<std::string> in(n), out(n);
      auto status = group.Run([&](int r) {
        in[r] = Bytes(type, block * n);
        FillInput(type, r, in[r].data(), block * n);
        if (in_place) {
          absl::Status s = group.comm(r).ReduceScatter(
              in[r].data(), in[r].data() + r * block * es, block, type, op);
          out[r] = in[r].substr(r * block * es, block * es);
          return s;
        }
        out[r] = Bytes(type, block);
        return group.comm(r).ReduceScatter(in[r].data(), out[r].data(), block,
                                           type, op);
      });
      for (int r = 0; r < n; ++r) {
        ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
        SCOPED_TRACE(::testing::Message() << "block " << block << " rank " << r
                                          << (in_place ? " in-place" : ""));
        ExpectReduced(type, op, n, {out[r]}, block, r * block);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, ReduceScatterTest,
    ::testing::Combine(::testing::Values(1, 2, 3, 4, 5, 8),
                       ::testing::Values(DataType::kFloat32, DataType::kFloat64,
                                         DataType::kInt32),
                       ::testing::Values(ReduceOp::kSum, ReduceOp::kAvg,
                                         ReduceOp::kMax, ReduceOp::kMin)));

using TypeParam = std::tuple<int, DataType>;
class GatherBroadcastTest : public ::testing::TestWithParam<TypeParam> {};

TEST_P(GatherBroadcastTest, AllGatherConcatenatesRankBlocks) {
  const auto [n, type] = GetParam();
  RankGroup group(n, SmallPipelineOptions());
  const size_t es = DataTypeSize(type);
  for (size_t block : Counts(n)) {
    for (bool in_place : {false, true}) {
      std::vector<std::string> out(n);
      auto status = group.Run([&](int r) {
        out[r] = Bytes(type, block * n);
        std::string in = Bytes(type, block);
        FillInput(type, r, in.data(), block);
        if (in_place) {
          char* mine = out[r].data() + r * block * es;
          if (block > 0) std::memcpy(mine, in.data(), in.size());
          return group.comm(r).AllGather(mine, out[r].data(), block, type);
        }
        return group.comm(r).AllGather(in.data(), out[r].data(), block, type);
      });
      std::string want = Bytes(type, block * n);
      for (int r = 0; r < n; ++r) {
        ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
        FillInput(type, r, want.data() + r * block * es, block);
      }
      for (int r = 0; r < n; ++r) {
        ASSERT_EQ(want, out[r]) << "rank " << r << " block " << block;
      }
    }
  }
}

TEST_P(GatherBroadcastTest, BroadcastCopiesRootFromEveryRoot) {
  const auto [n, type] = GetParam();
  RankGroup group(n, SmallPipelineOptions());
  for (int root = 0; root < n; ++root) {
    for (size_t count : Counts(n)) {
      std::vector<std::string> out(n);
      auto status = group.Run([&](int r) {
        std::string in = Bytes(type, count);
        FillInput(type, r, in.data(), count);
        out[r] = Bytes(type, count);
        return group.comm(r).Broadcast(in.data(), out[r].data(), count, type,
                                       root);
      });
      std::string want = Bytes(type, count);
      FillInput(type, root, want.data(), count);
      for (int r = 0; r < n; ++r) {
        ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
        ASSERT_EQ(want, out[r])
            << "rank " << r << " root " << root << " count " << count;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, GatherBroadcastTest,
    ::testing::Combine(::testing::Values(1, 2, 3, 4, 5, 8),
                       ::testing::Values(DataType::kFloat32, DataType::kFloat64,
                                         DataType::kInt32)));

TEST(CollectivesTest, AutoPicksBothAlgorithmsAndAgrees) {
  TcpOptions options = SmallPipelineOptions();
  options.halving_doubling_max_bytes = 4096;
  RankGroup group(5, options);
  for (size_t count : {size_t{100}, size_t{1025}, size_t{50001}}) {
    ASSERT_NO_FATAL_FAILURE(ExpectInPlaceSumExact(group, count));
  }
}

// Small collectives run with the larger send buffers, large ones with the
// smaller: alternating sizes resize the same connections each time. (Once
// shrinking the receive buffers too stalled this test on retransmits.)
TEST(CollectivesTest, SocketBuffersFollowTheMessageSize) {
  TcpOptions options = SmallPipelineOptions();
  options.spin_max_bytes = 64 << 10;
  options.socket_buffer_bytes = 4 << 10;
  options.small_socket_buffer_bytes = 1 << 20;
  RankGroup group(4, options);
  // 40 KB: small class; 1.2 MB: large; 4 KB: fits either, keeps the last.
  for (size_t count : {10000, 300001, 1000, 10000, 1000, 300001, 10000}) {
    ASSERT_NO_FATAL_FAILURE(ExpectInPlaceSumExact(group, count));
  }
}

TEST(TcpOptionsTest, SocketBufferSizeClasses) {
  TcpOptions o;
  o.spin_max_bytes = 2 << 20;
  o.socket_buffer_bytes = 256 << 10;
  o.small_socket_buffer_bytes = 4 << 20;
  EXPECT_EQ(SendBufferBytesFor(o, 0), 0);  // fits either: no switch
  EXPECT_EQ(SendBufferBytesFor(o, 256 << 10), 0);
  EXPECT_EQ(SendBufferBytesFor(o, (256 << 10) + 1), 4 << 20);
  EXPECT_EQ(SendBufferBytesFor(o, 2 << 20), 4 << 20);
  EXPECT_EQ(SendBufferBytesFor(o, (2 << 20) + 1), 256 << 10);
  EXPECT_EQ(ReceiveBufferBytes(o), 4 << 20);
  o.small_socket_buffer_bytes = 0;  // one size for all
  EXPECT_EQ(SendBufferBytesFor(o, 1 << 20), 256 << 10);
  EXPECT_EQ(ReceiveBufferBytes(o), 256 << 10);
  o.socket_buffer_bytes = 0;  // the kernel's, never touched
  o.small_socket_buffer_bytes = 4 << 20;
  EXPECT_EQ(SendBufferBytesFor(o, 1 << 20), 0);
  EXPECT_EQ(ReceiveBufferBytes(o), 0);
}

TEST(TcpOptionsTest, NoSpinOnAnOversubscribedHost) {
  EXPECT_EQ(SpinPollsForHost(10000, 2, 2), 10000);
  EXPECT_EQ(SpinPollsForHost(10000, 1, 16), 10000);
  EXPECT_EQ(SpinPollsForHost(10000, 3, 2), 0);
  EXPECT_EQ(SpinPollsForHost(10000, 4, 2), 0);
  EXPECT_EQ(SpinPollsForHost(10000, 0, 2), 10000);  // unknown: as asked
  EXPECT_EQ(SpinPollsForHost(10000, 4, 0), 10000);
  EXPECT_EQ(SpinPollsForHost(0, 1, 2), 0);
}

TEST(CollectivesTest, LargeOddCountWithDefaultSegments) {
  RankGroup group(4, TcpOptions());
  // Several 1 MiB segments per chunk.
  ExpectInPlaceSumExact(group, (3 << 20) + 7);
}

// Blocks of many default-sized segments: the sender runs a whole block
// behind the receiver, which must neither deadlock nor clobber data.
TEST(CollectivesTest, LargeReduceScatterAllGatherBroadcast) {
  RankGroup group(4, TcpOptions());
  const size_t block = (3 << 20) + 5;
  const DataType f32 = DataType::kFloat32;
  std::vector<std::string> in(4), rs(4), ag(4), bc(4);
  auto status = group.Run([&](int r) -> absl::Status {
    in[r] = Bytes(f32, block * 4);
    FillInput(f32, r, in[r].data(), block * 4);
    rs[r] = Bytes(f32, block);
    absl::Status s = group.comm(r).ReduceScatter(in[r].data(), rs[r].data(),
                                                 block, f32, ReduceOp::kSum);
    if (!s.ok()) return s;
    ag[r] = Bytes(f32, block * 4);
    s = group.comm(r).AllGather(rs[r].data(), ag[r].data(), block, f32);
    if (!s.ok()) return s;
    bc[r] = Bytes(f32, block * 4);
    return group.comm(r).Broadcast(in[r].data(), bc[r].data(), block * 4, f32,
                                   3);
  });
  for (const auto& s : status) ASSERT_TRUE(s.ok()) << s;
  // All-gathering the reduce-scattered blocks is the all-reduce.
  ExpectReduced(f32, ReduceOp::kSum, 4, ag, block * 4, 0);
  for (int r = 0; r < 4; ++r) ASSERT_EQ(in[3], bc[r]) << "rank " << r;
}

TEST(CollectivesTest, AsyncCallsCompleteInIssueOrder) {
  RankGroup group(3, SmallPipelineOptions());
  constexpr int kCalls = 6;
  constexpr size_t kCount = 3001;
  std::vector<std::vector<std::string>> bufs(3,
                                             std::vector<std::string>(kCalls));
  auto status = group.Run([&](int r) -> absl::Status {
    std::vector<std::unique_ptr<Work>> work;
    for (int k = 0; k < kCalls; ++k) {
      bufs[r][k] = Bytes(DataType::kInt32, kCount);
      FillInput(DataType::kInt32, r, bufs[r][k].data(), kCount, k);
      work.push_back(group.comm(r).AllReduceAsync(
          bufs[r][k].data(), bufs[r][k].data(), kCount, DataType::kInt32,
          ReduceOp::kSum));
    }
    for (auto& w : work) {
      absl::Status s = w->Wait(absl::Now() + absl::Seconds(20));
      if (!s.ok()) return s;
    }
    return group.comm(r).Barrier();
  });
  for (const auto& s : status) ASSERT_TRUE(s.ok()) << s;
  for (int k = 0; k < kCalls; ++k) {
    std::vector<std::string> out = {bufs[0][k], bufs[1][k], bufs[2][k]};
    ExpectReduced(DataType::kInt32, ReduceOp::kSum, 3, out, kCount, k);
  }
}

// Work::Elapsed: a collective's own duration counts waiting for a late
// peer but not the time it sat queued behind earlier collectives.
TEST(CollectivesTest, ElapsedCountsTheLatePeerButNotTheQueue) {
  RankGroup group(2, SmallPipelineOptions());
  constexpr absl::Duration kLate = absl::Milliseconds(300);
  constexpr size_t kCount = 1001;
  std::vector<absl::Duration> first(2), second(2);
  std::vector<absl::Duration> wall(2);
  auto status = group.Run([&](int r) -> absl::Status {
    std::vector<float> a(kCount, 1.0f), b(kCount, 2.0f);
    if (r == 1) absl::SleepFor(kLate);
    const absl::Time issued = absl::Now();
    std::unique_ptr<Work> wa = group.comm(r).AllReduceAsync(
        a.data(), a.data(), kCount, DataType::kFloat32, ReduceOp::kSum);
    std::unique_ptr<Work> wb = group.comm(r).AllReduceAsync(
        b.data(), b.data(), kCount, DataType::kFloat32, ReduceOp::kSum);
    if (r == 0) {
      // Rank 1 has not joined: no duration yet.
      absl::StatusOr<absl::Duration> early = wb->Elapsed();
      if (!absl::IsFailedPrecondition(early.status())) {
        return absl::InternalError(absl::StrCat("Elapsed before completion: ",
                                                early.status().ToString()));
      }
    }
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    RETURN_IF_ERROR(wa->Wait(deadline));
    RETURN_IF_ERROR(wb->Wait(deadline));
    wall[r] = absl::Now() - issued;
    ASSIGN_OR_RETURN(first[r], wa->Elapsed());
    ASSIGN_OR_RETURN(second[r], wb->Elapsed());
    if (a[0] != 2.0f || b[0] != 4.0f) return absl::InternalError("wrong sum");
    return absl::OkStatus();
  });
  for (const auto& s : status) ASSERT_TRUE(s.ok()) << s;
  // Rank 0's first collective waited for rank 1; its second was queued
  // behind the first the whole time but ran briefly.
  EXPECT_GE(first[0], kLate / 2);  // less the threads' start skew
  EXPECT_LT(second[0], first[0]);
  for (int r = 0; r < 2; ++r) {
    EXPECT_GE(second[r], absl::ZeroDuration()) << "rank " << r;
    EXPECT_LE(first[r] + second[r], wall[r]) << "rank " << r;
  }
}

TEST(CollectivesTest, ElapsedOfFinishedHandles) {
  EXPECT_EQ(*MakeDoneWork(absl::OkStatus())->Elapsed(), absl::ZeroDuration());
  EXPECT_TRUE(absl::IsFailedPrecondition(
      MakeDoneWork(absl::UnavailableError("gone"))->Elapsed().status()));
  RankGroup group(2, SmallPipelineOptions());
  float x = 1;
  // Rejected before it ran (a null buffer): no duration.
  EXPECT_TRUE(absl::IsFailedPrecondition(
      group.comm(0)
          .AllReduceAsync(nullptr, &x, 4, DataType::kFloat32, ReduceOp::kSum)
          ->Elapsed()
          .status()));
}

TEST(CollectivesTest, InvalidArgumentsFailWithoutSending) {
  RankGroup group(2, SmallPipelineOptions());
  float x = 1;
  EXPECT_TRUE(absl::IsInvalidArgument(group.comm(0).AllReduce(
      nullptr, &x, 4, DataType::kFloat32, ReduceOp::kSum)));
  EXPECT_TRUE(absl::IsInvalidArgument(
      group.comm(0).Broadcast(&x, &x, 1, DataType::kFloat32, 2)));
  EXPECT_TRUE(absl::IsInvalidArgument(group.comm(0).AllReduce(
      &x, &x, 1, static_cast<DataType>(9), ReduceOp::kSum)));
  // The communicator is still usable afterwards: nothing was sent.
  auto status = group.Run([&](int r) {
    float v = static_cast<float>(r + 1);
    absl::Status s =
        group.comm(r).AllReduce(&v, &v, 1, DataType::kFloat32, ReduceOp::kSum);
    if (s.ok() && v != 3.0f) return absl::InternalError("wrong sum");
    return s;
  });
  for (const auto& s : status) EXPECT_TRUE(s.ok()) << s;
}

}  // namespace
}  // namespace gradsync::testing
