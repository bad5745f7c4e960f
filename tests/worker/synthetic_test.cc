#include "worker/model/synthetic.h"

#include <cmath>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

MATCHER_P(StatusIs, code, "") { return arg.code() == code; }

SyntheticConfig Config(size_t n, size_t chunk, absl::Duration t,
                       EmulatedWait wait = EmulatedWait::kSleep) {
  SyntheticConfig c;
  c.num_floats = n;
  c.chunk_floats = chunk;
  c.compute_time = t;
  c.wait = wait;
  return c;
}

TEST(SyntheticTest, Values_AreSmallIntegersAndSumsAreExact) {
  for (uint64_t step = 0; step < 5; ++step) {
    for (size_t i = 0; i < 200; ++i) {
      int64_t sum = 0;
      for (uint64_t r = 0; r < 8; ++r) {
        const float v = SyntheticWorkload::Value(r, step, i);
        ASSERT_EQ(v, std::trunc(v));
        ASSERT_GE(v, -8.0f);
        ASSERT_LE(v, 8.0f);
        sum += static_cast<int64_t>(v);
      }
      ASSERT_EQ(SyntheticWorkload::ExpectedSum(8, step, i),
                static_cast<float>(sum));
    }
  }
  // Content differs between ranks and steps.
  EXPECT_NE(SyntheticWorkload::Value(0, 0, 3),
            SyntheticWorkload::Value(1, 0, 3));
  EXPECT_NE(SyntheticWorkload::Value(0, 0, 3),
            SyntheticWorkload::Value(0, 1, 3));
}

TEST(SyntheticTest, Backward_ChunksFromTheEndTileTheBuffer) {
  absl::StatusOr<SyntheticWorkload> w =
      SyntheticWorkload::Create(Config(1000, 300, absl::ZeroDuration()));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->num_chunks(), 4u);
  std::vector<float> g(1000, 99.0f);
  std::vector<std::pair<size_t, size_t>> ranges;
  ASSERT_TRUE(
      w->Backward(3, 7, absl::MakeSpan(g), GradMode::kOverwrite,
                  [&](size_t b, size_t e) { ranges.emplace_back(b, e); })
          .ok());
  const std::vector<std::pair<size_t, size_t>> want = {
      {700, 1000}, {400, 700}, {100, 400}, {0, 100}};
  EXPECT_EQ(ranges, want);
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_EQ(g[i], SyntheticWorkload::Value(3, 7, i)) << "at index " << i;
  }
  ASSERT_TRUE(
      w->Backward(3, 7, absl::MakeSpan(g), GradMode::kAccumulate, nullptr)
          .ok());
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_EQ(g[i], 2 * SyntheticWorkload::Value(3, 7, i));
  }
}

TEST(SyntheticTest, Backward_TakesTheComputeTime) {
  for (EmulatedWait wait : {EmulatedWait::kSleep, EmulatedWait::kBusyWait}) {
    absl::StatusOr<SyntheticWorkload> w =
        SyntheticWorkload::Create(Config(64, 16, absl::Milliseconds(40), wait));
    ASSERT_TRUE(w.ok());
    std::vector<float> g(64);
    std::vector<absl::Duration> at;
    const absl::Time start = absl::Now();
    ASSERT_TRUE(
        w->Backward(0, 0, absl::MakeSpan(g), GradMode::kOverwrite,
                    [&](size_t, size_t) { at.push_back(absl::Now() - start); })
            .ok());
    ASSERT_EQ(at.size(), 4u);
    // Chunk k is reported no earlier than (k + 1) / 4 of the time.
    for (size_t k = 0; k < at.size(); ++k) {
      EXPECT_GE(at[k], absl::Milliseconds(10) * (k + 1)) << "chunk " << k;
    }
  }
}

TEST(SyntheticTest, EmptyGradient_ReportsOneEmptyRange) {
  absl::StatusOr<SyntheticWorkload> w =
      SyntheticWorkload::Create(Config(0, 0, absl::ZeroDuration()));
  ASSERT_TRUE(w.ok());
  int calls = 0;
  ASSERT_TRUE(
      w->Backward(0, 0, {}, GradMode::kOverwrite, [&](size_t b, size_t e) {
         ++calls;
         EXPECT_EQ(b, e);
       }).ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(w->num_chunks(), 1u);
}

TEST(SyntheticTest, BadInput_ReturnsInvalidArgument) {
  EXPECT_THAT(
      SyntheticWorkload::Create(Config(4, 1, absl::Seconds(-1))).status(),
      StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(SyntheticWorkload::Create(Config(4, 1, absl::InfiniteDuration()))
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  absl::StatusOr<SyntheticWorkload> w =
      SyntheticWorkload::Create(Config(4, 0, absl::ZeroDuration()));
  ASSERT_TRUE(w.ok());
  std::vector<float> g(3);
  EXPECT_THAT(w->Backward(0, 0, absl::MakeSpan(g), GradMode::kOverwrite, {}),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// A network's layers: reported last first, whole, each when its share of
// the cost has passed (here the costs put 3/4 of the time on the first
// layer, so the last two come at once and the first at the end).
TEST(SyntheticTest, Layers_ReportedLastFirstAtTheirShareOfTheCost) {
  SyntheticConfig config;
  config.num_floats = 100;
  config.layer_floats = {10, 60, 30};
  config.layer_cost = {3, 1, 0};
  config.compute_time = absl::Milliseconds(80);
  absl::StatusOr<SyntheticWorkload> w = SyntheticWorkload::Create(config);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->num_chunks(), 3u);
  std::vector<float> g(100);
  std::vector<std::pair<size_t, size_t>> ranges;
  std::vector<absl::Duration> at;
  const absl::Time start = absl::Now();
  ASSERT_TRUE(w->Backward(1, 2, absl::MakeSpan(g), GradMode::kOverwrite,
                          [&](size_t b, size_t e) {
                            ranges.emplace_back(b, e);
                            at.push_back(absl::Now() - start);
                          })
                  .ok());
  const std::vector<std::pair<size_t, size_t>> want = {
      {70, 100}, {10, 70}, {0, 10}};
  EXPECT_EQ(ranges, want);
  // Cost shares from the end: 0, 1/4, 4/4 of 80 ms.
  EXPECT_GE(at[1], absl::Milliseconds(20));
  EXPECT_GE(at[2], absl::Milliseconds(80));
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_EQ(g[i], SyntheticWorkload::Value(1, 2, i)) << "at index " << i;
  }
}

TEST(SyntheticTest, Layers_ThatDoNotAddUp_AreRejected) {
  SyntheticConfig config;
  config.num_floats = 100;
  config.layer_floats = {10, 60};
  absl::Status status = SyntheticWorkload::Create(config).status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(status.message()),
              ::testing::HasSubstr("hold 70 floats"));
  config.layer_floats = {40, 60};
  config.layer_cost = {1};
  status = SyntheticWorkload::Create(config).status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(status.message()),
              ::testing::HasSubstr("1 layer costs for 2"));
  config.layer_cost = {1, -1};
  EXPECT_THAT(SyntheticWorkload::Create(config).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace gradsync
