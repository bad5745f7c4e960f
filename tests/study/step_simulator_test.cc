// The step simulator against hand-computed cases and the alpha-beta model
// of study/alpha_beta/sync_model.h in its limits: one bucket on one link, the
// ring, halving-doubling and hierarchical all-reduce with no compute, overlap
// with a long backward, and 16-bit gradients. The PS cases are in
// ps_model_test.cc.
#include "study/sim/step_simulator.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "study/alpha_beta/sync_model.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace sim {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

constexpr double kMiB = 1 << 20;
constexpr double kAlpha = 1e-3;
constexpr double kRate = 100 * kMiB;  // B, bytes/s each way

void ExpectClose(double got, double want) {
  EXPECT_NEAR(got, want, 1e-9 * std::abs(want)) << "want " << want;
}

// Layers of `elements` each (fp32 unless the config says otherwise), each
// taking `backward_s` of backward; no forward.
SimWorkload Layers(std::vector<int64_t> elements, double backward_s = 0) {
  SimWorkload w;
  for (size_t i = 0; i < elements.size(); ++i) {
    w.layers.push_back({"layer" + std::to_string(i), elements[i], backward_s});
  }
  return w;
}

// N workers, one per node, on links of kRate with alpha kAlpha, no CPU
// cost, buckets large enough for everything.
SimConfig Cluster(SimLayout layout, int workers) {
  SimConfig c;
  c.layout = layout;
  c.topology.workers = workers;
  c.topology.gpus_per_node = 1;
  c.topology.nic_Bps = kRate;
  c.calibration.alpha_s = kAlpha;
  c.calibration.intra_alpha_s = kAlpha / 10;
  c.calibration.plane_cpu_s_per_byte = 0;
  c.calibration.grpc_cpu_s_per_byte = 0;
  c.bucket_bytes = 1 << 30;
  return c;
}

TEST(StepSimulatorTest, OneBucketOneLink_IsBackwardThenTheRing) {
  // N = 2: 2 steps of S/2 over each link: 2 (alpha + S/(2B)).
  const double s = 4 * kMiB;
  absl::StatusOr<SimResult> r =
      SimulateStep(Cluster(SimLayout::kRing, 2), Layers({int64_t(s / 4)}, 0.5));
  ASSERT_THAT(r, IsOk());
  const double sync = 2 * (kAlpha + s / (2 * kRate));
  ExpectClose(r->backward_s, 0.5);
  ExpectClose(r->step_s, 0.5 + sync);
  ExpectClose(r->exposed_comm_s, sync);
  const ResourceUsage* busiest = r->Busiest();
  ASSERT_NE(busiest, nullptr);
  ExpectClose(busiest->bytes_per_copy, s);  // 2 (N-1)/N S
}

TEST(StepSimulatorTest, Ring_NoCompute_MatchesAlphaBeta) {
  for (int n : {2, 3, 8, 64}) {
    const double s = 16 * kMiB;
    absl::StatusOr<SimResult> r =
        SimulateStep(Cluster(SimLayout::kRing, n), Layers({int64_t(s / 4)}));
    ASSERT_THAT(r, IsOk());
    // 2(N-1)(alpha + S/(N B)), as study/alpha_beta/sync_model.h has it.
    SyncCase ring;
    ring.workers = n;
    ring.bytes = s;
    ExpectClose(r->step_s, 2 * (n - 1) * (kAlpha + s / (n * kRate)));
    ExpectClose(r->step_s, PredictSeconds(ring, {kAlpha, kRate}));
    ExpectClose(r->Busiest()->bytes_per_copy, ModelCost(ring).link_bytes);
  }
}

TEST(StepSimulatorTest, Ring_SeveralBuckets_RunOneAfterAnother) {
  // 3 buckets of 1 MiB, all ready at once: each pays its own alphas.
  SimConfig c = Cluster(SimLayout::kRing, 4);
  c.bucket_bytes = kMiB;
  absl::StatusOr<SimResult> r = SimulateStep(c, Layers({3 * (1 << 18)}));
  ASSERT_THAT(r, IsOk());
  ExpectClose(r->step_s, 3 * 2 * 3 * (kAlpha + kMiB / (4 * kRate)));
}

