#include "cli/bench/collective.h"

#include "gtest/gtest.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {

TEST(CollectiveTest, ParseAcceptsNcclTestsSpellings) {
  EXPECT_EQ(*ParseCollective("allreduce"), Collective::kAllReduce);
  EXPECT_EQ(*ParseCollective("all_reduce"), Collective::kAllReduce);
  EXPECT_EQ(*ParseCollective("reduce-scatter"), Collective::kReduceScatter);
  EXPECT_EQ(*ParseCollective("AllGather"), Collective::kAllGather);
  EXPECT_EQ(*ParseCollective("broadcast"), Collective::kBroadcast);
  EXPECT_EQ(ParseCollective("alltoall").status().code(),
            absl::StatusCode::kInvalidArgument);
  for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter,
                       Collective::kAllGather, Collective::kBroadcast}) {
    EXPECT_EQ(*ParseCollective(CollectiveName(c)), c);
  }
}

TEST(BusBandwidthFactorTest, MatchesNcclTests) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllReduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kAllGather, 3), 2.0 / 3);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(Collective::kBroadcast, 8), 1.0);
}

TEST(AlgorithmBandwidthTest, GigabytesPerSecond) {
  EXPECT_DOUBLE_EQ(AlgorithmBandwidth(1000000000, 2.0), 0.5);
  EXPECT_DOUBLE_EQ(AlgorithmBandwidth(1 << 20, 0.0), 0.0);
}

TEST(CountsForSizeTest, AllReduceAndBroadcastUseTheWholeSize) {
  for (Collective c : {Collective::kAllReduce, Collective::kBroadcast}) {
    const CollectiveCounts counts =
        CountsForSize(c, 1 << 20, DataType::kFloat32, 3);
    EXPECT_EQ(counts.send_count, 262144u);
    EXPECT_EQ(counts.recv_count, 262144u);
    EXPECT_EQ(counts.param_count, 262144u);
    EXPECT_EQ(counts.size_bytes, 1u << 20);
  }
  // A size that is not a whole number of elements rounds down.
  EXPECT_EQ(CountsForSize(Collective::kAllReduce, 1001, DataType::kFloat64, 2)
                .size_bytes,
            1000u);
}

TEST(CountsForSizeTest, ReduceScatterAndAllGatherRoundToRanks) {
  // 1 MiB of float over 3 ranks: 262144 elements, 87381 per rank.
  const CollectiveCounts rs =
      CountsForSize(Collective::kReduceScatter, 1 << 20, DataType::kFloat32, 3);
  EXPECT_EQ(rs.recv_count, 87381u);
  EXPECT_EQ(rs.send_count, 3u * 87381);
  EXPECT_EQ(rs.param_count, 87381u);
  EXPECT_EQ(rs.size_bytes, 3u * 87381 * 4);
  const CollectiveCounts ag =
      CountsForSize(Collective::kAllGather, 1 << 20, DataType::kFloat32, 3);
  EXPECT_EQ(ag.send_count, 87381u);
  EXPECT_EQ(ag.recv_count, 3u * 87381);
  EXPECT_EQ(ag.param_count, 87381u);
  EXPECT_EQ(ag.size_bytes, 3u * 87381 * 4);
}

TEST(InPlaceOffsetsTest, FollowNcclConventions) {
  const CollectiveCounts rs =
      CountsForSize(Collective::kReduceScatter, 120, DataType::kInt32, 3);
  EXPECT_EQ(InPlaceOffsetsFor(Collective::kReduceScatter, rs, 2).recv, 20u);
  EXPECT_EQ(InPlaceOffsetsFor(Collective::kReduceScatter, rs, 2).send, 0u);
  const CollectiveCounts ag =
      CountsForSize(Collective::kAllGather, 120, DataType::kInt32, 3);
  EXPECT_EQ(InPlaceOffsetsFor(Collective::kAllGather, ag, 1).send, 10u);
  EXPECT_EQ(InPlaceOffsetsFor(Collective::kAllGather, ag, 1).recv, 0u);
  const CollectiveCounts ar =
      CountsForSize(Collective::kAllReduce, 120, DataType::kInt32, 3);
  EXPECT_EQ(InPlaceOffsetsFor(Collective::kAllReduce, ar, 2).send, 0u);
  EXPECT_EQ(InPlaceOffsetsFor(Collective::kAllReduce, ar, 2).recv, 0u);
}

}  // namespace
}  // namespace bench
}  // namespace cli
}  // namespace gradsync
