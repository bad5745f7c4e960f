#include "common/model_init/portable_random.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace gradsync {
namespace {

TEST(PortableRandomTest, SplitMix64_MatchesReferenceVectors) {
  // Outputs of Vigna's splitmix64.c seeded with 1234567.
  const uint64_t want[] = {6457827717110365317ULL, 3203168211198807973ULL,
                           9817491932198370423ULL, 4593380528125082431ULL,
                           16408922859458223821ULL};
  SplitMix64 rng(1234567);
  for (uint64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(rng.Next(), want[i]) << "output " << i;
    EXPECT_EQ(SplitMix64At(1234567, i), want[i]) << "output " << i;
  }
}

TEST(PortableRandomTest, Float01_IsOnTheGridAndInRange) {
  EXPECT_EQ(BitsToFloat01(0), 0.0f);
  EXPECT_EQ(BitsToFloat01(~uint64_t{0}), 1.0f - 1.0f / 16777216.0f);
  SplitMix64 rng(7);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const float u = rng.NextFloat01();
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.01);
}

TEST(PortableRandomTest, NextBelow_IsInRangeAndCoversIt) {
  SplitMix64 rng(11);
  std::vector<int> hits(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const uint64_t r = rng.NextBelow(7);
    ASSERT_LT(r, 7u);
    ++hits[r];
  }
  for (int h : hits) EXPECT_GT(h, 800);
  EXPECT_EQ(rng.NextBelow(0), 0u);
  EXPECT_EQ(rng.NextBelow(1), 0u);
}

TEST(PortableRandomTest, RandomPermutation_IsAPermutationAndDeterministic) {
  const std::vector<size_t> a = RandomPermutation(1000, 42);
  const std::vector<size_t> b = RandomPermutation(1000, 42);
  const std::vector<size_t> c = RandomPermutation(1000, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::vector<size_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i);
  EXPECT_TRUE(RandomPermutation(0, 1).empty());
  EXPECT_EQ(RandomPermutation(1, 1), std::vector<size_t>{0});
}

TEST(PortableRandomTest, RandomPermutation_PinnedValues) {
  // Pins the exact order so that a change to the generator (which would
  // silently change every job's data order) fails loudly.
  const std::vector<size_t> want = {9, 0, 6, 3, 4, 2, 5, 7, 8, 1};
  EXPECT_EQ(RandomPermutation(10, 2024), want);
}

TEST(PortableRandomTest, DeriveSeed_SeparatesStreams) {
  EXPECT_NE(DeriveSeed(1, 0), DeriveSeed(1, 1));
  EXPECT_NE(DeriveSeed(1, 0), DeriveSeed(2, 0));
  EXPECT_EQ(DeriveSeed(5, 9), DeriveSeed(5, 9));
}

}  // namespace
}  // namespace gradsync
