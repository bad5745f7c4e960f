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

// The servers' CPU term (sync_model.h) per transport, hand-computed: two
// ranks, one server, S = 8 MiB, so the server moves 2 R S / K = 32 MiB;
// at 1e-9 s/B (gRPC here) that is 33.554 ms, above the link's
// N S (1 + 1/P) / B = 3 * 8 MiB / 1 GB/s = 25.166 ms, so the CPU binds; at
// 1e-10 s/B (the plane) 3.355 ms, and the link binds.
TEST(ExplainTest, ServerCpuTerm_PerTransport_SaysWhichBinds) {
  LinkFacts links = Links();
  links.model = {0, 1e9};
  links.grpc_cpu.cpu_s_per_byte = 1e-9;
  links.plane_cpu.cpu_s_per_byte = 1e-10;
  for (const std::string transport : {"grpc", "plane"}) {
    ExplainInput c = MakeJob();
    for (ExplainStep& m : c.steps) {
      if (m.mode == SyncPath::kPs) m.ps_transport = transport;
    }
    absl::StatusOr<Explanation> e = ExplainJob(c, links);
    ASSERT_THAT(e, IsOk());
    const ModeExplanation& ps =
        e->modes[0].mode == SyncPath::kPs ? e->modes[0] : e->modes[1];
    EXPECT_NEAR(ps.link_s, 3.0 * kBytes / 1e9, 1e-12);
    const std::string text = FormatExplanation(*e);
    if (transport == "grpc") {
      EXPECT_NEAR(ps.cpu_s, 4.0 * kBytes * 1e-9, 1e-12);
      EXPECT_TRUE(ps.cpu_binds);
      EXPECT_NEAR(ps.predicted_s, 4.0 * kBytes * 1e-9, 1e-12);
      EXPECT_NEAR(e->ps_predicted_s, 4.0 * kBytes * 1e-9, 1e-12);
      EXPECT_THAT(ps.bottleneck, HasSubstr("the servers' CPU"));
      EXPECT_THAT(text, HasSubstr("model terms: link 25.2 ms, server CPU "
                                  "33.6 ms (the CPU binds)"));
    } else {
      EXPECT_NEAR(ps.cpu_s, 4.0 * kBytes * 1e-10, 1e-12);
      EXPECT_FALSE(ps.cpu_binds);
      EXPECT_NEAR(ps.predicted_s, 3.0 * kBytes / 1e9, 1e-12);
      EXPECT_THAT(text, HasSubstr("model terms: link 25.2 ms, server CPU "
                                  "3.4 ms (the link binds)"));
    }
  }
}

// The split of the measured PS sync (301 ms here): the model's part for
// the binding term, the rest the transport's. Over links at 100 MB/s the
// link's 251.658 ms is 84% and 49.342 ms (16%) is left to the transport.
TEST(ExplainTest, Split_ModelPartAndTransportRemainder_AddUp) {
  ExplainInput c = MakeJob();
  for (ExplainStep& m : c.steps) {
    if (m.mode == SyncPath::kPs) m.ps_transport = "grpc";
  }
  absl::StatusOr<Explanation> e = ExplainJob(c, Links());
  ASSERT_THAT(e, IsOk());
  const ModeExplanation& ps =
      e->modes[0].mode == SyncPath::kPs ? e->modes[0] : e->modes[1];
  const ModeExplanation& ring =
      e->modes[0].mode == SyncPath::kPs ? e->modes[1] : e->modes[0];
  EXPECT_NEAR(ps.model_part_s, 3.0 * kBytes / 100e6, 1e-12);
  EXPECT_NEAR(ps.transport_s, 0.301 - 3.0 * kBytes / 100e6, 1e-12);
  EXPECT_NEAR(ps.model_part_s + ps.transport_s, ps.sync_s, 1e-15);
  EXPECT_THAT(ps.split,
              HasSubstr("of the 301.0 ms PS sync, the model gives 251.7 ms "
                        "(84%) to the server's link for these bytes; the "
                        "other 49.3 ms (16%) is the transport's own "
                        "overhead (grpc:"));
  EXPECT_EQ(ring.split, "");
  EXPECT_THAT(FormatExplanation(*e), HasSubstr("\n  split: of the 301.0 ms"));
  // Faster than the model: all of it is the model's, none the transport's.
  for (ExplainStep& m : c.steps) m.sync_busy_s = 0.1;
  e = ExplainJob(c, Links());
  ASSERT_THAT(e, IsOk());
  const ModeExplanation& fast =
      e->modes[0].mode == SyncPath::kPs ? e->modes[0] : e->modes[1];
  EXPECT_NEAR(fast.model_part_s, 0.1, 1e-12);
  EXPECT_EQ(fast.transport_s, 0);
}

// On one host no link is in play: the split is against the server's CPU
// and memory copies, 2 R S / K * c = 4 * 8 MiB * 1e-10 s/B = 3.355 ms of
// the 301 ms (1%), the other 297.645 ms (99%) the transport's.
TEST(ExplainTest, OneHost_SplitAgainstTheServersCpu) {
  ExplainInput c = MakeJob();
  c.rank_hosts[1] = "h1";
  c.shard_servers[0].second = "h1";
  LinkFacts links = Links();
  links.plane_cpu.cpu_s_per_byte = 1e-10;
  absl::StatusOr<Explanation> e = ExplainJob(c, links);
  ASSERT_THAT(e, IsOk());
  const ModeExplanation& ps =
      e->modes[0].mode == SyncPath::kPs ? e->modes[0] : e->modes[1];
  EXPECT_EQ(ps.predicted_s, 0);
  EXPECT_NEAR(ps.cpu_s, 4.0 * kBytes * 1e-10, 1e-12);
  EXPECT_NEAR(ps.model_part_s, 4.0 * kBytes * 1e-10, 1e-12);
  EXPECT_NEAR(ps.transport_s, 0.301 - 4.0 * kBytes * 1e-10, 1e-12);
  EXPECT_THAT(ps.split,
              HasSubstr("the model gives 3.4 ms (1%) to the server's CPU "
                        "and memory copies (one host: no link)"));
  EXPECT_THAT(ps.split, HasSubstr("the other 297.6 ms (99%)"));
  const std::string text = FormatExplanation(*e);
  EXPECT_THAT(text, HasSubstr("model terms: server CPU 3.4 ms (no link)"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("0.0 ms predicted")));
}

}  // namespace
}  // namespace study
}  // namespace gradsync
