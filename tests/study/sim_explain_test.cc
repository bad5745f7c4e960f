// `explain` through the simulator (study/sim/sim_explain.h) on crafted
// jobs whose steps are worked out by hand: a ring and a PS where backward
// hides part of the synchronisation, so that the simulator's exposed
// communication is below the formula's busy time, and the cases that fall
// back to the formula, each with its reason.
#include "study/sim/sim_explain.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "study/alpha_beta/sync_model.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace sim {
namespace {

using ::gradsync::testing::IsOk;
using study::ExplainInput;
using study::ExplainStep;
using study::Explanation;
using study::LinkFacts;
using ::testing::DoubleNear;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// Two layers of 1e6 fp32 elements (4 MB each, S = 8 MB) and equal FLOPs:
// with 4 s of backward, layer b (the last) is final at 2 s, layer a at
// 4 s. Links of 4 MB/s, no alpha.
constexpr double kLayerElements = 1e6;
constexpr int64_t kBytes = 8000000;
constexpr double kLinkBps = 4e6;

ExplainInput MakeJob(SyncPath mode) {
  ExplainInput c;
  c.job_id = "job-sim";
  c.rank_hosts = {"h1", "h2"};
  c.shard_servers = {{"10.0.0.9:1", "s1"}};
  c.ps_partition_bytes = 4000000;  // one layer per partition
  c.model_kind = "synthetic";
  c.profile_name = "two-layers";
  c.profile = {{"a", static_cast<int64_t>(kLayerElements), 1.0},
               {"b", static_cast<int64_t>(kLayerElements), 1.0}};
  c.profile_scale = 1;
  c.compute_s = 4;
  c.bucket_bytes = 4000000;  // one layer per bucket
  for (int64_t step = 0; step < 6; ++step) {
    for (int r = 0; r < 2; ++r) {
      ExplainStep m;
      m.step = step;
      m.rank = r;
      m.mode = mode;
      m.sync_bytes = kBytes;
      m.compute_s = 4;
      m.comm_s = 1;
      m.sync_busy_s = 2;
      m.step_s = 5;
      c.steps.push_back(m);
    }
  }
  return c;
}

LinkFacts Links() {
  LinkFacts links;
  links.model = {0, kLinkBps};
  links.source = "test links";
  return links;
}

// Ring, N = 2: a bucket of 4 MB takes 2 steps of 2 MB at 4 MB/s = 1 s.
// Bucket b syncs over [2, 3) while layer a's backward runs; bucket a over
// [4, 5). Step 5 s, exposed 1 s. The formula's busy time for S = 8 MB:
// 2(N-1)/N * S / B = 2 s, all of it as if exposed.
TEST(SimExplainTest, RingOverlapHidesHalfOfTheFormulasBusyTime) {
  absl::StatusOr<Explanation> e =
      ExplainJobWithSimulator(MakeJob(SyncPath::kRing), Links());
  ASSERT_THAT(e, IsOk());
  ASSERT_THAT(e->modes, SizeIs(1));
  const study::ModeExplanation& m = e->modes[0];
  EXPECT_EQ(m.predictor, "simulator");
  EXPECT_THAT(m.predicted_s, DoubleNear(2.0, 1e-9));
  EXPECT_THAT(m.predicted_exposed_s, DoubleNear(1.0, 1e-9));
  EXPECT_THAT(m.predicted_step_s, DoubleNear(5.0, 1e-9));
  EXPECT_LT(m.predicted_exposed_s, m.predicted_s);
  EXPECT_THAT(m.predictor_reason, HasSubstr("two-layers"));
  EXPECT_THAT(m.predictor_reason, HasSubstr("ring, N = 2, G = 1"));
  const std::string text = study::FormatExplanation(*e);
  EXPECT_THAT(text, HasSubstr("simulator: exposed comm 1000.0 ms measured, "
                              "1000.0 ms predicted; step 5000.0 ms "
                              "measured, 5000.0 ms predicted"));
}

// PS, one separate server, partitions of one layer. Each push or pull of
// a partition moves 4 MB per worker through the server's NIC, 2 flows:
// 8 MB at 4 MB/s = 2 s. Push b [2, 4); pull b [4, 6) with push a [4, 6)
// on the other direction; pull a [6, 8). Step 8 s, exposed 4 s, against
// the formula's busy time for the whole S.
TEST(SimExplainTest, PsPartitionsOverlapBackwardAndEachOther) {
  absl::StatusOr<Explanation> e =
      ExplainJobWithSimulator(MakeJob(SyncPath::kPs), Links());
  ASSERT_THAT(e, IsOk());
  ASSERT_THAT(e->modes, SizeIs(1));
  const study::ModeExplanation& m = e->modes[0];
  EXPECT_EQ(m.predictor, "simulator");
  EXPECT_THAT(m.predicted_exposed_s, DoubleNear(4.0, 1e-9));
  EXPECT_THAT(m.predicted_step_s, DoubleNear(8.0, 1e-9));
  EXPECT_THAT(m.predictor_reason,
              HasSubstr("ps, N = 2, G = 1, K = 1, partitions of 4000000"));
  EXPECT_LT(m.predicted_exposed_s, m.predicted_s);
}

TEST(SimExplainTest, NoLayerProfileKeepsTheFormulaAndSaysWhy) {
  ExplainInput c = MakeJob(SyncPath::kRing);
  c.profile.clear();
  c.model_kind = "mlp";
  absl::StatusOr<Explanation> e = ExplainJobWithSimulator(c, Links());
  ASSERT_THAT(e, IsOk());
  const study::ModeExplanation& m = e->modes[0];
  EXPECT_EQ(m.predictor, "alpha-beta formula");
  EXPECT_EQ(m.predicted_step_s, -1);
  EXPECT_EQ(m.predicted_exposed_s, -1);
  EXPECT_THAT(m.predicted_s, DoubleNear(2.0, 1e-9));
  EXPECT_THAT(m.predictor_reason, HasSubstr("(kind mlp) has no layer profile"));
  EXPECT_THAT(study::FormatExplanation(*e),
              HasSubstr("predicted by the alpha-beta formula: the job's "
                        "model (kind mlp) has no layer profile"));
}

// On one host no link is in play: neither predictor says anything.
TEST(SimExplainTest, OneHostPredictsNothing) {
  ExplainInput c = MakeJob(SyncPath::kRing);
  c.rank_hosts = {"h1", "h1"};
  absl::StatusOr<Explanation> e = ExplainJobWithSimulator(c, Links());
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(e->modes[0].predictor, "alpha-beta formula");
  EXPECT_EQ(e->modes[0].predicted_s, 0);
  EXPECT_THAT(e->modes[0].predictor_reason, HasSubstr("shares one host"));
  const std::string text = study::FormatExplanation(*e);
  EXPECT_THAT(text, ::testing::Not(HasSubstr("predicted by the")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("simulator:")));
}

TEST(SimExplainTest, UnevenRanksKeepTheFormula) {
  ExplainInput c = MakeJob(SyncPath::kRing);
  c.rank_hosts = {"h1", "h1", "h2"};
  for (ExplainStep& m : c.steps) m.rank = m.rank == 0 ? 0 : 2;
  absl::StatusOr<SimConfig> config =
      ExplainSimConfig(c, Links(), SyncPath::kRing);
  EXPECT_THAT(config.status().message(),
              HasSubstr("the ranks sit unevenly on their hosts"));
}

TEST(SimExplainTest, ServersOnWorkerHostsAreColocated) {
  ExplainInput c = MakeJob(SyncPath::kPs);
  c.shard_servers = {{"10.0.0.1:1", "h1"}, {"10.0.0.2:1", "h2"}};
  absl::StatusOr<SimConfig> config =
      ExplainSimConfig(c, Links(), SyncPath::kPs);
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->layout, SimLayout::kPsColocated);
  EXPECT_EQ(config->servers, 2);
  c.shard_servers = {{"10.0.0.1:1", "h1"}, {"10.0.0.9:1", "s1"}};
  EXPECT_THAT(ExplainSimConfig(c, Links(), SyncPath::kPs).status().message(),
              HasSubstr("some servers share the workers' hosts"));
  c.shard_servers = {{"10.0.0.9:1", ""}};
  EXPECT_THAT(ExplainSimConfig(c, Links(), SyncPath::kPs).status().message(),
              HasSubstr("is unknown"));
}

// A profile that is not what the job synchronised is not simulated.
TEST(SimExplainTest, ProfileOfAnotherSizeKeepsTheFormula) {
  ExplainInput c = MakeJob(SyncPath::kRing);
  c.profile[0].params = 2000000;
  absl::StatusOr<Explanation> e = ExplainJobWithSimulator(c, Links());
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(e->modes[0].predictor, "alpha-beta formula");
  EXPECT_THAT(e->modes[0].predictor_reason,
              HasSubstr("has 12000000 bytes of gradient, the job "
                        "synchronised 8000000"));
}

}  // namespace
}  // namespace sim
}  // namespace gradsync
