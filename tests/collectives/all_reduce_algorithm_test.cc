// ChooseAllReduceAlgorithm, the one rule that picks an all-reduce's
// algorithm for the flat TCP communicator, the hierarchical communicator
// and the worker: each case is what one of them decided on its own before.
#include "collectives/all_reduce_algorithm.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace gradsync {
namespace {

constexpr size_t kThreshold = 2 << 20;

AllReduceChoice Flat(AllReduceAlgorithm configured, size_t bytes) {
  AllReduceChoice c;
  c.configured = configured;
  c.bytes = bytes;
  c.halving_doubling_max_bytes = kThreshold;
  c.hierarchical_min_bytes = kThreshold;
  return c;
}

AllReduceChoice Placed(AllReduceAlgorithm configured, size_t bytes, int hosts,
                       int largest_host) {
  AllReduceChoice c = Flat(configured, bytes);
  c.hosts = hosts;
  c.largest_host = largest_host;
  return c;
}

TEST(ChooseAllReduceAlgorithmTest, FlatCommunicatorSplitsAtTheThreshold) {
  for (AllReduceAlgorithm a :
       {AllReduceAlgorithm::kAuto, AllReduceAlgorithm::kHierarchical}) {
    EXPECT_EQ(AllReduceAlgorithm::kHalvingDoubling,
              ChooseAllReduceAlgorithm(Flat(a, 0)));
    EXPECT_EQ(AllReduceAlgorithm::kHalvingDoubling,
              ChooseAllReduceAlgorithm(Flat(a, kThreshold)));
    EXPECT_EQ(AllReduceAlgorithm::kRing,
              ChooseAllReduceAlgorithm(Flat(a, kThreshold + 1)));
  }
}

TEST(ChooseAllReduceAlgorithmTest, ForcedAlgorithmsAreKeptEverywhere) {
  for (AllReduceAlgorithm a :
       {AllReduceAlgorithm::kRing, AllReduceAlgorithm::kHalvingDoubling}) {
    for (size_t bytes : {size_t{0}, kThreshold, size_t{SIZE_MAX}}) {
      EXPECT_EQ(a, ChooseAllReduceAlgorithm(Flat(a, bytes)));
      EXPECT_EQ(a, ChooseAllReduceAlgorithm(Placed(a, bytes, 2, 2)));
    }
  }
}

TEST(ChooseAllReduceAlgorithmTest, AutoUsesTheHierarchyFromMinBytes) {
  const AllReduceAlgorithm a = AllReduceAlgorithm::kAuto;
  EXPECT_EQ(AllReduceAlgorithm::kHierarchical,
            ChooseAllReduceAlgorithm(Placed(a, kThreshold, 2, 2)));
  EXPECT_EQ(AllReduceAlgorithm::kHalvingDoubling,
            ChooseAllReduceAlgorithm(Placed(a, kThreshold - 1, 2, 2)));
  AllReduceChoice low = Placed(a, 1 << 10, 2, 2);
  low.hierarchical_min_bytes = 1 << 10;
  EXPECT_EQ(AllReduceAlgorithm::kHierarchical, ChooseAllReduceAlgorithm(low));
}

TEST(ChooseAllReduceAlgorithmTest, AutoNeedsSeveralHostsAndTwoRanksOnOne) {
  const AllReduceAlgorithm a = AllReduceAlgorithm::kAuto;
  EXPECT_EQ(AllReduceAlgorithm::kRing,
            ChooseAllReduceAlgorithm(Placed(a, SIZE_MAX, 1, 4)));
  EXPECT_EQ(AllReduceAlgorithm::kRing,
            ChooseAllReduceAlgorithm(Placed(a, SIZE_MAX, 4, 1)));
  EXPECT_EQ(AllReduceAlgorithm::kHierarchical,
            ChooseAllReduceAlgorithm(Placed(a, SIZE_MAX, 2, 3)));
}

TEST(ChooseAllReduceAlgorithmTest, ForcedHierarchyOnAnyKnownPlacement) {
  const AllReduceAlgorithm a = AllReduceAlgorithm::kHierarchical;
  EXPECT_EQ(AllReduceAlgorithm::kHierarchical,
            ChooseAllReduceAlgorithm(Placed(a, 0, 1, 1)));
  EXPECT_EQ(AllReduceAlgorithm::kHierarchical,
            ChooseAllReduceAlgorithm(Placed(a, 4, 3, 1)));
}

TEST(ChooseAllReduceAlgorithmTest, MayChooseHierarchicalUnlessForcedFlat) {
  EXPECT_TRUE(MayChooseHierarchical(AllReduceAlgorithm::kAuto));
  EXPECT_TRUE(MayChooseHierarchical(AllReduceAlgorithm::kHierarchical));
  EXPECT_FALSE(MayChooseHierarchical(AllReduceAlgorithm::kRing));
  EXPECT_FALSE(MayChooseHierarchical(AllReduceAlgorithm::kHalvingDoubling));
}

}  // namespace
}  // namespace gradsync
