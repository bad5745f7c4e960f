#include "server/ps/shard/gradient_sum.h"

#include <atomic>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace gradsync {
namespace {

// A rank's gradient as the transports hand it over: its bytes cut at
// random byte offsets (inside floats too) into separately allocated pieces.
struct Pieces {
  std::vector<std::vector<char>> storage;
  GradientSegments segments;
};

Pieces CutRandomly(const std::vector<float>& values, std::mt19937& rng,
                   size_t max_piece) {
  Pieces p;
  const char* bytes = reinterpret_cast<const char*>(values.data());
  const size_t total = values.size() * sizeof(float);
  std::uniform_int_distribution<size_t> len(1, max_piece);
  for (size_t off = 0; off < total;) {
    const size_t n = std::min(len(rng), total - off);
    // One spare byte in front, so that most pieces are misaligned.
    p.storage.emplace_back(n + 1);
    std::memcpy(p.storage.back().data() + 1, bytes + off, n);
    off += n;
  }
  for (const std::vector<char>& piece : p.storage) {
    AppendSegment(&p.segments, piece.data() + 1, piece.size() - 1);
  }
  return p;
}

struct Case {
  std::vector<std::vector<float>> grads;  // [rank][element]
  std::vector<Pieces> pieces;
  std::vector<const GradientSegments*> ranks;
};

Case MakeCase(int ranks, size_t n, bool integers, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> small(-1000, 1000);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  Case c;
  c.grads.resize(ranks);
  for (int r = 0; r < ranks; ++r) {
    c.grads[r].resize(n);
    for (float& g : c.grads[r]) {
      g = integers ? static_cast<float>(small(rng)) : real(rng);
    }
    c.pieces.push_back(CutRandomly(c.grads[r], rng, /*max_piece=*/20000));
  }
  for (const Pieces& p : c.pieces) c.ranks.push_back(&p.segments);
  return c;
}

TEST(GradientSumTest, SumsIntegersExactlyAcrossRandomPieces) {
  for (int ranks : {1, 2, 3, 4, 5}) {
    for (size_t n : {0, 1, 7, 2048, 2049, 300001}) {
      SCOPED_TRACE(testing::Message() << ranks << " ranks, " << n << " floats");
      const Case c = MakeCase(ranks, n, /*integers=*/true, 7 * ranks + n);
      std::vector<float> sum(n), mean(n);
      SumInRankOrder(c.ranks, absl::MakeSpan(sum));
      AverageInRankOrder(c.ranks, absl::MakeSpan(mean));
      for (size_t i = 0; i < n; ++i) {
        float expect = 0;
        for (int r = 0; r < ranks; ++r) expect += c.grads[r][i];
        ASSERT_EQ(sum[i], expect) << "element " << i;
        ASSERT_EQ(mean[i], expect / static_cast<float>(ranks))
            << "element " << i;
      }
    }
  }
}

TEST(GradientSumTest, RankOrderNotPieceLayoutDecidesTheBits) {
  // Non-integer values, where the order of the additions shows in the bits.
  const size_t n = 100003;
  const Case c = MakeCase(4, n, /*integers=*/false, 11);
  std::vector<float> got(n);
  AverageInRankOrder(c.ranks, absl::MakeSpan(got));
  for (size_t i = 0; i < n; ++i) {
    float expect = c.grads[0][i];
    for (int r = 1; r < 4; ++r) expect += c.grads[r][i];
    expect /= 4.0f;
    ASSERT_EQ(std::memcmp(&got[i], &expect, sizeof(float)), 0)
        << "element " << i;
  }
}

// With a pool the sums run in element ranges on several threads: the bits
// must not change, for any number of helpers, ranges that end inside a
// piece or inside a float's bytes, and sizes below and above the part
// size.
TEST(GradientSumTest, PoolGivesBitwiseTheSameResult) {
  for (size_t n : {1, 1000, 262145, 1000003}) {
    const Case c = MakeCase(3, n, /*integers=*/false, 5 + n);
    std::vector<float> serial(n);
    AverageInRankOrder(c.ranks, absl::MakeSpan(serial));
    for (int helpers : {0, 1, 2, 5}) {
      SCOPED_TRACE(testing::Message()
                   << n << " floats, " << helpers << " helpers");
      ComputePool pool(helpers);
      std::vector<float> mean(n), sum(n), serial_sum(n);
      AverageInRankOrder(c.ranks, absl::MakeSpan(mean), &pool);
      ASSERT_EQ(std::memcmp(mean.data(), serial.data(), n * sizeof(float)), 0);
      SumInRankOrder(c.ranks, absl::MakeSpan(sum), &pool);
      SumInRankOrder(c.ranks, absl::MakeSpan(serial_sum));
      ASSERT_EQ(std::memcmp(sum.data(), serial_sum.data(), n * sizeof(float)),
                0);
    }
  }
}

// The shard's path: the sums handed out block by block (to the optimizer)
// instead of written out. Every element exactly once, bitwise the values
// of the written-out sums, with and without a pool.
TEST(GradientSumTest, ReduceInBlocksHandsEachElementOnceWithTheSameBits) {
  for (size_t n : {0, 1, 2049, 1000003}) {
    const Case c = MakeCase(3, n, /*integers=*/false, 23 + n);
    for (bool average : {true, false}) {
      std::vector<float> expect(n);
      if (average) {
        AverageInRankOrder(c.ranks, absl::MakeSpan(expect));
      } else {
        SumInRankOrder(c.ranks, absl::MakeSpan(expect));
      }
      for (int helpers : {0, 2}) {
        SCOPED_TRACE(testing::Message() << n << " floats, average " << average
                                        << ", " << helpers << " helpers");
        ComputePool pool(helpers);
        std::vector<float> got(n, -1.0f);
        // Blocks are disjoint, so each element's counter has one writer.
        std::vector<int> seen(n, 0);
        std::atomic<bool> outside{false};
        ReduceInBlocks(c.ranks, average, n, &pool,
                       [&](size_t begin, absl::Span<const float> block) {
                         if (begin > n || block.size() > n - begin) {
                           outside = true;
                           return;
                         }
                         for (size_t i = 0; i < block.size(); ++i) {
                           got[begin + i] = block[i];
                           ++seen[begin + i];
                         }
                       });
        ASSERT_FALSE(outside);
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << "element " << i;
        ASSERT_EQ(std::memcmp(got.data(), expect.data(), n * sizeof(float)), 0);
      }
    }
  }
}

// The shard averages into the memory rank 0's gradient sits in.
TEST(GradientSumTest, AveragesInPlaceOverRankZero) {
  const size_t n = 600001;
  for (int helpers : {0, 1}) {
    ComputePool pool(helpers);
    std::vector<float> g0(n), g1(n);
    for (size_t i = 0; i < n; ++i) {
      g0[i] = static_cast<float>(i % 13);
      g1[i] = static_cast<float>(i % 5);
    }
    GradientSegments s0, s1;
    AppendSegment(&s0, reinterpret_cast<const char*>(g0.data()),
                  n * sizeof(float));
    AppendSegment(&s1, reinterpret_cast<const char*>(g1.data()),
                  n * sizeof(float));
    const GradientSegments* ranks[] = {&s0, &s1};
    AverageInRankOrder(ranks, absl::MakeSpan(g0), &pool);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(g0[i], (static_cast<float>(i % 13) + i % 5) / 2.0f)
          << "element " << i << ", " << helpers << " helpers";
    }
  }
}

TEST(GradientSumTest, GathersAndCountsSegments) {
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  std::mt19937 rng(3);
  const Pieces p = CutRandomly(values, rng, 37);
  EXPECT_EQ(SegmentBytes(p.segments), values.size() * sizeof(float));
  std::vector<float> out(values.size());
  GatherSegments(p.segments, absl::MakeSpan(reinterpret_cast<char*>(out.data()),
                                            out.size() * sizeof(float)));
  EXPECT_EQ(out, values);
}

TEST(GradientSumTest, AppendMergesContiguousPieces) {
  char buffer[64] = {};
  GradientSegments segments;
  AppendSegment(&segments, buffer, 8);
  AppendSegment(&segments, buffer + 8, 8);
  AppendSegment(&segments, buffer + 32, 0);
  AppendSegment(&segments, buffer + 32, 4);
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[0].size, 16u);
  EXPECT_EQ(segments[1].data, buffer + 32);
}

}  // namespace
}  // namespace gradsync
