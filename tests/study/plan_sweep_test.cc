// The workload from a model profile (compute from FLOPs or given), the
// buckets, and `gradsync plan`'s sweep: its cells, its best layout, K*
// against a brute-force search, and its run time at 1,024 workers.
#include "study/sim/plan_sweep.h"

#include <chrono>
#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "study/model_profiles.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace sim {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::IsOkAndHolds;
using ::gradsync::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

void ExpectClose(double got, double want) {
  EXPECT_NEAR(got, want, 1e-9 * std::abs(want)) << "want " << want;
}

TEST(WorkloadTest, FromFlops_BackwardIsTwiceTheForward) {
  // 1e9 multiply-adds per sample at 2 TFLOP/s sustained, batch 4:
  // forward 2 * 1e9 * 4 / 2e12 = 4 ms, backward 8 ms.
  std::vector<ProfileTensor> tensors = {{"w", 1000, 1e9}, {"b", 10, 0}};
  ProfileCompute compute;
  compute.batch = 4;
  compute.sustained_tflops = 2;
  absl::StatusOr<SimWorkload> w = WorkloadFromProfile(tensors, compute);
  ASSERT_THAT(w, IsOk());
  ExpectClose(w->forward_s, 4e-3);
  ExpectClose(w->layers[0].backward_s, 8e-3);
  EXPECT_EQ(w->layers[1].backward_s, 0);
  EXPECT_EQ(w->elements(), 1010);
}

TEST(WorkloadTest, GivenBackward_IsSpreadByFlopShare) {
  std::vector<ProfileTensor> tensors = {{"a", 100, 3e6}, {"b", 100, 1e6}};
  ProfileCompute compute;
  compute.backward_total_s = 0.4;
  compute.scale = 0.5;
  absl::StatusOr<SimWorkload> w = WorkloadFromProfile(tensors, compute);
  ASSERT_THAT(w, IsOk());
  ExpectClose(w->layers[0].backward_s, 0.3);
  ExpectClose(w->layers[1].backward_s, 0.1);
  EXPECT_EQ(w->forward_s, 0);
  EXPECT_EQ(w->layers[0].elements, 50);
}

