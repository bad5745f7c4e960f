// The PS-vs-ring findings (study/sweep_findings.h) on cells that follow
// the alpha-beta model exactly (alpha = 0, B = 12.5 MB/s, unpartitioned
// PS), and on the same cells with the ring measured slower than predicted.
#include "study/sweep_findings.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace study {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

constexpr int64_t kBytes = 1 << 20;
constexpr int64_t kRate = 100000000;  // 100 Mbit/s
constexpr double kBps = 12.5e6;

SweepPoint Cell(const std::string& layout, int n, int k, double seconds) {
  SweepPoint p;
  p.layout = layout;
  p.workers = n;
  p.shards = k;
  p.bytes = kBytes;
  p.rate_bps = kRate;
  p.sync_s = seconds;
  p.predicted_s = seconds;
  return p;
}

// The ring over N = 2, 3, 4 and the PS with K = 1..N separate servers.
std::vector<SweepPoint> ModelCells() {
  const double s = kBytes / kBps;
  std::vector<SweepPoint> cells;
  for (int n = 2; n <= 4; ++n) {
    cells.push_back(Cell("ring", n, 0, 2.0 * (n - 1) / n * s));
    for (int k = 1; k <= n; ++k) {
      cells.push_back(Cell("ps", n, k, std::max(1.0, double(n) / k) * s));
    }
  }
  return cells;
}

TEST(SweepFindingsTest, CellsThatFollowTheModelPassEveryFinding) {
  const std::vector<std::string> lines =
      SweepFindings(ModelCells(), LinkModel{0, kBps}, kRate, SweepOptions{});
  const std::string all = absl::StrJoin(lines, "\n");
  EXPECT_THAT(all, HasSubstr("PASS (a) S=1 MiB at 100 Mbit/s: PS with one "
                             "shard grows linearly with N: 167.8, 251.7, "
                             "335.5 ms for N = 2..4 (R^2 1.000"));
  EXPECT_THAT(all, HasSubstr("PASS (b) S=1 MiB at 100 Mbit/s: the ring "
                             "stays nearly flat in N"));
  EXPECT_THAT(all, HasSubstr("PASS (c) S=1 MiB at 100 Mbit/s: PS with K = N "
                             "server hosts against the ring: N=2 ring/PS "
                             "x1.00 (model x1.00)"));
  // K* = N^2 / (2(N-1)) = 8/3 at N = 4, measured and modelled.
  EXPECT_THAT(all, HasSubstr("PASS (d) S=1 MiB at 100 Mbit/s, N=4: "
                             "crossover K* observed 2.67, model 2.67"));
  EXPECT_THAT(all, ::testing::Not(HasSubstr("MISS")));
}

TEST(SweepFindingsTest, ARingSlowerThanItsPredictionMissesTheRatio) {
  std::vector<SweepPoint> cells = ModelCells();
  for (SweepPoint& p : cells) {
    if (p.layout == "ring") p.sync_s *= 2;
  }
  const std::vector<std::string> lines =
      SweepFindings(cells, LinkModel{0, kBps}, kRate, SweepOptions{});
  EXPECT_THAT(lines, Contains(HasSubstr("MISS (c)")));
  // (b) compares the ring with itself: still its model's shape.
  EXPECT_THAT(lines, Contains(HasSubstr("PASS (b)")));
}

TEST(SweepFindingsTest, NoCellsNoFindings) {
  EXPECT_TRUE(
      SweepFindings({}, LinkModel{0, kBps}, kRate, SweepOptions{}).empty());
}

}  // namespace
}  // namespace study
}  // namespace gradsync
