// The explanation's logic (study/explain.h) on a crafted job: per mode,
// the settled steps' medians against the model, the bottleneck named, and
// the verdict.
#include "study/explain.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace study {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::SizeIs;

constexpr int64_t kBytes = 8 << 20;

// Two ranks on h1 and h2, one PS server on s1; 10 ring steps, then 10 PS
// steps. Rank 1 is the slower one each step.
// The PS's partitions: the spec's default, 4 MiB.
constexpr int64_t kPartition = 4 << 20;

ExplainInput MakeJob(double compute_s = 0.001) {
  ExplainInput c;
  c.job_id = "job-7";
  c.rank_hosts = {"h1", "h2"};
  c.shard_servers = {{"10.0.0.9:1", "s1"}};
  c.ps_partition_bytes = kPartition;
  for (int64_t step = 0; step < 20; ++step) {
    const bool on_ps = step >= 10;
    for (int r = 0; r < 2; ++r) {
      ExplainStep m;
      m.rank = r;
      m.step = step;
      m.mode = on_ps ? SyncPath::kPs : SyncPath::kRing;
      m.sync_bytes = kBytes;
      const double sync = (on_ps ? 0.30 : 0.09) + 0.001 * r;
      m.sync_busy_s = sync;
      m.compute_s = compute_s;
      m.comm_s = sync;
      m.step_s = sync + compute_s + 0.002 * r;
      if (step == 10) m.switch_s = 0.5;  // the switch's own step
      c.steps.push_back(m);
    }
  }
  return c;
}

LinkFacts Links() {
  LinkFacts links;
  links.model = {0, 100e6};
  links.source = "test links";
  return links;
}

TEST(ExplainTest, MeasuredNextToPredictedPerModeWithTheBottleneck) {
  const ExplainInput c = MakeJob();
  absl::StatusOr<Explanation> e = ExplainJob(c, Links());
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(e->hosts, 2);
  EXPECT_EQ(e->servers, 1);
  EXPECT_FALSE(e->colocated);
  // Ring: 2(N-1)/N S / B = S / B.
  EXPECT_NEAR(e->ring_predicted_s, kBytes / 100e6, 1e-12);
  // PS, one server: N S (1 + 1/P) with P = 2 partitions of 4 MiB.
  EXPECT_NEAR(e->ps_predicted_s, 3.0 * kBytes / 100e6, 1e-12);
  ASSERT_THAT(e->modes, SizeIs(2));
  // The settled steps: 2 left out after each start (the ring's first two,
  // the PS's switch step and the next).
  const ModeExplanation& ring =
      e->modes[0].mode == SyncPath::kRing ? e->modes[0] : e->modes[1];
  const ModeExplanation& ps =
      e->modes[0].mode == SyncPath::kPs ? e->modes[0] : e->modes[1];
  EXPECT_EQ(ring.steps, 8);
  EXPECT_EQ(ps.steps, 8);
  EXPECT_NEAR(ring.sync_s, 0.091, 1e-12);
  EXPECT_NEAR(ps.sync_s, 0.301, 1e-12);
  EXPECT_THAT(ring.bottleneck, HasSubstr("every worker's link"));
  EXPECT_THAT(ps.bottleneck,
              HasSubstr("the busiest server's link: 10.0.0.9:1 (host s1)"));
  EXPECT_THAT(e->verdict, HasSubstr("the model says the ring is faster"));
  EXPECT_THAT(e->verdict, HasSubstr("K* = N^2/(2(N-1)) = 2.00"));
  const std::string text = FormatExplanation(*e);
  EXPECT_THAT(text, HasSubstr("links: test links"));
  EXPECT_THAT(text, HasSubstr("sync 301.0 ms measured, 251.7 ms predicted"));
}

TEST(ExplainTest, ComputeHeavyStepsBlameCompute) {
  const ExplainInput c = MakeJob(/*compute_s=*/1.0);
  absl::StatusOr<Explanation> e = ExplainJob(c, Links());
  ASSERT_THAT(e, IsOk());
  for (const ModeExplanation& m : e->modes) {
    EXPECT_THAT(m.bottleneck, HasSubstr("compute:")) << SyncPathName(m.mode);
  }
}

TEST(ExplainTest, LinksThatExplainLittleSaySo) {
  ExplainInput c = MakeJob();
  // 10x slower than the links allow.
  for (ExplainStep& m : c.steps) {
    m.sync_busy_s *= 10;
    m.step_s *= 10;
    m.comm_s *= 10;
  }
  absl::StatusOr<Explanation> e = ExplainJob(c, Links());
  ASSERT_THAT(e, IsOk());
  EXPECT_THAT(e->modes[0].bottleneck, HasSubstr("the links explain only"));
}

