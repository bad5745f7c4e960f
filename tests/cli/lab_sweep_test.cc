// The sweep's grid, its per-cell summary of a job's metrics, and the
// report against the alpha-beta model, on crafted and recorded data.
#include "cli/lab/lab_sweep.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "cli/lab/lab_probe.h"
#include "cli/lab/lab_report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace lab {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kMiB = 1 << 20;

TEST(LabSweepTest, ShardTokensResolvePerN) {
  EXPECT_THAT(*ResolveShards("N", 6), ElementsAre(6));
  EXPECT_THAT(*ResolveShards("N/2", 6), ElementsAre(3));
  EXPECT_THAT(*ResolveShards("N/2", 1), ElementsAre(1));
  EXPECT_THAT(*ResolveShards("all", 3), ElementsAre(1, 2, 3));
  EXPECT_THAT(*ResolveShards("2", 8), ElementsAre(2));
  EXPECT_THAT(ResolveShards("0", 8),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("shard count '0'")));
  EXPECT_THAT(ResolveShards("N*2", 8),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(LabSweepTest, GridSkipsWhatTheLabCannotRunAndSaysWhy) {
  LabConfig lab;
  lab.worker_hosts = 4;
  lab.ps_hosts = 2;
  SweepGrid grid;
  grid.workers = {2, 4, 6};
  grid.shards = {"1", "N"};
  grid.bytes = {kMiB};
  grid.layouts = {SyncLayout::kRing, SyncLayout::kPsSeparate,
                  SyncLayout::kPsColocated};
  std::vector<std::string> skipped;
  absl::StatusOr<std::vector<CellSpec>> cells = ExpandGrid(grid, lab, &skipped);
  ASSERT_THAT(cells, IsOk());
  // N = 2: ring, ps K=1, ps K=2; N = 4: ring, ps K=1 (K=4 > 2 hosts).
  std::vector<std::string> names;
  for (const CellSpec& c : *cells) {
    names.push_back(
        absl::StrCat(SyncLayoutName(c.layout), c.workers, "/", c.shards));
    EXPECT_EQ(c.rate_bps, lab.link.rate_bps);
  }
  EXPECT_THAT(names,
              ElementsAre("ring2/0", "ps2/1", "ps2/2", "ring4/0", "ps4/1"));
  EXPECT_THAT(skipped, Contains(HasSubstr("N = 6: the lab has 4 workers")));
  EXPECT_THAT(skipped, Contains(HasSubstr("ps N = 4 K = 4: the lab has 2 "
                                          "server hosts")));
  EXPECT_THAT(skipped, Contains(HasSubstr("lab up --colocate-ps")));
}

TEST(LabSweepTest, CellJobIsOneBucketOfSyntheticGradient) {
  CellSpec cell{SyncLayout::kPsColocated, 4, 2, 16 * kMiB, 1'000'000'000};
  SweepOptions options;
  options.warmup_steps = 2;
  options.measured_steps = 5;
  const JobSpec spec = CellJobSpec(cell, options);
  EXPECT_EQ(spec.model().kind(), "synthetic");
  EXPECT_EQ(spec.model().synthetic_floats(), 4 * kMiB);
  EXPECT_EQ(spec.num_workers(), 4);
  EXPECT_EQ(spec.steps(), 7);
  EXPECT_EQ(spec.bucket_bytes(), 16 * kMiB);
  EXPECT_EQ(spec.mode(), SYNC_MODE_PS);
  EXPECT_EQ(spec.ps().shards(), 2);
  EXPECT_EQ(spec.ps().placement(), "colocated");
  EXPECT_EQ(spec.name(), "lab-ps-colocated-n4-k2-16MiB");
  cell.layout = SyncLayout::kRing;
  EXPECT_EQ(CellJobSpec(cell, options).mode(), SYNC_MODE_RING);
}

StepMetrics Step(int rank, int64_t step, double sync_s, double step_s,
                 double wall) {
  StepMetrics m;
  m.set_rank(rank);
  m.set_step(step);
  m.set_sync_busy_s(sync_s);
  m.set_step_s(step_s);
  m.set_wall_time(wall);
  return m;
}

TEST(LabSweepTest, CellTimeIsTheMedianOverStepsOfTheSlowestRank) {
  GetMetricsResponse metrics;
  // Warm-up steps 0 and 1 are slow and left out.
  for (int rank : {0, 1}) {
    *metrics.add_metrics() = Step(rank, 0, 9.0, 9.0, 100);
    *metrics.add_metrics() = Step(rank, 1, 9.0, 9.0, 110);
  }
  // Steps 2..4: rank 1 is the slower one in steps 2 and 3.
  *metrics.add_metrics() = Step(0, 2, 0.10, 0.12, 120);
  *metrics.add_metrics() = Step(1, 2, 0.30, 0.31, 120);
  *metrics.add_metrics() = Step(0, 3, 0.20, 0.22, 121);
  *metrics.add_metrics() = Step(1, 3, 0.25, 0.26, 121);
  *metrics.add_metrics() = Step(0, 4, 0.40, 0.41, 122);
  *metrics.add_metrics() = Step(1, 4, 0.10, 0.11, 122);
  // Step 5 came from one rank only: incomplete, left out.
  *metrics.add_metrics() = Step(0, 5, 5.0, 5.0, 123);
  SweepCell cell;
  ASSERT_THAT(SummariseCell(metrics, 2, 2, &cell), IsOk());
  EXPECT_EQ(cell.measured_steps(), 3);
  EXPECT_THAT(cell.sync_samples_s(), ElementsAre(0.30, 0.25, 0.40));
  EXPECT_DOUBLE_EQ(cell.sync_s(), 0.30);
  EXPECT_DOUBLE_EQ(cell.step_s(), 0.31);
}

TEST(LabSweepTest, CellWithoutMeasuredStepsIsAnError) {
  GetMetricsResponse metrics;
  *metrics.add_metrics() = Step(0, 0, 1, 1, 1);
  SweepCell cell;
  cell.set_job_id("job-3");
  EXPECT_THAT(SummariseCell(metrics, 1, 2, &cell),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("job job-3 reported no step after its 2")));
}

// Cells measured exactly as a known model predicts, times `noise`.
SweepResults ModelSweep(const LinkModel& truth, bool pipelined,
                        const std::vector<int>& ns, double noise) {
  SweepResults results;
  int i = 0;
  for (int n : ns) {
    for (int64_t bytes : {4 * kMiB, 16 * kMiB}) {
      std::vector<std::pair<SyncLayout, int>> layouts = {
          {SyncLayout::kRing, 0}};
      for (int k = 1; k <= n; ++k) {
        layouts.push_back({SyncLayout::kPsSeparate, k});
      }
      for (const auto& [layout, k] : layouts) {
        SweepCell* cell = results.add_cells();
        cell->set_layout(std::string(SyncLayoutName(layout)));
        cell->set_workers(n);
        cell->set_shards(k);
        cell->set_bytes(bytes);
        cell->set_rate_bps(1'000'000'000);
        cell->set_link_ok(true);
        cell->set_measured_steps(8);
        SyncCase c{layout,    n, std::max(1, k), static_cast<double>(bytes),
                   pipelined, 0};
        // Alternate the sign of the noise so it does not bias the fit.
        const double sign = (i++ % 2 == 0) ? 1 : -1;
        cell->set_sync_s(PredictSeconds(c, truth) * (1 + sign * noise));
      }
    }
  }
  return results;
}

TEST(LabReportTest, ExactCellsFitBackTheirModelAndPassEveryFinding) {
  const LinkModel truth{0.0002, 118e6};
  for (bool pipelined : {false, true}) {
    SweepResults results = ModelSweep(truth, pipelined, {2, 4, 6, 8}, 0);
    ReportOptions options;
    options.pipelined_ps = pipelined;
    ASSERT_THAT(AnalyseSweep(&results, options), IsOk());
    EXPECT_NEAR(results.alpha_s(), truth.alpha_s, 1e-9);
    EXPECT_NEAR(results.bandwidth_bps(), truth.bandwidth_Bps, 1e-3);
    EXPECT_NEAR(results.mean_abs_error(), 0, 1e-9);
    const std::string findings = absl::StrJoin(results.findings(), "\n");
    EXPECT_THAT(findings, HasSubstr("PASS fidelity"));
    EXPECT_THAT(findings, HasSubstr("PASS (a)"));
    EXPECT_THAT(findings, HasSubstr("PASS (b)"));
    EXPECT_THAT(findings, HasSubstr("PASS (c)"));
    EXPECT_THAT(findings, HasSubstr("PASS (d)"));
    EXPECT_THAT(findings, ::testing::Not(HasSubstr("MISS")));
    if (pipelined) {
      // N = 8: K* = 64/14 = 4.57 lies between the measured K.
      EXPECT_THAT(findings, HasSubstr("N=8: crossover K* observed"));
    } else {
      EXPECT_THAT(findings, HasSubstr("never reaches the ring"));
    }
  }
}

TEST(LabReportTest, ErrorsAreRelativeAndTheLargestIsNamed) {
  SweepResults results =
      ModelSweep({0.0002, 118e6}, true, {2, 4}, /*noise=*/0.05);
  ASSERT_THAT(AnalyseSweep(&results, {true}), IsOk());
  // The fit spreads +-5% noise over the cells: on average they miss by
  // the noise, none by much more.
  EXPECT_NEAR(results.mean_abs_error(), 0.05, 0.01);
  EXPECT_LT(results.max_abs_error(), 0.09);
  EXPECT_THAT(results.findings(0), StartsWith("PASS fidelity: mean |error| "));
  for (const SweepCell& c : results.cells()) {
    EXPECT_LT(std::abs(c.relative_error()), 0.09) << c.layout();
    EXPECT_GT(c.predicted_s(), 0);
  }
}

TEST(LabReportTest, CpuBoundAndFailedCellsStayOutOfTheFitAndAreNamed) {
  SweepResults results = ModelSweep({0.0002, 118e6}, true, {2, 4}, 0);
  // A cell three times slower than the links allow, with busy CPUs.
  SweepCell* slow = results.mutable_cells(0);
  slow->set_sync_s(3 * slow->sync_s());
  slow->set_cpu_busy(0.97);
  slow->set_cpu_bound(true);
  SweepCell* failed = results.mutable_cells(1);
  failed->set_error("job job-9 ended JOB_STATE_FAILED: boom");
  failed->set_sync_s(0);
  ASSERT_THAT(AnalyseSweep(&results, {true}), IsOk());
  EXPECT_NEAR(results.mean_abs_error(), 0, 1e-9);  // the rest are exact
  EXPECT_EQ(results.fitted_cells(), results.cells_size() - 2);
  const std::string findings = absl::StrJoin(results.findings(), "\n");
  EXPECT_THAT(findings, HasSubstr("left out of the fit: ring N=2 S=4 MiB "
                                  "(CPU-bound, 97% busy), ps N=2 K=1 S=4 MiB "
                                  "(failed)"));
  EXPECT_THAT(findings, HasSubstr("note: ring N=2 S=4 MiB is off by -67%: "
                                  "CPU-bound: the CPUs were 97% busy"));
}

TEST(LabReportTest, AModelThatDoesNotHoldMisses) {
  // Measured as if the PS were pipelined, reported as if it were not.
  SweepResults results = ModelSweep({0.0002, 118e6}, true, {2, 4, 6, 8}, 0);
  ASSERT_THAT(AnalyseSweep(&results, {false}), IsOk());
  EXPECT_GT(results.max_abs_error(), 0.2);
  EXPECT_THAT(results.findings(0), StartsWith("MISS fidelity"));
}

TEST(LabReportTest, PathsThatUseTheLinkDifferentlyGetAFitEach) {
  // The ring at 95% of the link, the PS at 75%: one joint B fits neither,
  // fitted apart each is exact, and the line says so.
  const LinkModel ring{0.0003, 0.95 * 125e6};
  const LinkModel ps{0, 0.75 * 125e6};
  SweepResults results = ModelSweep(ring, true, {2, 4, 6, 8}, 0);
  for (SweepCell& c : *results.mutable_cells()) {
    if (c.layout() == "ring") continue;
    SyncCase sc{SyncLayout::kPsSeparate,        c.workers(), c.shards(),
                static_cast<double>(c.bytes()), true,        0};
    c.set_sync_s(PredictSeconds(sc, ps));
  }
  ASSERT_THAT(AnalyseSweep(&results, {true}), IsOk());
  EXPECT_GT(results.mean_abs_error(), 0.05);
  const std::string findings = absl::StrJoin(results.findings(), "\n");
  EXPECT_THAT(findings,
              HasSubstr("fit per layout: ps B = 750 Mbit/s (75.0%), alpha = 0 "
                        "us, mean |error| 0.0% over 40 cells; ring B = 950 "
                        "Mbit/s (95.0%), alpha = 300 us, mean |error| 0.0% "
                        "over 8 cells"));
}

TEST(LabReportTest, OneLayoutOrTooFewCellsGetNoPerLayoutFit) {
  SweepResults results = ModelSweep({0.0002, 118e6}, true, {2}, 0);
  ASSERT_THAT(AnalyseSweep(&results, {true}), IsOk());
  // Two ring cells: too few to fit alpha and B apart.
  EXPECT_THAT(absl::StrJoin(results.findings(), "\n"),
              ::testing::Not(HasSubstr("ring B =")));
  SweepResults ring_only;
  const SweepResults all = ModelSweep({0.0002, 118e6}, true, {2, 4, 8}, 0);
  for (const SweepCell& c : all.cells()) {
    if (c.layout() == "ring") *ring_only.add_cells() = c;
  }
  ASSERT_THAT(AnalyseSweep(&ring_only, {true}), IsOk());
  EXPECT_THAT(absl::StrJoin(ring_only.findings(), "\n"),
              ::testing::Not(HasSubstr("fit per layout")));
}

TEST(LabReportTest, AFitAboveTheLinksIsHeldAtTheirPayloadRate) {
  // Cells that put B at 1200 Mbit/s on 1 Gbit/s links, traded against a
  // 30 ms alpha: nothing moves that fast, so B is the links' TCP payload
  // rate and alpha is fitted alone.
  const LinkModel impossible{0.03, 150e6};
  SweepResults results = ModelSweep(impossible, true, {8}, 0);
  ASSERT_THAT(AnalyseSweep(&results, {true}), IsOk());
  const double payload_Bps = ExpectedGoodput(1e9, kLabMss, kLabMtu) / 8;
  EXPECT_DOUBLE_EQ(results.bandwidth_bps(), payload_Bps);
  EXPECT_GE(results.alpha_s(), 0);
  EXPECT_LT(results.alpha_s(), impossible.alpha_s);
  const LinkModel held{results.alpha_s(), payload_Bps};
  for (const SweepCell& c : results.cells()) {
    EXPECT_DOUBLE_EQ(
        c.predicted_s(),
        PredictSeconds(SyncCost{c.latency_terms(), c.link_bytes()}, held))
        << c.layout() << " N=" << c.workers() << " K=" << c.shards();
  }
  EXPECT_THAT(
      absl::StrJoin(results.findings(), "\n"),
      HasSubstr("(956 Mbit/s, 95.6% of the 1000 Mbit/s links; TCP/IP headers "
                "leave 95.6%) (held at the links' payload rate: alone, these "
                "cells put B at 1200 Mbit/s with alpha = 30000 us, above what "
                "the links carry; they do not separate alpha from B)"));
  EXPECT_THAT(absl::StrJoin(results.findings(), "\n"),
              HasSubstr("fit per layout: ps B held at 956 Mbit/s (95.6%, the "
                        "links' payload; alone 1200 Mbit/s), alpha = "));
}

TEST(LabReportTest, TheModelsCrossoverCountsAlphaOncePerPipelineStage) {
  // One size, N = 8, K = 1..8, 128 KiB partitions, exact cells of a model
  // with a large alpha: a PS step has P + 1 of them (P partitions per
  // server), so the model's K* is where the cells' predictions cross the
  // ring's, and the observed K* (interpolated between measured K) is close.
  const LinkModel truth{0.016, 11e6};
  constexpr int64_t kBytes = 16 * kMiB;
  constexpr int64_t kPartition = 128 << 10;
  SweepResults results;
  for (int k = 0; k <= 8; ++k) {
    SweepCell* cell = results.add_cells();
    const SyncLayout layout =
        k == 0 ? SyncLayout::kRing : SyncLayout::kPsSeparate;
    cell->set_layout(std::string(SyncLayoutName(layout)));
    cell->set_workers(8);
    cell->set_shards(k);
    cell->set_bytes(kBytes);
    cell->set_rate_bps(100'000'000);
    cell->set_partition_bytes(k == 0 ? 0 : kPartition);
    cell->set_link_ok(true);
    cell->set_measured_steps(8);
    SyncCase c{layout,         8,
               std::max(1, k), static_cast<double>(kBytes),
               true,           k == 0 ? 0.0 : static_cast<double>(kPartition)};
    cell->set_sync_s(PredictSeconds(c, truth));
  }
  ASSERT_THAT(AnalyseSweep(&results, {true}), IsOk());
  EXPECT_NEAR(results.alpha_s(), truth.alpha_s, 1e-9);
  std::string line;
  for (const std::string& f : results.findings()) {
    if (f.find("(d)") != std::string::npos) line = f;
  }
  double seen = 0, model = 0;
  ASSERT_EQ(std::sscanf(line.c_str() + line.find("K* observed"),
                        "K* observed %lf, model %lf", &seen, &model),
            2)
      << line;
  EXPECT_THAT(line, StartsWith("PASS (d)"));
  EXPECT_NEAR(model, seen, 0.2) << line;
  // Between K = 5 and 6 the exact PS cells pass below the exact ring.
  EXPECT_GT(model, 5);
  EXPECT_LT(model, 6);
}

TEST(LabReportTest, NothingTrustedIsAnError) {
  SweepResults results = ModelSweep({0.0002, 118e6}, true, {2}, 0);
  for (SweepCell& c : *results.mutable_cells()) c.set_link_ok(false);
  EXPECT_THAT(AnalyseSweep(&results, {true}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no cell can be trusted")));
}

TEST(LabReportTest, CsvHasARowPerCell) {
  SweepResults results = ModelSweep({0.0002, 118e6}, true, {2}, 0);
  ASSERT_THAT(AnalyseSweep(&results, {true}), IsOk());
  const std::string csv = SweepCsv(results);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), results.cells_size() + 1);
  EXPECT_THAT(csv, StartsWith("layout,workers,shards,bytes,rate_bps,"));
  EXPECT_THAT(FormatSweepReport(results), HasSubstr("MEASURED ms"));
}

}  // namespace
}  // namespace lab
}  // namespace gradsync
