// The simulator's PS placements (SimConfig::ps_placement) on hand-computed
// cases: which server gets which partition, when it is ready, each
// server's NIC load and the exposed time of a step whose last layers
// finish together (where BytePS's spread placement beats gradsync's
// contiguous slices), and the limit where the two agree (one equal layer
// per server).
#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "study/sim/ps_model.h"
#include "study/sim/step_simulator.h"
#include "study/sim/workload.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace sim {
namespace {

using ::gradsync::testing::IsOk;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr double kMiB = 1 << 20;
constexpr double kAlpha = 1e-3;
constexpr double kRate = 100 * kMiB;  // 1 MiB in 10 ms

void ExpectClose(double got, double want) {
  EXPECT_NEAR(got, want, 1e-9 * std::abs(want)) << "want " << want;
}

// N workers, one per node; K separate servers, pipelined, partitions of
// 1 MiB (fp32); alpha 1 ms, no overhead, no CPU cost.
SimConfig Ps(PsPlacement placement, int workers, int servers) {
  SimConfig c;
  c.layout = SimLayout::kPsSeparate;
  c.topology.workers = workers;
  c.topology.nic_Bps = kRate;
  c.servers = servers;
  c.ps_placement = placement;
  c.partition_bytes = kMiB;
  c.ps_pipelined = true;
  c.calibration.alpha_s = kAlpha;
  c.calibration.partition_overhead_s = 0;
  c.calibration.plane_cpu_s_per_byte = 0;
  c.calibration.grpc_cpu_s_per_byte = 0;
  return c;
}

// Four layers of 1 MiB (fp32). Backward runs L3, L2 in no time, then L1
// for 100 ms and L0 in no time: L3 and L2 are ready at 0, L1 and L0 at
// 100 ms, when backward ends.
SimWorkload TailHeavy() {
  SimWorkload w;
  const int64_t e = static_cast<int64_t>(kMiB / 4);
  w.layers = {{"L0", e, 0}, {"L1", e, 0.1}, {"L2", e, 0}, {"L3", e, 0}};
  return w;
}

double Bytes(const SimResult& r, const std::string& name) {
  for (const ResourceUsage& u : r.links) {
    if (u.name == name) return u.bytes_per_copy;
  }
  ADD_FAILURE() << "no resource " << name;
  return -1;
}

TEST(SimPsPlacementTest, ParseAndName) {
  ASSERT_THAT(ParsePsPlacement("Spread"), IsOk());
  EXPECT_EQ(*ParsePsPlacement("Spread"), PsPlacement::kSpread);
  EXPECT_EQ(*ParsePsPlacement("contiguous"), PsPlacement::kContiguous);
  EXPECT_EQ(PsPlacementName(PsPlacement::kSpread), "spread");
  absl::StatusOr<PsPlacement> bad = ParsePsPlacement("hashed");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("contiguous or spread"));
  // The default is gradsync's own PS.
  EXPECT_EQ(SimConfig().ps_placement, PsPlacement::kContiguous);
}

// Contiguous: server 0 owns [L0 L1], server 1 [L2 L3], each streamed from
// its end. Spread: backward order L3 L2 L1 L0 dealt round-robin, so server
// 0 gets L3 then L1 and server 1 gets L2 then L0.
TEST(SimPsPlacementTest, ServerClasses_TwoServersFourPartitions) {
  const GradientTimeline timeline(TailHeavy());
  std::vector<ServerClass> contiguous =
      ServerClasses(Ps(PsPlacement::kContiguous, 2, 2), timeline);
  ASSERT_EQ(contiguous.size(), 2u);
  EXPECT_THAT(contiguous[0].partition_bytes, ElementsAre(kMiB, kMiB));
  EXPECT_THAT(contiguous[0].ready_s, ElementsAre(0.1, 0.1));  // L1, L0
  EXPECT_THAT(contiguous[1].ready_s, ElementsAre(0.0, 0.0));  // L3, L2
  std::vector<ServerClass> spread =
      ServerClasses(Ps(PsPlacement::kSpread, 2, 2), timeline);
  ASSERT_EQ(spread.size(), 2u);
  EXPECT_THAT(spread[0].partition_bytes, ElementsAre(kMiB, kMiB));
  EXPECT_THAT(spread[0].ready_s, ElementsAre(0.0, 0.1));  // L3, L1
  EXPECT_THAT(spread[1].partition_bytes, ElementsAre(kMiB, kMiB));
  EXPECT_THAT(spread[1].ready_s, ElementsAre(0.0, 0.1));  // L2, L0
}

