// The uncertain regimes of `gradsync plan` (study/sim/plan_uncertainty.h)
// on configs built to sit just inside and just outside each rule.
#include "study/sim/plan_uncertainty.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace sim {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// Calibrated at N <= 4 on 100 Mbit/s links, alpha and the plane's CPU
// fitted; the cell: N = 8 on 100 Mbit/s, ring.
SimConfig Calibrated() {
  SimConfig c;
  c.layout = SimLayout::kRing;
  c.topology = {8, 1, 12.5e6, 0};
  c.calibration.fit_max_workers = 4;
  c.calibration.fit_min_link_Bps = 12.5e6;
  c.calibration.fit_max_link_Bps = 12.5e6;
  c.calibration.fitted = {"alphaS", "planeCpuSPerByte"};
  c.calibration.machine = "lab";
  return c;
}

TEST(PlanUncertaintyTest, InsideTheCalibratedRangeNothingIsMarked) {
  EXPECT_THAT(UncertainRegimes(Calibrated(), "worker node NIC out"), IsEmpty());
  EXPECT_EQ(CalibrationCaveat(Calibrated().calibration), "");
}

TEST(PlanUncertaintyTest, NBeyondTwiceTheCalibratedN) {
  SimConfig c = Calibrated();
  c.topology.workers = 9;
  const std::vector<Uncertainty> u = UncertainRegimes(c, "");
  ASSERT_THAT(u, SizeIs(1));
  EXPECT_EQ(u[0].marker, 'N');
  EXPECT_THAT(u[0].reason, HasSubstr("largest calibrated N (4)"));
}

TEST(PlanUncertaintyTest, LinkRatesNeverMeasured) {
  SimConfig c = Calibrated();
  c.topology.nic_Bps = 25e6;  // 200 Mbit/s: twice the fastest, still in
  EXPECT_THAT(UncertainRegimes(c, ""), IsEmpty());
  c.topology.nic_Bps = 100e9 / 8;
  const std::vector<Uncertainty> u = UncertainRegimes(c, "");
  ASSERT_THAT(u, SizeIs(1));
  EXPECT_EQ(u[0].marker, 'L');
  EXPECT_THAT(u[0].reason, HasSubstr("links of 100 Gbit/s were never "
                                     "measured: the calibration saw 100 "
                                     "Mbit/s to 100 Mbit/s"));
  c.topology.nic_Bps = 6e6;  // 48 Mbit/s: below half the slowest
  EXPECT_EQ(Markers(UncertainRegimes(c, "")), "L");
}

TEST(PlanUncertaintyTest, ServerCpuBoundWithoutAnIdentifiedTerm) {
  SimConfig c = Calibrated();
  c.layout = SimLayout::kPsSeparate;
  c.servers = 8;
  c.partition_bytes = 4096000;
  // The plane's CPU term was fitted: no mark.
  EXPECT_THAT(UncertainRegimes(c, "server 0 CPU"), IsEmpty());
  c.transport = PsTransport::kGrpc;
  const std::vector<Uncertainty> u = UncertainRegimes(c, "server 0 CPU");
  ASSERT_THAT(u, SizeIs(1));
  EXPECT_EQ(u[0].marker, 'C');
  EXPECT_THAT(u[0].reason, HasSubstr("never identified grpcCpuSPerByte"));
  // Bound by a link, not the CPU: no mark.
  EXPECT_THAT(UncertainRegimes(c, "server 0 NIC in"), IsEmpty());
}

TEST(PlanUncertaintyTest, IncastManyWorkersFewServersSmallPartitions) {
  SimConfig c = Calibrated();
  c.layout = SimLayout::kPsSeparate;
  c.servers = 2;
  c.partition_bytes = 128 << 10;
  const std::vector<Uncertainty> u = UncertainRegimes(c, "");
  ASSERT_THAT(u, SizeIs(1));
  EXPECT_EQ(u[0].marker, 'I');
  EXPECT_THAT(u[0].reason, HasSubstr("8 flows into each server's NIC at "
                                     "once, 4 workers per server, "
                                     "partitions of 128 KiB"));
  c.servers = 3;  // fewer than 4 workers per server
  EXPECT_THAT(UncertainRegimes(c, ""), IsEmpty());
  c.servers = 2;
  c.partition_bytes = 4096000;  // large partitions
  EXPECT_THAT(UncertainRegimes(c, ""), IsEmpty());
  // Colocated: the server's own node's workers do not cross its NIC, so
  // 8 workers on 4 nodes of 2 send 6 flows into it: below the fan-in.
  c.layout = SimLayout::kPsColocated;
  c.partition_bytes = 128 << 10;
  c.topology.gpus_per_node = 2;
  EXPECT_THAT(UncertainRegimes(c, ""), IsEmpty());
  c.topology.gpus_per_node = 1;
  EXPECT_THAT(UncertainRegimes(c, ""), IsEmpty());  // 7 flows
}

TEST(PlanUncertaintyTest, DefaultsMarkOnlyWhatTheyCanAndSaySo) {
  SimConfig c;
  c.layout = SimLayout::kPsSeparate;
  c.topology = {1024, 8, 100e9 / 8, 300e9};
  c.servers = 16;
  EXPECT_EQ(Markers(UncertainRegimes(c, "servers 0-15 CPU")), "C");
  EXPECT_THAT(CalibrationCaveat(c.calibration),
              HasSubstr("the defaults, fitted to nothing"));
  c.calibration.machine = "an old file";
  EXPECT_THAT(CalibrationCaveat(c.calibration),
              HasSubstr("does not say which N and link rates"));
}

}  // namespace
}  // namespace sim
}  // namespace gradsync