TEST(StepSimulatorTest, SingleWorker_SynchronisesNothing) {
  absl::StatusOr<SimResult> r =
      SimulateStep(Cluster(SimLayout::kRing, 1), Layers({1000}, 2));
  ASSERT_THAT(r, IsOk());
  ExpectClose(r->step_s, 2);
  EXPECT_EQ(r->exposed_comm_s, 0);
}

TEST(StepSimulatorTest, HalvingDoubling_PowerOfTwo_MatchesFormula) {
  // 2 log2 N steps; the bytes of a ring: 2 (N-1)/N S.
  const double s = 8 * kMiB;
  absl::StatusOr<SimResult> r = SimulateStep(
      Cluster(SimLayout::kHalvingDoubling, 8), Layers({int64_t(s / 4)}));
  ASSERT_THAT(r, IsOk());
  ExpectClose(r->step_s, 6 * kAlpha + 2 * 7.0 / 8 * s / kRate);
}

TEST(StepSimulatorTest, HalvingDoubling_SixRanks_FoldsAndUnfolds) {
  // P = 4, E = 2: a fold of S, halving S/2 and S/4, doubling S/4 and S/2,
  // an unfold of S: 6 steps, 3.5 S.
  const double s = 8 * kMiB;
  absl::StatusOr<SimResult> r = SimulateStep(
      Cluster(SimLayout::kHalvingDoubling, 6), Layers({int64_t(s / 4)}));
  ASSERT_THAT(r, IsOk());
  ExpectClose(r->step_s, 6 * kAlpha + 3.5 * s / kRate);
}

TEST(StepSimulatorTest, Hierarchical_FastIntraLinks_MatchesFormula) {
  // N = 16 on M = 4 nodes of G = 4:
  //   2(G-1)(alpha_i + S/(G B_i)) + 2(M-1)(alpha + S/(M B)).
  const int g = 4, m = 4;
  const double intra = 40 * kRate;
  const double s = 64 * kMiB;
  SimConfig c = Cluster(SimLayout::kHierarchical, g * m);
  c.topology.gpus_per_node = g;
  c.topology.intra_Bps = intra;
  absl::StatusOr<SimResult> r = SimulateStep(c, Layers({int64_t(s / 4)}));
  ASSERT_THAT(r, IsOk());
  const double alpha_i = c.calibration.intra_alpha_s;
  ExpectClose(r->step_s, 2 * (g - 1) * (alpha_i + s / (g * intra)) +
                             2 * (m - 1) * (kAlpha + s / (m * kRate)));
  // Every node's NIC carries the ring over nodes: 2(M-1)/M S each way.
  for (const ResourceUsage& u : r->links) {
    if (u.name == "node NIC out") ExpectClose(u.bytes_per_copy, 1.5 * s);
  }
}

TEST(StepSimulatorTest, FlatRingOverNodes_IsBoundByTheSlowerHop) {
  // 8 GPUs on 2 nodes: every step sends S/N across the NIC and inside.
  SimConfig c = Cluster(SimLayout::kRing, 8);
  c.topology.gpus_per_node = 4;
  c.topology.intra_Bps = 10 * kRate;
  const double s = 8 * kMiB;
  absl::StatusOr<SimResult> r = SimulateStep(c, Layers({int64_t(s / 4)}));
  ASSERT_THAT(r, IsOk());
  ExpectClose(r->step_s, 14 * (kAlpha + s / (8 * kRate)));
}

TEST(StepSimulatorTest, Overlap_LongBackward_ExposesOnlyTheLastBucket) {
  // Three layers of 1 MiB, one bucket each, 1 s of backward each: every
  // bucket but the last syncs under the backward of the layers below it.
  SimConfig c = Cluster(SimLayout::kRing, 4);
  c.bucket_bytes = kMiB;
  absl::StatusOr<SimResult> r =
      SimulateStep(c, Layers({1 << 18, 1 << 18, 1 << 18}, 1.0));
  ASSERT_THAT(r, IsOk());
  const double bucket = 2 * 3 * (kAlpha + kMiB / (4 * kRate));
  ASSERT_LT(bucket, 1.0);
  ExpectClose(r->backward_s, 3);
  ExpectClose(r->exposed_comm_s, bucket);
  ExpectClose(r->step_s, 3 + bucket);
}

