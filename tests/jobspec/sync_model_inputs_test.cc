// The alpha-beta model's inputs for a placed job with its spec's
// partitions, which `--mode auto` and `gradsync explain` both predict from
// (the placement itself: tests/study/sync_placement_test.cc).
#include "jobspec/sync_model_inputs.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/job_spec.h"

namespace gradsync {
namespace {

using Shards = std::vector<std::pair<std::string, std::string>>;

TEST(SyncModelInputsTest, RingOverHostsPsPipelinedInTheSpecsPartitions) {
  JobSpec spec;
  const SyncPlacement separate = SyncPlacementOf(
      {"a", "a", "b", "c"}, Shards{{"ps-1", "x"}, {"ps-2", "y"}});
  SyncModelInputs in = SyncModelInputsFromSpec(spec, separate, 1000);
  EXPECT_EQ(in.ring.layout, SyncLayout::kRing);
  EXPECT_EQ(in.ring.workers, 3);  // hosts, not ranks
  EXPECT_EQ(in.ring.bytes, 1000);
  EXPECT_FALSE(in.ring.pipelined);
  EXPECT_EQ(in.ps.layout, SyncLayout::kPsSeparate);
  EXPECT_EQ(in.ps.workers, 3);
  EXPECT_EQ(in.ps.shards, 2);
  EXPECT_EQ(in.ps.bytes, 1000);
  EXPECT_TRUE(in.ps.pipelined);
  EXPECT_EQ(in.ps.partition_bytes, kDefaultPsPartitionBytes);
  EXPECT_TRUE(ValidateSyncCase(in.ring).ok());
  EXPECT_TRUE(ValidateSyncCase(in.ps).ok());

  spec.mutable_ps()->set_partition_bytes(65536);
  in = SyncModelInputsFromSpec(spec, separate, 1000);
  EXPECT_EQ(in.ps.partition_bytes, 65536);
}

TEST(SyncModelInputsTest, ColocatedShardsAtMostOnePerHostAndAtLeastOne) {
  const JobSpec spec;
  const SyncPlacement colocated = SyncPlacementOf(
      {"a", "b"}, Shards{{"ps-1", "a"}, {"ps-2", "b"}, {"ps-3", "a"}});
  SyncModelInputs in = SyncModelInputsFromSpec(spec, colocated, 4096);
  EXPECT_EQ(in.ps.layout, SyncLayout::kPsColocated);
  EXPECT_EQ(in.ps.shards, 2);  // K <= N when colocated
  EXPECT_TRUE(ValidateSyncCase(in.ps).ok());
  in = SyncModelInputsFromSpec(spec, SyncPlacementOf({"a"}, Shards{}), 4096);
  EXPECT_EQ(in.ps.shards, 1);
}

}  // namespace
}  // namespace gradsync
