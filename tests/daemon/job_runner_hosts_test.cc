// JobRunners registered as separate hosts (JobRunnerConfig.host), as
// `gradsync lab` and multi-host clusters place them: the host-aware
// communicator sees the placement, picks the hierarchical all-reduce on
// several hosts of several ranks (auto), and JobSpec.ring_algorithm forces
// ring or the hierarchy on any placement.
#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "tests/daemon/job_runner_fixture.h"

namespace gradsync {
namespace {

using job_runner_testing::JobRunnerTest;
using job_runner_testing::SyntheticSpec;

size_t CountContaining(const std::vector<std::string>& lines,
                       absl::string_view what) {
  size_t n = 0;
  for (const std::string& line : lines) n += absl::StrContains(line, what);
  return n;
}

// Two workers that registered as two hosts, two ranks each: their job
// picks the hierarchical all-reduce (auto), says so in the log, and its
// 2.4 MB buckets, above auto's 2 MiB, train to identical parameters.
TEST_F(JobRunnerTest, TwoHostsOfTwoRanks_HierarchicalAllReduceTrains) {
  JobSpec spec = SyntheticSpec(3, 0);
  spec.mutable_model()->set_synthetic_floats(600000);
  spec.set_bucket_bytes(0);  // one bucket per step: the whole 2.4 MB
  const std::vector<std::string> lines =
      RunOnHostsAndCheck("job-hier", spec, {2, 2}, 3);
  EXPECT_EQ(CountContaining(lines, "2 hosts of 2+2 ranks: hierarchical"), 4u);
}

// JobSpec.ring_algorithm forces the all-reduce (small buckets, which auto
// would run flat): "ring" the flat communicator, "hierarchical" the
// hierarchy even where it degenerates (one host; one rank per host). Each
// job trains to identical parameters and its log says what was forced.
struct ForcedCase {
  std::string name;
  std::string algorithm;
  std::vector<int> ranks_per_host;
  std::string log;  // in every rank's log
};

class ForcedAlgorithmTest : public JobRunnerTest,
                            public ::testing::WithParamInterface<ForcedCase> {};

TEST_P(ForcedAlgorithmTest, JobSucceeds) {
  const ForcedCase& c = GetParam();
  JobSpec spec = SyntheticSpec(3, 0);
  spec.set_ring_algorithm(c.algorithm);
  const std::vector<std::string> lines =
      RunOnHostsAndCheck("job-forced", spec, c.ranks_per_host, 3);
  int world = 0;
  for (int n : c.ranks_per_host) world += n;
  EXPECT_EQ(CountContaining(lines, c.log), static_cast<size_t>(world));
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, ForcedAlgorithmTest,
    ::testing::Values(
        ForcedCase{
            "RingOnTwoHostsOfTwo", "ring", {2, 2}, "ring all-reduce (forced)"},
        ForcedCase{"HierarchicalOnTwoHostsOfTwo",
                   "hierarchical",
                   {2, 2},
                   "2 hosts of 2+2 ranks: hierarchical all-reduce (forced)"},
        ForcedCase{"HierarchicalOnOneHost",
                   "hierarchical",
                   {3},
                   "1 host of 3 ranks: hierarchical all-reduce (forced)"},
        ForcedCase{"HierarchicalOneRankPerHost",
                   "hierarchical",
                   {1, 1},
                   "2 hosts of 1+1 ranks: hierarchical all-reduce (forced)"}),
    [](const ::testing::TestParamInfo<ForcedCase>& info) {
      return info.param.name;
    });

}  // namespace
}  // namespace gradsync