TEST(StepSimulatorTest, Overlap_ShortBackward_QueuesTheBuckets) {
  // Backward of 1 ms per layer, buckets of 100+ ms: they queue, and the
  // step is the first bucket's ready time plus three syncs.
  SimConfig c = Cluster(SimLayout::kRing, 4);
  c.bucket_bytes = kMiB;
  absl::StatusOr<SimResult> r =
      SimulateStep(c, Layers({1 << 18, 1 << 18, 1 << 18}, 1e-3));
  ASSERT_THAT(r, IsOk());
  const double bucket = 2 * 3 * (kAlpha + kMiB / (4 * kRate));
  ExpectClose(r->step_s, 1e-3 + 3 * bucket);
}

TEST(StepSimulatorTest, FirstBucketCap_SplitsOffTheLastLayersEarly) {
  // DDP's small first bucket: 1 MiB then 3 MiB; the small one syncs under
  // the backward of the layer below, only the large one is exposed.
  SimConfig c = Cluster(SimLayout::kRing, 2);
  c.bucket_bytes = 3 * kMiB;
  c.first_bucket_bytes = kMiB;
  absl::StatusOr<SimResult> r =
      SimulateStep(c, Layers({3 << 18, 1 << 18}, 1.0));
  ASSERT_THAT(r, IsOk());
  ExpectClose(r->exposed_comm_s, 2 * (kAlpha + 3 * kMiB / (2 * kRate)));
}

TEST(StepSimulatorTest, SixteenBitGradients_HalveTheBytesTerm) {
  const int n = 8;
  const int64_t elements = 4 << 20;
  SimConfig c = Cluster(SimLayout::kRing, n);
  absl::StatusOr<SimResult> fp32 = SimulateStep(c, Layers({elements}));
  c.grad_bytes_per_element = 2;
  absl::StatusOr<SimResult> bf16 = SimulateStep(c, Layers({elements}));
  ASSERT_THAT(fp32, IsOk());
  ASSERT_THAT(bf16, IsOk());
  const double latency = 2 * (n - 1) * kAlpha;
  ExpectClose(bf16->step_s - latency, (fp32->step_s - latency) / 2);
  ExpectClose(bf16->gradient_bytes, 2.0 * elements);
}

TEST(StepSimulatorTest, LinkEfficiency_ScalesTheRate) {
  SimConfig c = Cluster(SimLayout::kRing, 2);
  c.calibration.link_efficiency = 0.5;
  c.calibration.alpha_s = 0;
  absl::StatusOr<SimResult> r = SimulateStep(c, Layers({1 << 20}));
  ASSERT_THAT(r, IsOk());
  ExpectClose(r->step_s, 4 * kMiB / (0.5 * kRate));
}

TEST(StepSimulatorTest, Timeline_HasComputeAndEveryStep) {
  SimConfig c = Cluster(SimLayout::kRing, 2);
  c.bucket_bytes = kMiB;
  absl::StatusOr<SimResult> r =
      SimulateStep(c, Layers({1 << 18, 1 << 18}, 0.25));
  ASSERT_THAT(r, IsOk());
  int compute = 0, sync = 0;
  for (const TimelineEvent& e : r->timeline) {
    EXPECT_LE(e.start_s, e.end_s) << e.name;
    (e.lane == "compute" ? compute : sync)++;
  }
  EXPECT_EQ(compute, 2);
  EXPECT_EQ(sync, 2);  // one ring group per bucket
  c.record_timeline = false;
  r = SimulateStep(c, Layers({1 << 18, 1 << 18}, 0.25));
  ASSERT_THAT(r, IsOk());
  EXPECT_TRUE(r->timeline.empty());
}

TEST(StepSimulatorTest, BadConfig_IsInvalidArgument) {
  SimConfig c = Cluster(SimLayout::kRing, 6);
  c.topology.gpus_per_node = 4;
  c.topology.intra_Bps = kRate;
  EXPECT_THAT(SimulateStep(c, Layers({10})),
              StatusIs(absl::StatusCode::kInvalidArgument));
  c = Cluster(SimLayout::kPsColocated, 4);
  c.servers = 5;
  EXPECT_THAT(SimulateStep(c, Layers({10})),
              StatusIs(absl::StatusCode::kInvalidArgument));
  c = Cluster(SimLayout::kRing, 4);
  c.topology.nic_Bps = 0;
  EXPECT_THAT(SimulateStep(c, Layers({10})),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(
      SimulateStep(Cluster(SimLayout::kRing, 2), Layers({})),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no gradient")));
}

}  // namespace
}  // namespace sim
}  // namespace gradsync
