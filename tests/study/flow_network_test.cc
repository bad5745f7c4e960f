// The simulator's engine on hand-computed cases: one flow on one link,
// equal and max-min fair shares, per-copy loads, latency, timers and the
// incast penalty.
#include "study/sim/flow_network.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace sim {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// |got - want| <= 1e-9 |want|.
void ExpectClose(double got, double want) {
  EXPECT_NEAR(got, want, 1e-9 * std::abs(want)) << "want " << want;
}

FlowGroup Group(double bytes, std::vector<FlowLoad> loads, double latency = 0) {
  FlowGroup g;
  g.name = "g";
  g.lane = "l";
  g.bytes = bytes;
  g.latency_s = latency;
  g.loads = std::move(loads);
  return g;
}

TEST(FlowNetworkTest, OneFlowOneLink_TakesAlphaPlusBytesOverRate) {
  FlowNetwork net;
  const int link = net.AddResource({"link", 100, 1, false});
  double done = -1;
  net.Start(Group(1000, {{link, 1}}, 0.5), [&] { done = net.now(); });
  ASSERT_THAT(net.Run(), IsOk());
  ExpectClose(done, 0.5 + 1000.0 / 100);
  ASSERT_EQ(net.Usage().size(), 1u);
  EXPECT_EQ(net.Usage()[0].bytes_per_copy, 1000);
  ExpectClose(net.Usage()[0].busy_s(), 10);
}

TEST(FlowNetworkTest, TwoFlowsOnOneLink_ShareItEqually) {
  FlowNetwork net;
  const int link = net.AddResource({"link", 100, 1, false});
  double small = -1, large = -1;
  net.Start(Group(500, {{link, 1}}), [&] { small = net.now(); });
  net.Start(Group(1000, {{link, 1}}), [&] { large = net.now(); });
  ASSERT_THAT(net.Run(), IsOk());
  // 50 B/s each until the small one ends at 10 s; then 500 B at 100 B/s.
  ExpectClose(small, 10);
  ExpectClose(large, 15);
}

TEST(FlowNetworkTest, MaxMinFair_LeavesWhatABottleneckedFlowCannotUse) {
  FlowNetwork net;
  const int shared = net.AddResource({"shared", 100, 1, false});
  const int narrow = net.AddResource({"narrow", 30, 1, false});
  double a = -1, b = -1;
  // A is held to 30 by the narrow link; B gets the other 70.
  net.Start(Group(300, {{shared, 1}, {narrow, 1}}), [&] { a = net.now(); });
  net.Start(Group(700, {{shared, 1}}), [&] { b = net.now(); });
  ASSERT_THAT(net.Run(), IsOk());
  ExpectClose(a, 10);
  ExpectClose(b, 10);
}

TEST(FlowNetworkTest, FlowsPerCopy_ShareEachCopyAndCountItsBytes) {
  FlowNetwork net;
  // 8 copies of a 100 B/s link, each carrying 4 flows of the group.
  const int links = net.AddResource({"nics", 100, 8, false});
  double done = -1;
  net.Start(Group(100, {{links, 4}}), [&] { done = net.now(); });
  ASSERT_THAT(net.Run(), IsOk());
  ExpectClose(done, 4);
  EXPECT_EQ(net.Usage()[0].bytes_per_copy, 400);
  EXPECT_EQ(net.Usage()[0].copies, 8);
}

TEST(FlowNetworkTest, IncastPenaltyOff_FlowsShareTheReceiverExactly) {
  FlowNetwork net({/*threshold_flows=*/0, /*efficiency=*/0.5});
  const int in = net.AddResource({"server NIC in", 100, 1, true});
  double done = -1;
  net.Start(Group(100, {{in, 8}}), [&] { done = net.now(); });
  ASSERT_THAT(net.Run(), IsOk());
  ExpectClose(done, 8);
}

TEST(FlowNetworkTest, IncastAboveThreshold_SlowsTheReceiverOnly) {
  FlowNetwork net({/*threshold_flows=*/4, /*efficiency=*/0.5});
  const int in = net.AddResource({"server NIC in", 100, 1, true});
  double fan_in = -1;
  net.Start(Group(100, {{in, 8}}), [&] { fan_in = net.now(); });
  ASSERT_THAT(net.Run(), IsOk());
  ExpectClose(fan_in, 8 * 100 / 50.0);  // 8 flows into half the rate
}

TEST(FlowNetworkTest, IncastAtThresholdOrSending_IsNotPenalised) {
  FlowNetwork net({/*threshold_flows=*/4, /*efficiency=*/0.5});
  const int in = net.AddResource({"server NIC in", 100, 1, true});
  const int out = net.AddResource({"server NIC out", 100, 1, false});
  double few = -1, fan_out = -1;
  net.Start(Group(100, {{in, 4}}), [&] { few = net.now(); });
  net.Start(Group(100, {{out, 8}}), [&] { fan_out = net.now(); });
  ASSERT_THAT(net.Run(), IsOk());
  ExpectClose(few, 4);      // at the threshold: no penalty
  ExpectClose(fan_out, 8);  // sending is never penalised
}

TEST(FlowNetworkTest, Timers_RunInTimeThenSetOrder) {
  FlowNetwork net;
  std::vector<std::string> order;
  net.After(2, [&] { order.push_back("b"); });
  net.After(1, [&] {
    order.push_back("a");
    net.After(1, [&] { order.push_back("c"); });  // due at 2, set later
  });
  ASSERT_THAT(net.Run(), IsOk());
  EXPECT_THAT(order, ElementsAre("a", "b", "c"));
  ExpectClose(net.now(), 2);
}

TEST(FlowNetworkTest, GroupWithoutLinks_EndsAfterItsLatency) {
  FlowNetwork net;
  double done = -1;
  net.Start(Group(1000, {}, 0.25), [&] { done = net.now(); });
  ASSERT_THAT(net.Run(), IsOk());
  ExpectClose(done, 0.25);
  ASSERT_EQ(net.timeline().size(), 1u);
  ExpectClose(net.timeline()[0].end_s, 0.25);
}

TEST(FlowNetworkTest, LinkWithoutCapacity_IsAnInternalError) {
  FlowNetwork net;
  const int dead = net.AddResource({"dead link", 0, 1, false});
  net.Start(Group(10, {{dead, 1}}), nullptr);
  EXPECT_THAT(net.Run(), StatusIs(absl::StatusCode::kInternal));
}

TEST(FlowNetworkTest, Timeline_HoldsEachGroupFromStartToEnd) {
  FlowNetwork net;
  const int link = net.AddResource({"link", 10, 1, false});
  net.After(1, [&] { net.Start(Group(10, {{link, 1}}, 0.5), nullptr); });
  ASSERT_THAT(net.Run(), IsOk());
  ASSERT_EQ(net.timeline().size(), 1u);
  ExpectClose(net.timeline()[0].start_s, 1);
  ExpectClose(net.timeline()[0].end_s, 2.5);
}

}  // namespace
}  // namespace sim
}  // namespace gradsync
