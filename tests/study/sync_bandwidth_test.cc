// The bandwidth arithmetic of per-step metrics and `gradsync bench`
// (study/alpha_beta/sync_bandwidth.h), on inputs whose results are known
// exactly.
#include "study/alpha_beta/sync_bandwidth.h"

#include <gtest/gtest.h>

#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace gradsync {
namespace {

TEST(SyncBandwidthTest, AllReduceFactorIsNcclTests) {
  EXPECT_DOUBLE_EQ(AllReduceBusFactor(1), 0.0);
  EXPECT_DOUBLE_EQ(AllReduceBusFactor(2), 1.0);
  EXPECT_DOUBLE_EQ(AllReduceBusFactor(4), 1.5);
  EXPECT_DOUBLE_EQ(AllReduceBusFactor(8), 1.75);
}

TEST(SyncBandwidthTest, PsFactorIsTheBusiestLinksBytesPerByte) {
  // A worker's link moves S each way; a shard's N*S/K each way; push and
  // pull follow each other.
  EXPECT_DOUBLE_EQ(PsBusFactor(4, 1), 8.0);
  EXPECT_DOUBLE_EQ(PsBusFactor(4, 2), 4.0);
  EXPECT_DOUBLE_EQ(PsBusFactor(3, 2), 3.0);
  EXPECT_DOUBLE_EQ(PsBusFactor(2, 2), 2.0);
  EXPECT_DOUBLE_EQ(PsBusFactor(1, 4), 2.0);
  EXPECT_DOUBLE_EQ(PsBusFactor(4, 0), 0.0);
}

TEST(SyncBandwidthTest, AlgorithmBandwidthIsBytesPerBusySecond) {
  EXPECT_DOUBLE_EQ(AlgorithmBandwidth(2'000'000'000, absl::Seconds(2)), 1.0);
  EXPECT_DOUBLE_EQ(AlgorithmBandwidth(1'000'000, absl::Milliseconds(1)), 1.0);
  EXPECT_DOUBLE_EQ(AlgorithmBandwidth(1'000'000, absl::ZeroDuration()), 0.0);
  EXPECT_DOUBLE_EQ(AlgorithmBandwidth(1'000'000, absl::Seconds(-1)), 0.0);
}

TEST(SyncBandwidthTest, BusyTimeIsTheLengthOfTheUnion) {
  const absl::Time t0 = absl::UnixEpoch();
  auto at = [t0](int ms) { return t0 + absl::Milliseconds(ms); };
  EXPECT_EQ(BusyTime({}), absl::ZeroDuration());
  // Overlapping [0, 10) and [5, 20), touching [20, 25), disjoint [30, 40),
  // contained [32, 35), given out of order; an empty and a reversed one
  // count nothing.
  const std::vector<TimeInterval> intervals = {
      {at(30), at(40)}, {at(5), at(20)},  {at(0), at(10)},  {at(32), at(35)},
      {at(20), at(25)}, {at(50), at(50)}, {at(70), at(60)},
  };
  EXPECT_EQ(BusyTime(intervals), absl::Milliseconds(35));
  EXPECT_EQ(BusyTime({{at(3), at(4)}}), absl::Milliseconds(1));
}

TEST(SyncBandwidthTest, IdealIsBOnOneNode) {
  ClusterLinks links;
  links.link_gbps = 25.0;
  links.ranks_per_node = 8;
  EXPECT_DOUBLE_EQ(*IdealBusBandwidth(links), 25.0);
}

TEST(SyncBandwidthTest, IdealAcrossNodesIsTheTighterLink) {
  ClusterLinks links;
  links.link_gbps = 100.0;
  links.node_link_gbps = 10.0;
  links.ranks_per_node = 4;
  links.nodes = 2;
  // N = 8: I(N-1)Q/(N(Q-1)) = 10*7*2/8 = 17.5; B(N-1)/(N-Q) = 700/6.
  EXPECT_DOUBLE_EQ(*IdealBusBandwidth(links), 17.5);
  links.node_link_gbps = 100.0;  // 175 against 116.67: B binds.
  EXPECT_DOUBLE_EQ(*IdealBusBandwidth(links), 700.0 / 6.0);
  // One rank per node: every hop crosses a node link; B plays no part.
  links.ranks_per_node = 1;
  links.nodes = 4;
  links.node_link_gbps = 12.0;  // 12*3*4/(4*3) = 12
  EXPECT_DOUBLE_EQ(*IdealBusBandwidth(links), 12.0);
}

// Uneven nodes: the fullest node's ranks carry the most intra-node
// traffic, 2(P-1)/P S each, and every node link 2(Q-1)/Q S.
TEST(SyncBandwidthTest, IdealOnUnevenNodesIsBoundByTheFullestNode) {
  ClusterLinks links;
  links.link_gbps = 10.0;
  links.node_link_gbps = 100.0;  // I does not bind here
  links.nodes = 2;
  links.ranks_per_node = 3;
  links.node_ranks = {3, 1};
  // N = 4, P = 3: B P(N-1)/(N(P-1)) = 10*3*3/(4*2) = 11.25; I's term is
  // 100*3*2/4 = 150.
  EXPECT_DOUBLE_EQ(*IdealBusBandwidth(links), 11.25);
  // With I binding: 1*3*2/4 = 1.5, as on 2 even nodes of 2 (N = 4).
  links.node_link_gbps = 1.0;
  EXPECT_DOUBLE_EQ(*IdealBusBandwidth(links), 1.5);
  // Counts that do not match P and Q are refused.
  for (const std::vector<int>& bad :
       std::vector<std::vector<int>>{{3}, {2, 1}, {3, 0}, {3, 1, 1}}) {
    links.node_ranks = bad;
    EXPECT_EQ(IdealBusBandwidth(links).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad.size();
  }
}

// With P ranks on every node the general form is nccl-tests' own.
TEST(SyncBandwidthTest, IdealOnEvenNodesIsTheSameWithOrWithoutCounts) {
  ClusterLinks links;
  links.link_gbps = 100.0;
  links.node_link_gbps = 1000.0;
  links.nodes = 3;
  links.ranks_per_node = 4;
  const double without = *IdealBusBandwidth(links);
  links.node_ranks = {4, 4, 4};
  EXPECT_DOUBLE_EQ(*IdealBusBandwidth(links), without);
  // N = 12, Q = 3: B(N-1)/(N-Q) = 1100/9.
  EXPECT_DOUBLE_EQ(without, 1100.0 / 9.0);
}

TEST(SyncBandwidthTest, IdealRejectsMissingLinks) {
  ClusterLinks links;
  EXPECT_EQ(IdealBusBandwidth(links).status().code(),
            absl::StatusCode::kInvalidArgument);
  links.link_gbps = 10.0;
  links.nodes = 2;  // no I
  EXPECT_EQ(IdealBusBandwidth(links).status().code(),
            absl::StatusCode::kInvalidArgument);
  links.node_link_gbps = 1.0;
  links.ranks_per_node = 0;
  EXPECT_EQ(IdealBusBandwidth(links).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace gradsync