TEST(WorkloadTest, BadCompute_IsInvalidArgument) {
  std::vector<ProfileTensor> tensors = {{"a", 100, 3e6}};
  EXPECT_THAT(
      WorkloadFromProfile(tensors, ProfileCompute{}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no compute")));
  ProfileCompute scaled;
  scaled.backward_total_s = 1;
  scaled.scale = 2;
  EXPECT_THAT(WorkloadFromProfile(tensors, scaled),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(GpuPeakTflops("tpu"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a100")));
  ASSERT_THAT(GpuPeakTflops("H100"), IsOk());
}

TEST(WorkloadTest, Buckets_AreCutFromTheEndWithTheirReadyTimes) {
  SimWorkload w;
  w.layers = {{"a", 5, 1.0}, {"b", 5, 2.0}};  // b final at 2 s, a at 3 s
  const GradientTimeline timeline(w);
  const std::vector<GradRange> b = CutBuckets(timeline, 4, 2);
  ASSERT_EQ(b.size(), 3u);  // 2, then 4, then 4 elements
  EXPECT_EQ(b[0].begin, 8);
  EXPECT_EQ(b[0].end, 10);
  EXPECT_EQ(b[1].begin, 4);
  EXPECT_EQ(b[2].begin, 0);
  ExpectClose(b[0].ready_s, 2.0);
  ExpectClose(b[1].ready_s, 3.0);  // element 4 is a's
  ExpectClose(b[2].ready_s, 3.0);
}

TEST(PlanSweepTest, ServerCounts_ArePowersOfTwoAndTheTop) {
  EXPECT_THAT(PowersOfTwo(8, 100), ElementsAre(8, 16, 32, 64));
  EXPECT_THAT(ServerCounts(1, 6), ElementsAre(1, 2, 4, 6));
  EXPECT_THAT(ServerCounts(3, 3), ElementsAre(3));
}

PlanRequest SmallRequest() {
  PlanRequest request;
  request.base.topology.nic_Bps = 1.25e9;  // 10 Gbit/s
  request.base.calibration.alpha_s = 2e-5;
  SimWorkload w;
  w.layers = {{"a", 4 << 20, 0.002}, {"b", 4 << 20, 0.002}};
  request.workload = w;
  return request;
}

TEST(PlanSweepTest, KStar_IsTheFewestSeparateServersAsFastAsTheRing) {
  PlanRequest request = SmallRequest();
  request.workers = {8, 12};
  request.layouts = {SimLayout::kRing, SimLayout::kPsSeparate};
  // 1 MiB partitions divide every slice evenly at K = 2^k.
  request.base.partition_bytes = 1 << 20;
  absl::StatusOr<std::vector<PlanRow>> rows = RunPlan(request);
  ASSERT_THAT(rows, IsOk());
  ASSERT_EQ(rows->size(), 2u);
  for (const PlanRow& row : *rows) {
    // Brute force over every K.
    int want = 0;
    for (int k = 1; k <= row.workers && want == 0; ++k) {
      SimConfig c = request.base;
      c.layout = SimLayout::kPsSeparate;
      c.topology.workers = row.workers;
      c.servers = k;
      absl::StatusOr<SimResult> r = SimulateStep(c, request.workload);
      ASSERT_THAT(r, IsOk());
      if (r->step_s <= row.ring_s) want = k;
    }
    EXPECT_EQ(row.k_star, want) << "N = " << row.workers;
    EXPECT_GT(want, 0);
    // The best cell is the fastest one.
    for (const PlanCell& c : row.cells) {
      EXPECT_LE(row.cells[row.best].step_s, c.step_s);
    }
  }
}

TEST(PlanSweepTest, NoCellAtSomeN_IsInvalidArgument) {
  PlanRequest request = SmallRequest();
  request.workers = {2, 8};
  request.layouts = {SimLayout::kPsColocated};
  request.min_servers = 4;  // N = 2 has 2 nodes
  EXPECT_THAT(RunPlan(request),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("nothing to simulate at N = 2")));
  request.workers = {};
  EXPECT_THAT(RunPlan(request), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(PlanSweepTest, Bottleneck_NamesComputeLatencyOrTheLink) {
  SimConfig c;
  c.topology.workers = 64;
  c.topology.nic_Bps = 1.25e9;
  c.calibration.alpha_s = 1e-3;
  SimWorkload w;
  w.layers = {{"a", 1 << 10, 1.0}};  // 4 KiB: 126 alphas, no bytes
  absl::StatusOr<SimResult> r = SimulateStep(c, w);
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(FindBottleneck(c, w, *r), IsOkAndHolds("latency (alpha)"));
  w.layers = {{"a", 64 << 20, 1e-3}};  // 256 MiB in one bucket: bytes
  c.bucket_bytes = 1 << 30;
  r = SimulateStep(c, w);
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(FindBottleneck(c, w, *r), IsOkAndHolds("node NIC out"));
  // A long backward and a small bucket at the end: hidden.
  w.layers = {{"a", 1 << 10, 10.0}, {"b", 1 << 10, 10.0}};
  c.bucket_bytes = 4096;
  r = SimulateStep(c, w);
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(FindBottleneck(c, w, *r), IsOkAndHolds("compute"));
}

TEST(PlanSweepTest, BertLargeAt1024Workers_AnswersInSeconds) {
  absl::StatusOr<std::vector<ProfileTensor>> tensors =
      ModelProfile("bert-large");
  ASSERT_THAT(tensors, IsOk());
  ProfileCompute compute;
  compute.sustained_tflops = 100;
  PlanRequest request;
  absl::StatusOr<SimWorkload> w = WorkloadFromProfile(*tensors, compute);
  ASSERT_THAT(w, IsOk());
  request.workload = *w;
  request.workers = PowersOfTwo(8, 1024);
  request.base.topology.gpus_per_node = 8;
  request.base.topology.nic_Bps = 100e9 / 8;
  request.base.topology.intra_Bps = 300e9;
  request.base.grad_bytes_per_element = 2;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<PlanRow>> rows = RunPlan(request);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_THAT(rows, IsOk());
  ASSERT_EQ(rows->size(), 8u);
  EXPECT_LT(seconds, 30) << "the whole sweep, at -O1 under a test runner";
  for (const PlanRow& row : *rows) {
    EXPECT_GT(row.ring_s, 0);
    EXPECT_GT(row.hierarchical_s, 0);
    // More nodes never make hierarchical faster than its own compute.
    EXPECT_GE(row.hierarchical_s, w->forward_s + w->backward_s());
  }
}

}  // namespace
}  // namespace sim
}  // namespace gradsync
