// Where a job's ranks and shards run, as the alpha-beta model counts them
// (study/alpha_beta/sync_placement.h): distinct hosts and servers, and
// whether the servers share the ranks' hosts.
#include "study/alpha_beta/sync_placement.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

using ::testing::ElementsAre;

using Shards = std::vector<std::pair<std::string, std::string>>;

TEST(SyncPlacementTest, CountsDistinctHostsAndServers) {
  const SyncPlacement p =
      SyncPlacementOf({"a", "a", "b", "a"},
                      Shards{{"ps-1", "a"}, {"ps-2", "b"}, {"ps-1", "a"}});
  EXPECT_THAT(p.hosts, ElementsAre("a", "b"));
  EXPECT_THAT(p.servers, ElementsAre("ps-1", "ps-2"));
  EXPECT_TRUE(p.colocated);
}

TEST(SyncPlacementTest, ColocatedOnlyWhenEveryServerIsOnARanksHost) {
  EXPECT_FALSE(SyncPlacementOf({"a", "b"}, Shards{{"ps-1", "a"}, {"ps-2", "c"}})
                   .colocated);
  // A server whose host is unknown is on none of the ranks' hosts.
  EXPECT_FALSE(SyncPlacementOf({"a", ""}, Shards{{"ps-1", ""}}).colocated);
  // No shards: no PS at all.
  const SyncPlacement ring = SyncPlacementOf({"a", "b"}, Shards{});
  EXPECT_FALSE(ring.colocated);
  EXPECT_TRUE(ring.servers.empty());
}

TEST(SyncPlacementTest, InputsOfAPlacementPipelineInTheGivenPartitions) {
  const SyncPlacement separate = SyncPlacementOf(
      {"a", "a", "b", "c"}, Shards{{"ps-1", "x"}, {"ps-2", "y"}});
  const SyncModelInputs in = SyncModelInputsOf(separate, 1000, 65536);
  EXPECT_EQ(in.ring.layout, SyncLayout::kRing);
  EXPECT_EQ(in.ring.workers, 3);  // hosts, not ranks
  EXPECT_EQ(in.ps.layout, SyncLayout::kPsSeparate);
  EXPECT_EQ(in.ps.shards, 2);
  EXPECT_TRUE(in.ps.pipelined);
  EXPECT_EQ(in.ps.partition_bytes, 65536);
}

}  // namespace
}  // namespace gradsync
