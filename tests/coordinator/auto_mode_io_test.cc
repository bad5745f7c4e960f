// What the coordinator feeds `--mode auto`'s policy and reports of it
// (server/coordinator/auto_mode_io.h): the ranks' step metrics gathered
// into finished steps, and a decision as the ModeDecision status shows.
#include "server/coordinator/auto_mode_io.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

using ::testing::SizeIs;

TEST(AutoModeTest, CollectorSaysMixedWhenRanksTransportsDiffer) {
  AutoStepCollector collector(2);
  StepMetrics m;
  m.set_step(0);
  m.set_mode(SYNC_MODE_PS);
  m.set_rank(0);
  m.set_ps_transport("plane");
  collector.Add(m);
  m.set_rank(1);
  m.set_ps_transport("grpc");
  collector.Add(m);
  m.set_step(1);
  m.set_ps_transport("plane");
  for (int r = 0; r < 2; ++r) {
    m.set_rank(r);
    collector.Add(m);
  }
  const std::vector<AutoStep> steps = collector.TakeFinished();
  ASSERT_THAT(steps, SizeIs(2));
  EXPECT_EQ(steps[0].ps_transport, "mixed");
  EXPECT_EQ(steps[1].ps_transport, "plane");
}

TEST(AutoModeTest, CollectorReleasesAStepOnceEveryRankReportedIt) {
  AutoStepCollector collector(2);
  StepMetrics m;
  m.set_rank(1);
  m.set_step(0);
  m.set_step_s(0.3);
  m.set_sync_bytes(64);
  collector.Add(m);
  EXPECT_TRUE(collector.TakeFinished().empty());
  m.set_rank(0);
  m.set_step_s(0.2);
  m.set_mode(SYNC_MODE_PS);
  collector.Add(m);
  const std::vector<AutoStep> steps = collector.TakeFinished();
  ASSERT_THAT(steps, SizeIs(1));
  EXPECT_EQ(steps[0].mode, SyncPath::kPs);  // rank 0's
  EXPECT_DOUBLE_EQ(steps[0].step_s, 0.3);   // the slowest rank's
  EXPECT_EQ(steps[0].sync_bytes, 64);
  EXPECT_TRUE(collector.TakeFinished().empty());
}

// A rank that reports no mode (SYNC_MODE_UNSPECIFIED) runs the ring.
TEST(AutoModeTest, CollectorReadsAnUnspecifiedModeAsTheRing) {
  AutoStepCollector collector(1);
  StepMetrics m;
  m.set_step(4);
  m.set_mode(SYNC_MODE_UNSPECIFIED);
  collector.Add(m);
  const std::vector<AutoStep> steps = collector.TakeFinished();
  ASSERT_THAT(steps, SizeIs(1));
  EXPECT_EQ(steps[0].mode, SyncPath::kRing);
}

TEST(AutoModeTest, ADecisionIsReportedFieldByField) {
  AutoDecision decision;
  decision.step = 12;
  decision.chosen = SyncPath::kPs;
  decision.reason = "auto: measured";
  decision.ring_step_s = 0.1;
  decision.ps_step_s = 0.04;
  decision.ring_model_s = 0.02;
  decision.ps_model_s = 0.03;
  decision.switch_requested = true;
  const ModeDecision d = ModeDecisionOf(decision);
  EXPECT_EQ(d.step(), 12);
  EXPECT_EQ(d.chosen(), SYNC_MODE_PS);
  EXPECT_EQ(d.reason(), "auto: measured");
  EXPECT_DOUBLE_EQ(d.ring_step_s(), 0.1);
  EXPECT_DOUBLE_EQ(d.ps_step_s(), 0.04);
  EXPECT_DOUBLE_EQ(d.ring_model_s(), 0.02);
  EXPECT_DOUBLE_EQ(d.ps_model_s(), 0.03);
  EXPECT_TRUE(d.switch_requested());
}

}  // namespace
}  // namespace gradsync