// N = 2 workers, K = 2 servers, P = 1 MiB, P/B = 10 ms. A push of P moves
// 2P into the server's NIC (both workers): alpha + 20 ms; a pull likewise
// out of it. Each server's NIC carries 2 partitions x 2 workers = 4 MiB
// each way in both placements; only when differs.
//   contiguous: server 1 is done with L3, L2 by 63 ms. At 100 ms server 0
//     pushes L1 (101-121), then L0 (122-142) while pulling L1
//     (122-142), then pulls L0 (143-163): step 163 ms, exposed 63 ms.
//   spread: at 0 both servers push (L3, L2) at once; every worker NIC and
//     server NIC carries 2 flows, B/2 each: pushes 1-21, pulls 22-42.
//     At 100 ms likewise with L1 and L0: step 142 ms, exposed 42 ms.
TEST(SimPsPlacementTest, TwoServersFourPartitions_HandComputed) {
  const SimWorkload w = TailHeavy();
  absl::StatusOr<SimResult> contiguous =
      SimulateStep(Ps(PsPlacement::kContiguous, 2, 2), w);
  ASSERT_THAT(contiguous, IsOk());
  ExpectClose(contiguous->backward_s, 0.1);
  ExpectClose(contiguous->step_s, 0.163);
  ExpectClose(contiguous->exposed_comm_s, 0.063);
  absl::StatusOr<SimResult> spread =
      SimulateStep(Ps(PsPlacement::kSpread, 2, 2), w);
  ASSERT_THAT(spread, IsOk());
  ExpectClose(spread->step_s, 0.142);
  ExpectClose(spread->exposed_comm_s, 0.042);
  for (const SimResult* r : {&*contiguous, &*spread}) {
    for (const char* nic : {"server 0 NIC in", "server 0 NIC out",
                            "server 1 NIC in", "server 1 NIC out"}) {
      ExpectClose(Bytes(*r, nic), 4 * kMiB);
    }
    // Each worker pushes and pulls its whole 4 MiB gradient.
    ExpectClose(Bytes(*r, "worker node NIC out"), 4 * kMiB);
    ExpectClose(Bytes(*r, "worker node NIC in"), 4 * kMiB);
  }
}

// A layer of 2.5 partitions is cut from its start into 1, 1 and 0.5 MiB,
// dealt on from where the previous layer stopped; partition 0 cuts layers
// whole.
TEST(SimPsPlacementTest, Spread_CutsEachLayerAndDealsOn) {
  SimWorkload w;
  const int64_t e = static_cast<int64_t>(kMiB / 4);
  w.layers = {{"big", 5 * e / 2, 0.02}, {"small", e / 2, 0.01}};
  const GradientTimeline timeline(w);
  std::vector<ServerClass> c =
      ServerClasses(Ps(PsPlacement::kSpread, 2, 3), timeline);
  ASSERT_EQ(c.size(), 3u);
  // small (ready 10 ms) -> 0; big's 1, 1, 0.5 MiB (30 ms) -> 1, 2, 0.
  EXPECT_THAT(c[0].partition_bytes, ElementsAre(kMiB / 2, kMiB / 2));
  EXPECT_THAT(c[0].ready_s,
              ElementsAre(DoubleNear(0.01, 1e-12), DoubleNear(0.03, 1e-12)));
  EXPECT_THAT(c[1].partition_bytes, ElementsAre(kMiB));
  EXPECT_THAT(c[2].partition_bytes, ElementsAre(kMiB));
  SimConfig whole = Ps(PsPlacement::kSpread, 2, 3);
  whole.partition_bytes = 0;
  c = ServerClasses(whole, timeline);
  EXPECT_THAT(c[0].partition_bytes, ElementsAre(kMiB / 2));
  EXPECT_THAT(c[1].partition_bytes, ElementsAre(2.5 * kMiB));
  EXPECT_TRUE(c[2].partition_bytes.empty());
}

// One partition per server and K equal layers: spread hands server k the
// layer contiguous gives server K-1-k, and the servers are alike, so the
// step is the same, with compute to overlap, separate and colocated.
TEST(SimPsPlacementTest, OnePartitionPerServerEqualLayers_Agree) {
  for (SimLayout layout : {SimLayout::kPsSeparate, SimLayout::kPsColocated}) {
    SimConfig contiguous = Ps(PsPlacement::kContiguous, 4, 4);
    contiguous.layout = layout;
    SimConfig spread = contiguous;
    spread.ps_placement = PsPlacement::kSpread;
    SimWorkload w;
    for (int i = 0; i < 4; ++i) {
      w.layers.push_back({"l", static_cast<int64_t>(kMiB / 4), 0.005});
    }
    absl::StatusOr<SimResult> a = SimulateStep(contiguous, w);
    absl::StatusOr<SimResult> b = SimulateStep(spread, w);
    ASSERT_THAT(a, IsOk());
    ASSERT_THAT(b, IsOk());
    ExpectClose(b->step_s, a->step_s);
    ExpectClose(b->exposed_comm_s, a->exposed_comm_s);
    EXPECT_GT(a->exposed_comm_s, 0) << SimLayoutName(layout);
  }
}

}  // namespace
}  // namespace sim
}  // namespace gradsync
