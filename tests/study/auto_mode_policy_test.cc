// AutoModePolicy on crafted step times: it measures both paths, settles
// on the faster, re-measures on schedule or when the step time moves, and
// says why each time.
#include "study/auto_mode_policy.h"

#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

// Feeds steps in `mode` taking `seconds` each until the policy asks for a
// switch (returned) or `max_steps` went by (nullopt).
class Driver {
 public:
  explicit Driver(AutoModeConfig config) : policy_(config) {}

  // `transport`: the PS steps' transport ("plane", "grpc").
  std::optional<AutoSwitch> Run(SyncPath mode, double seconds, int max_steps,
                                AutoModelView model = {},
                                const std::string& transport = "") {
    for (int i = 0; i < max_steps; ++i) {
      AutoStep step;
      step.step = next_++;
      step.mode = mode;
      step.step_s = seconds;
      step.sync_s = seconds / 2;
      if (mode == SyncPath::kPs) step.ps_transport = transport;
      std::optional<AutoSwitch> s = policy_.Observe(step, model);
      if (s.has_value()) return s;
    }
    return std::nullopt;
  }

  int64_t next() const { return next_; }
  const AutoModePolicy& policy() const { return policy_; }

 private:
  AutoModePolicy policy_;
  int64_t next_ = 0;
};

AutoModeConfig Small() {
  AutoModeConfig config;
  config.settle_steps = 2;
  config.probe_steps = 3;
  config.recheck_every = 50;
  config.change_threshold = 0.25;
  return config;
}

TEST(AutoModeTest, PicksThePsWhenItIsFasterAndStaysThere) {
  Driver d(Small());
  // Ring: 2 settle + 3 measured steps, then it tries the PS.
  std::optional<AutoSwitch> s = d.Run(SyncPath::kRing, 0.100, 100);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->mode, SyncPath::kPs);
  EXPECT_EQ(d.next(), 5);
  EXPECT_THAT(s->reason, HasSubstr("measured ring 100.0 ms per step"));
  // The switch takes a step to land; those ring steps change nothing.
  EXPECT_FALSE(d.Run(SyncPath::kRing, 0.100, 2).has_value());
  // PS is faster: after its 5 steps the policy stays, asking for nothing.
  EXPECT_FALSE(d.Run(SyncPath::kPs, 0.040, 5).has_value());
  const auto& decisions = d.policy().decisions();
  ASSERT_THAT(decisions, SizeIs(2));
  EXPECT_EQ(decisions[1].chosen, SyncPath::kPs);
  EXPECT_FALSE(decisions[1].switch_requested);
  EXPECT_DOUBLE_EQ(decisions[1].ring_step_s, 0.100);
  EXPECT_DOUBLE_EQ(decisions[1].ps_step_s, 0.040);
  EXPECT_THAT(decisions[1].reason,
              HasSubstr("ps is faster by x2.50; the model has no link facts"));
  EXPECT_THAT(decisions[1].reason, HasSubstr("staying on ps"));
  // Steady: nothing more until the recheck.
  EXPECT_FALSE(d.Run(SyncPath::kPs, 0.040, 40).has_value());
}

TEST(AutoModeTest, GoesBackToTheRingWhenThePsIsSlower) {
  Driver d(Small());
  ASSERT_TRUE(d.Run(SyncPath::kRing, 0.050, 100).has_value());
  AutoModelView model{true, 0.020, 0.090};
  std::optional<AutoSwitch> back = d.Run(SyncPath::kPs, 0.200, 100, model);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->mode, SyncPath::kRing);
  EXPECT_THAT(back->reason, HasSubstr("ring is faster by x4.00"));
  EXPECT_THAT(back->reason,
              HasSubstr("the alpha-beta model predicts ring 20.0 ms and ps "
                        "90.0 ms of sync, ring faster by x4.50"));
  EXPECT_THAT(back->reason, HasSubstr("switching back to ring"));
  EXPECT_DOUBLE_EQ(d.policy().decisions().back().ring_model_s, 0.020);
  EXPECT_DOUBLE_EQ(d.policy().decisions().back().ps_model_s, 0.090);
  // Back on the ring it settles: no further requests while steady.
  EXPECT_FALSE(d.Run(SyncPath::kRing, 0.050, 30).has_value());
}

