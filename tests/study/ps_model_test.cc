// The simulator's parameter-server layouts against hand-computed cases and
// study/alpha_beta/sync_model.h's formulas in the limit of no compute: separate
// servers unpipelined and pipelined, colocated servers, the incast
// penalty, the server CPU, the per-partition overhead, the server
// classes that aggregate many servers, and the reduction in the node
// before the push on nodes of several GPUs.
#include "study/sim/ps_model.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "study/alpha_beta/sync_model.h"
#include "study/sim/step_simulator.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace sim {
namespace {

using ::gradsync::testing::IsOk;

constexpr double kMiB = 1 << 20;
constexpr double kAlpha = 1e-3;
constexpr double kRate = 100 * kMiB;

void ExpectClose(double got, double want) {
  EXPECT_NEAR(got, want, 1e-9 * std::abs(want)) << "want " << want;
}

SimWorkload Gradient(int64_t elements, double backward_s = 0) {
  SimWorkload w;
  w.layers.push_back({"all", elements, backward_s});
  return w;
}

// N workers, one per node; K servers; one partition per server slice and
// no pipelining unless a test says so; no CPU cost.
SimConfig Ps(SimLayout layout, int workers, int servers) {
  SimConfig c;
  c.layout = layout;
  c.topology.workers = workers;
  c.topology.nic_Bps = kRate;
  c.servers = servers;
  c.partition_bytes = 0;
  c.ps_pipelined = false;
  c.calibration.alpha_s = kAlpha;
  c.calibration.plane_cpu_s_per_byte = 0;
  c.calibration.grpc_cpu_s_per_byte = 0;
  return c;
}

TEST(PsModelTest, Separate_Unpipelined_MatchesFormula) {
  // 2 max(S, N S/K)/B + 2 alpha, K below and above N.
  const double s = 8 * kMiB;
  for (int k : {1, 2, 4, 8}) {
    absl::StatusOr<SimResult> r =
        SimulateStep(Ps(SimLayout::kPsSeparate, 4, k), Gradient(s / 4));
    ASSERT_THAT(r, IsOk());
    ExpectClose(r->step_s, 2 * std::max(s, 4 * s / k) / kRate + 2 * kAlpha);
    SyncCase model;
    model.layout = SyncLayout::kPsSeparate;
    model.workers = 4;
    model.shards = k;
    model.bytes = s;
    ExpectClose(r->step_s, PredictSeconds(model, {kAlpha, kRate}));
  }
}

TEST(PsModelTest, Separate_Pipelined_MatchesSyncModel) {
  // Each server's 4 MiB slice in P = 4 partitions of 1 MiB:
  // max(S, N S/K)(1 + 1/P)/B + (P + 1) alpha.
  const double s = 8 * kMiB;
  for (int k : {1, 2, 8}) {
    SimConfig c = Ps(SimLayout::kPsSeparate, 4, k);
    c.ps_pipelined = true;
    c.partition_bytes = s / k / 4;
    absl::StatusOr<SimResult> r = SimulateStep(c, Gradient(s / 4));
    ASSERT_THAT(r, IsOk());
    SyncCase model;
    model.layout = SyncLayout::kPsSeparate;
    model.workers = 4;
    model.shards = k;
    model.bytes = s;
    model.pipelined = true;
    model.partition_bytes = c.partition_bytes;
    ExpectClose(r->step_s, PredictSeconds(model, {kAlpha, kRate}));
    ExpectClose(r->step_s, std::max(s, 4 * s / k) * 1.25 / kRate + 5 * kAlpha);
  }
}

TEST(PsModelTest, Colocated_KEqualsN_MovesTheRingsBytes) {
  // Every host sends (N-1)/N S out in the push and again in the pull:
  // the ring's 2(N-1)/N S, in 2 alphas instead of 2(N-1).
  const int n = 4;
  const double s = 8 * kMiB;
  absl::StatusOr<SimResult> r =
      SimulateStep(Ps(SimLayout::kPsColocated, n, n), Gradient(s / 4));
  ASSERT_THAT(r, IsOk());
  SyncCase ring;
  ring.workers = n;
  ring.bytes = s;
  const double ring_bytes = ModelCost(ring).link_bytes;
  ExpectClose(r->step_s, ring_bytes / kRate + 2 * kAlpha);
  ExpectClose(r->Busiest()->bytes_per_copy, ring_bytes);
}

TEST(PsModelTest, Colocated_FewerServers_MatchesSyncModel) {
  // K = 2 of N = 4 hosts: a server host carries (N-1)/K S in; the others
  // S out: max((N-1)/K, 1) S per phase.
  const double s = 8 * kMiB;
  absl::StatusOr<SimResult> r =
      SimulateStep(Ps(SimLayout::kPsColocated, 4, 2), Gradient(s / 4));
  ASSERT_THAT(r, IsOk());
  SyncCase model;
  model.layout = SyncLayout::kPsColocated;
  model.workers = 4;
  model.shards = 2;
  model.bytes = s;
  ExpectClose(r->step_s, PredictSeconds(model, {kAlpha, kRate}));
}

TEST(PsModelTest, Colocated_Pipelined_HasNoFillTerm) {
  // K = N = 4, P = 4 partitions of q = S/16. The first push and the last
  // pull have a host's link to themselves (3 flows each way); in between
  // push j+1 and pull j share it (6 flows): 2 (alpha + 3q/B) +
  // 3 (alpha + 6q/B) = 5 alpha + (N+K-2)/K S/B. study/alpha_beta/sync_model.h's
  // pipelined colocated formula adds a fill term of 1/P on top, which
  // holds for separate servers (push and pull on different links) but
  // over-counts here.
  const double s = 8 * kMiB;
  SimConfig c = Ps(SimLayout::kPsColocated, 4, 4);
  c.ps_pipelined = true;
  c.partition_bytes = s / 16;
  absl::StatusOr<SimResult> r = SimulateStep(c, Gradient(s / 4));
  ASSERT_THAT(r, IsOk());
  ExpectClose(r->step_s, 5 * kAlpha + 1.5 * s / kRate);
}

TEST(PsModelTest, IncastPenaltyOff_GivesExactFairShare) {
  const double s = 4 * kMiB;
  SimConfig c = Ps(SimLayout::kPsSeparate, 8, 1);
  c.calibration.incast_threshold_flows = 4;
  c.calibration.incast_efficiency = 1;  // off
  absl::StatusOr<SimResult> r = SimulateStep(c, Gradient(s / 4));
  ASSERT_THAT(r, IsOk());
  ExpectClose(r->step_s, 2 * 8 * s / kRate + 2 * kAlpha);
}

TEST(PsModelTest, IncastPenaltyOn_SlowsOnlyThePush) {
  // 8 pushes into one server NIC at half its rate; the pull fans out.
  const double s = 4 * kMiB;
  SimConfig c = Ps(SimLayout::kPsSeparate, 8, 1);
  c.calibration.incast_threshold_flows = 4;
  c.calibration.incast_efficiency = 0.5;
  absl::StatusOr<SimResult> r = SimulateStep(c, Gradient(s / 4));
  ASSERT_THAT(r, IsOk());
  ExpectClose(r->step_s, 2 * 8 * s / kRate + 8 * s / kRate + 2 * kAlpha);
}

TEST(PsModelTest, CpuBoundServer_RunsAtItsCoresOverCostPerByte) {
  // 2 cores at 1e-8 s/B: 200 MB/s of bytes in or out, slower than 4
  // workers' pushes could arrive (N B = 400 MiB/s) but faster than B.
  const double s = 4 * kMiB;
  SimConfig c = Ps(SimLayout::kPsSeparate, 4, 1);
  c.transport = PsTransport::kGrpc;
  c.calibration.grpc_cpu_s_per_byte = 1e-8;
  c.server_cores = 2;
  absl::StatusOr<SimResult> r = SimulateStep(c, Gradient(s / 4));
  ASSERT_THAT(r, IsOk());
  const double cpu_Bps = 2 / 1e-8;
  ExpectClose(r->step_s, 2 * 4 * s / std::min(cpu_Bps, kRate) + 2 * kAlpha);
  // The plane's cost is separate: the same step on the plane is link-bound.
  c.transport = PsTransport::kPlane;
  r = SimulateStep(c, Gradient(s / 4));
  ASSERT_THAT(r, IsOk());
  ExpectClose(r->step_s, 2 * 4 * s / kRate + 2 * kAlpha);
}

TEST(PsModelTest, PartitionOverhead_DelaysEachPull) {
  const double s = 4 * kMiB;
  SimConfig c = Ps(SimLayout::kPsSeparate, 2, 2);
  c.calibration.partition_overhead_s = 0.01;
  absl::StatusOr<SimResult> r = SimulateStep(c, Gradient(s / 4));
  ASSERT_THAT(r, IsOk());
  ExpectClose(r->step_s, 2 * s / kRate + 2 * kAlpha + 0.01);
}

TEST(PsModelTest, Overlap_PushesStreamUnderBackward) {
  // Two layers of 4 MiB, one server per layer, 1 s of backward each: the
  // last layer's server finishes under the first layer's backward; only
  // the first layer's push and pull are exposed.
  const double layer = 4 * kMiB;
  SimWorkload w;
  w.layers.push_back({"first", int64_t(layer / 4), 1.0});
  w.layers.push_back({"last", int64_t(layer / 4), 1.0});
  absl::StatusOr<SimResult> r =
      SimulateStep(Ps(SimLayout::kPsSeparate, 2, 2), w);
  ASSERT_THAT(r, IsOk());
  ExpectClose(r->exposed_comm_s, 2 * 2 * layer / kRate + 2 * kAlpha);
}

TEST(PsModelTest, ServerClasses_SplitSlicesAndPartitions) {
  SimConfig c = Ps(SimLayout::kPsSeparate, 4, 3);
  c.partition_bytes = 16;  // 4 fp32 elements
  SimWorkload w;
  w.layers.push_back({"a", 8, 1.0});  // elements 0-7, final at 2 s
  w.layers.push_back({"b", 2, 1.0});  // elements 8-9, final at 1 s
  const GradientTimeline timeline(w);
  // 10 elements over 3 servers: 4, 3, 3.
  const std::vector<ServerClass> classes = ServerClasses(c, timeline);
  ASSERT_EQ(classes.size(), 3u);
  EXPECT_EQ(classes[0].bytes(), 16);
  EXPECT_EQ(classes[1].bytes(), 12);
  ASSERT_EQ(classes[2].partition_bytes.size(), 1u);
  // Server 2 holds 7-9: element 7 is a's, so its one partition waits.
  ExpectClose(classes[2].ready_s[0], 2.0);
  c.partition_bytes = 8;  // 2 elements: server 2's top partition is b's
  const std::vector<ServerClass> split = ServerClasses(c, timeline);
  ASSERT_EQ(split[2].partition_bytes.size(), 2u);
  EXPECT_EQ(split[2].partition_bytes[0], 8);
  EXPECT_EQ(split[2].partition_bytes[1], 4);
  ExpectClose(split[2].ready_s[0], 1.0);
  ExpectClose(split[2].ready_s[1], 2.0);
}

TEST(PsModelTest, ServerClasses_NoCompute_AggregationIsExact) {
  // 16 servers as 4 classes of 4: with no compute and equal slices the
  // members move in lockstep, so the step is the same as server by server.
  for (SimLayout layout : {SimLayout::kPsSeparate, SimLayout::kPsColocated}) {
    SimConfig c = Ps(layout, 16, 16);
    c.ps_pipelined = true;
    c.partition_bytes = 64 * 1024;
    absl::StatusOr<SimResult> exact = SimulateStep(c, Gradient(1 << 20));
    c.max_server_classes = 4;
    absl::StatusOr<SimResult> classed = SimulateStep(c, Gradient(1 << 20));
    ASSERT_THAT(exact, IsOk());
    ASSERT_THAT(classed, IsOk());
    ExpectClose(classed->step_s, exact->step_s);
    EXPECT_LT(classed->events, exact->events);
  }
}

TEST(PsModelTest, Aggregation_KeepsALargeSweepCheap) {
  // 1,024 workers on 128 nodes, 1,024 servers, a 1.3 GB gradient in 4 MB
  // partitions: well under a second of events.
  SimConfig c = Ps(SimLayout::kPsSeparate, 1024, 1024);
  c.topology.gpus_per_node = 8;
  c.topology.intra_Bps = 10 * kRate;
  c.ps_pipelined = true;
  c.partition_bytes = kDefaultPartitionBytes;
  c.ps_node_reduce = false;  // every GPU pushes its own copy
  absl::StatusOr<SimResult> r = SimulateStep(c, Gradient(335 << 20));
  ASSERT_THAT(r, IsOk());
  EXPECT_LT(r->events, 100000);
  // A worker node's NIC carries its 8 workers' gradients each way.
  const double s = (335 << 20) * 4.0;
  ExpectClose(r->links[0].bytes_per_copy, 8 * s);
  // Reduced in the node first: one gradient per node, and still cheap.
  c.ps_node_reduce = true;
  r = SimulateStep(c, Gradient(335 << 20));
  ASSERT_THAT(r, IsOk());
  EXPECT_LT(r->events, 100000);
  ExpectClose(r->links[0].bytes_per_copy, s);
}

// N = 4 workers on 2 nodes of G = 2, one separate server, one partition
// of S = 8 MiB, no alpha; NICs at B, intra-node links at 2B.
//   reduced in the node:  reduce 2(G-1)/G S / 2B = S/2B, push 2 flows
//                         into the server 2S/B, pull 2S/B, broadcast
//                         S/2B: 5 S/B in all;
//   every GPU pushes:     4 flows into the server each way, 8 S/B.
TEST(PsModelTest, NodeReduce_HandComputed) {
  const double s = 8 * kMiB;
  SimConfig c = Ps(SimLayout::kPsSeparate, 4, 1);
  c.topology.gpus_per_node = 2;
  c.topology.intra_Bps = 2 * kRate;
  c.calibration.alpha_s = 0;
  c.calibration.intra_alpha_s = 0;
  absl::StatusOr<SimResult> r = SimulateStep(c, Gradient(s / 4));
  ASSERT_THAT(r, IsOk());
  ExpectClose(r->step_s, 5 * s / kRate);
  c.ps_node_reduce = false;
  r = SimulateStep(c, Gradient(s / 4));
  ASSERT_THAT(r, IsOk());
  ExpectClose(r->step_s, 8 * s / kRate);
  // Intra alpha: G per reduce and per broadcast.
  c.ps_node_reduce = true;
  c.calibration.intra_alpha_s = kAlpha;
  r = SimulateStep(c, Gradient(s / 4));
  ASSERT_THAT(r, IsOk());
  ExpectClose(r->step_s, 5 * s / kRate + 4 * kAlpha);
}

// In the limit of infinitely fast intra-node links with no latency, a
// node-reduced PS of N = 64 on 8 nodes of 8 is the PS of 8 workers, one
// per node: pipelined partitions, compute to overlap, separate and
// colocated.
TEST(PsModelTest, NodeReduce_FastIntraLinks_IsThePsOfOneWorkerPerNode) {
  const double s = 64 * kMiB;
  for (SimLayout layout : {SimLayout::kPsSeparate, SimLayout::kPsColocated}) {
    SimConfig per_gpu = Ps(layout, 64, 4);
    per_gpu.topology.gpus_per_node = 8;
    per_gpu.topology.intra_Bps = 1e18;
    per_gpu.calibration.intra_alpha_s = 0;
    per_gpu.ps_pipelined = true;
    per_gpu.partition_bytes = 2 * kMiB;
    SimConfig per_node = per_gpu;
    per_node.topology.workers = 8;
    per_node.topology.gpus_per_node = 1;
    SimWorkload w;
    for (int i = 0; i < 8; ++i) w.layers.push_back({"l", s / 32, 0.01});
    absl::StatusOr<SimResult> a = SimulateStep(per_gpu, w);
    absl::StatusOr<SimResult> b = SimulateStep(per_node, w);
    ASSERT_THAT(a, IsOk());
    ASSERT_THAT(b, IsOk());
    EXPECT_NEAR(a->step_s, b->step_s, 1e-6 * b->step_s)
        << SimLayoutName(layout);
    EXPECT_GT(b->exposed_comm_s, 0);
  }
}

}  // namespace
}  // namespace sim
}  // namespace gradsync