// The PS's transport, from the steps' metrics: named with its layout, and,
// when the links explain little of a PS on gRPC streams, blamed with the
// plane as the remedy; a PS on the plane measured as slow is not.
TEST(ExplainTest, KnowsThePsTransportAndBlamesGrpcWhenTheLinksDoNot) {
  for (const std::string transport : {"grpc", "plane"}) {
    ExplainInput c = MakeJob();
    for (ExplainStep& m : c.steps) {
      if (m.mode != SyncPath::kPs) continue;
      m.ps_transport = transport;
      m.sync_busy_s *= 10;
      m.step_s *= 10;
      m.comm_s *= 10;
    }
    absl::StatusOr<Explanation> e = ExplainJob(c, Links());
    ASSERT_THAT(e, IsOk());
    const ModeExplanation& ps =
        e->modes[0].mode == SyncPath::kPs ? e->modes[0] : e->modes[1];
    const ModeExplanation& ring =
        e->modes[0].mode == SyncPath::kPs ? e->modes[1] : e->modes[0];
    EXPECT_EQ(ps.ps_transport, transport);
    EXPECT_EQ(ring.ps_transport, "");
    EXPECT_THAT(ps.bottleneck, HasSubstr("the links explain only"));
    if (transport == "grpc") {
      EXPECT_THAT(ps.layout, HasSubstr(", over gRPC streams"));
      EXPECT_THAT(ps.bottleneck,
                  HasSubstr("this PS runs on gRPC streams, whose "
                            "per-message work (and TLS) is on the CPU"));
    } else {
      EXPECT_THAT(ps.layout, HasSubstr(", over the tensor plane"));
      EXPECT_THAT(ps.bottleneck, ::testing::Not(HasSubstr("gRPC")));
    }
  }
}

// Every rank on one host (a local cluster): no link carries the ring, and
// the PS's server shares the host. explain predicts nothing, never prints
// "0.0 ms predicted" or "x0.00", and compares what each path reached.
TEST(ExplainTest, OneHost_NoLinkInPlay_NoZeroPredictionMeasuredComparison) {
  ExplainInput c = MakeJob();
  c.rank_hosts[1] = "h1";
  c.shard_servers[0].second = "h1";
  absl::StatusOr<Explanation> e = ExplainJob(c, Links());
  ASSERT_THAT(e, IsOk());
  EXPECT_EQ(e->hosts, 1);
  EXPECT_TRUE(e->colocated);
  EXPECT_FALSE(e->ring_links);
  EXPECT_FALSE(e->ps_links);
  EXPECT_EQ(e->ring_predicted_s, 0);
  EXPECT_EQ(e->ps_predicted_s, 0);
  ASSERT_THAT(e->modes, SizeIs(2));
  for (const ModeExplanation& m : e->modes) {
    EXPECT_THAT(m.bottleneck, HasSubstr("this host, not a link"));
    EXPECT_THAT(m.bottleneck, HasSubstr("share host h1"));
    EXPECT_GT(m.busbw, 0);
    EXPECT_EQ(m.error, 0);
  }
  // The ring: 8 MiB in 91 ms, busbw = algbw * 2(N-1)/N = algbw.
  const ModeExplanation& ring =
      e->modes[0].mode == SyncPath::kRing ? e->modes[0] : e->modes[1];
  EXPECT_NEAR(ring.busbw, kBytes / 0.091, 1);
  EXPECT_THAT(e->verdict, HasSubstr("no link is in play"));
  EXPECT_THAT(e->verdict,
              HasSubstr("the ring synchronises faster: ring 91.0 ms, ps "
                        "301.0 ms (x3.31)"));
  const std::string text = FormatExplanation(*e);
  EXPECT_THAT(text, ::testing::Not(HasSubstr("predicted (")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("0.0 ms predicted")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("x0.00")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("in 0 steps")));
  EXPECT_THAT(text, HasSubstr("sync 91.0 ms measured (busbw 0.09 GB/s); no "
                              "link prediction"));
}

// Ranks on one host, the server on another: the PS still crosses a link
// and is predicted; the ring is not.
TEST(ExplainTest, OneWorkerHostSeparateServer_PsPredictedRingNot) {
  ExplainInput c = MakeJob();
  c.rank_hosts[1] = "h1";
  absl::StatusOr<Explanation> e = ExplainJob(c, Links());
  ASSERT_THAT(e, IsOk());
  EXPECT_FALSE(e->ring_links);
  EXPECT_TRUE(e->ps_links);
  EXPECT_EQ(e->ring_predicted_s, 0);
  EXPECT_GT(e->ps_predicted_s, 0);
  EXPECT_THAT(e->verdict, HasSubstr("the ring crosses no link"));
}

TEST(ExplainTest, NoSynchronisedStepYetIsAnError) {
  ExplainInput c = MakeJob();
  c.steps.clear();
  EXPECT_THAT(ExplainJob(c, Links()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("no synchronised step yet")));
}

}  // namespace
}  // namespace study
}  // namespace gradsync