TEST(AutoModeTest, ReMeasuresWhenTheStepTimeMoves) {
  Driver d(Small());
  ASSERT_TRUE(d.Run(SyncPath::kRing, 0.050, 100).has_value());
  ASSERT_TRUE(d.Run(SyncPath::kPs, 0.200, 100).has_value());  // back to ring
  ASSERT_FALSE(d.Run(SyncPath::kRing, 0.050, 10).has_value());
  // The ring slows down by 80%: after the window fills, try the PS again.
  std::optional<AutoSwitch> again = d.Run(SyncPath::kRing, 0.090, 10);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->mode, SyncPath::kPs);
  EXPECT_THAT(again->reason,
              HasSubstr("re-measuring: the ring step time moved from 50.0 ms "
                        "to 90.0 ms (+80%)"));
  // Now the PS wins: stays there.
  EXPECT_FALSE(d.Run(SyncPath::kPs, 0.060, 6).has_value());
  EXPECT_EQ(d.policy().decisions().back().chosen, SyncPath::kPs);
}

TEST(AutoModeTest, ReMeasuresOnSchedule) {
  AutoModeConfig config = Small();
  config.recheck_every = 20;
  Driver d(config);
  ASSERT_TRUE(d.Run(SyncPath::kRing, 0.050, 100).has_value());
  ASSERT_TRUE(d.Run(SyncPath::kPs, 0.200, 100).has_value());
  std::optional<AutoSwitch> again = d.Run(SyncPath::kRing, 0.050, 100);
  ASSERT_TRUE(again.has_value());
  EXPECT_THAT(again->reason, HasSubstr("steps since the last decision"));
}

TEST(AutoModeTest, NeverReMeasuresWithoutASchedule) {
  AutoModeConfig config = Small();
  config.recheck_every = 0;
  Driver d(config);
  ASSERT_TRUE(d.Run(SyncPath::kRing, 0.050, 100).has_value());
  ASSERT_TRUE(d.Run(SyncPath::kPs, 0.200, 100).has_value());
  EXPECT_FALSE(d.Run(SyncPath::kRing, 0.050, 1000).has_value());
}

TEST(AutoModeTest, RepeatedOrOldStepsAreIgnored) {
  AutoModePolicy policy(Small());
  AutoStep step;
  step.mode = SyncPath::kRing;
  step.step_s = 0.1;
  for (int i = 0; i < 20; ++i) {
    step.step = 3;  // the same step again and again
    EXPECT_FALSE(policy.Observe(step, {}).has_value());
  }
  EXPECT_TRUE(policy.decisions().empty());
}

// The decision names the PS's transport; a PS on gRPC streams measured far
// above the links' time is said to be its transport's CPU, with the plane
// as the remedy; on the plane the same numbers draw no such remark.
TEST(AutoModeTest, TheReasonKnowsThePsTransport) {
  AutoModelView model{true, 0.020, 0.030};
  for (const std::string transport : {"grpc", "plane"}) {
    Driver d(Small());
    ASSERT_TRUE(d.Run(SyncPath::kRing, 0.050, 100, model).has_value());
    // 200 ms steps, 100 ms of PS sync against the model's 30 ms.
    std::optional<AutoSwitch> back =
        d.Run(SyncPath::kPs, 0.200, 100, model, transport);
    ASSERT_TRUE(back.has_value()) << transport;
    if (transport == "grpc") {
      EXPECT_THAT(back->reason,
                  HasSubstr("ps over gRPC streams 30.0 ms of sync"));
      EXPECT_THAT(back->reason,
                  HasSubstr("the PS measured 100.0 ms, above the links' "
                            "time: gRPC streams spend CPU per message"));
      EXPECT_THAT(back->reason, HasSubstr("--ps-transport plane"));
    } else {
      EXPECT_THAT(back->reason,
                  HasSubstr("ps over the tensor plane 30.0 ms of sync"));
      EXPECT_THAT(back->reason, ::testing::Not(HasSubstr("gRPC streams")));
    }
  }
}

}  // namespace
}  // namespace gradsync
