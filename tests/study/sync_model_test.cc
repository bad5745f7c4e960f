#include "study/alpha_beta/sync_model.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::DoubleNear;
using ::testing::HasSubstr;

constexpr double kMiB = 1 << 20;

SyncCase Ring(int n, double bytes) {
  SyncCase c;
  c.layout = SyncLayout::kRing;
  c.workers = n;
  c.bytes = bytes;
  return c;
}

SyncCase Ps(SyncLayout layout, int n, int k, double bytes,
            bool pipelined = false) {
  SyncCase c;
  c.layout = layout;
  c.workers = n;
  c.shards = k;
  c.bytes = bytes;
  c.pipelined = pipelined;
  return c;
}

TEST(SyncModelTest, RingMovesTwoNMinusOneOverNOfSInTwoNMinusOneSteps) {
  // N = 4, S = 4 MiB: 2 * 3/4 * S = 6 MiB on every link, 6 steps.
  const SyncCost cost = ModelCost(Ring(4, 4 * kMiB));
  EXPECT_EQ(cost.latency_terms, 6);
  EXPECT_EQ(cost.link_bytes, 6 * kMiB);
  // t = 2(N-1)(alpha + S/(N B)).
  const LinkModel model{0.001, 100 * kMiB};
  EXPECT_DOUBLE_EQ(PredictSeconds(Ring(4, 4 * kMiB), model),
                   6 * (0.001 + 1 * kMiB / (100 * kMiB)));
}

// The servers' CPU term, by hand: 4 ranks, 2 servers, S = 100 MB, c =
// 3e-10 s/B on 2 cores: 2 * 4 * 100e6 / 2 * 3e-10 / 2 = 60 ms. The ring has
// no server, so no CPU term.
TEST(SyncModelTest, ServerCpuSeconds_TwoRSOverKTimesCOverCores) {
  SyncCase ps;
  ps.layout = SyncLayout::kPsSeparate;
  ps.workers = 4;
  ps.shards = 2;
  ps.bytes = 100e6;
  ServerCpuModel cpu;
  cpu.cpu_s_per_byte = 3e-10;
  cpu.cores = 2;
  EXPECT_NEAR(ServerCpuSeconds(ps, 4, cpu), 0.060, 1e-15);
  // Ranks count, not hosts: 8 ranks on the 4 hosts double it.
  EXPECT_NEAR(ServerCpuSeconds(ps, 8, cpu), 0.120, 1e-15);
  ps.layout = SyncLayout::kPsColocated;
  EXPECT_NEAR(ServerCpuSeconds(ps, 4, cpu), 0.060, 1e-15);
  SyncCase ring = ps;
  ring.layout = SyncLayout::kRing;
  EXPECT_EQ(ServerCpuSeconds(ring, 4, cpu), 0);
}

// t = alpha terms + max(link, CPU): unpipelined, K = 2, N = 4, S = 100 MB,
// B = 1 GB/s: the link 2 * 2 * 100e6 / 1e9 = 400 ms; alpha 1 ms * 2.
TEST(SyncModelTest, PredictWithCpu_TakesTheSlowerOfLinkAndCpu) {
  SyncCase ps;
  ps.layout = SyncLayout::kPsSeparate;
  ps.workers = 4;
  ps.shards = 2;
  ps.bytes = 100e6;
  const LinkModel links{1e-3, 1e9};
  ServerCpuModel cpu;
  cpu.cpu_s_per_byte = 1e-9;  // 2 * 4 * 100e6 / 2 * 1e-9 = 400 ms: a tie
  SyncPrediction p = PredictWithCpu(ps, 4, links, cpu);
  EXPECT_NEAR(p.link_s, 0.400, 1e-15);
  EXPECT_NEAR(p.cpu_s, 0.400, 1e-15);
  EXPECT_FALSE(p.cpu_binds);
  EXPECT_NEAR(p.seconds, 0.402, 1e-15);
  cpu.cpu_s_per_byte = 2e-9;  // 800 ms: the CPU binds
  p = PredictWithCpu(ps, 4, links, cpu);
  EXPECT_TRUE(p.cpu_binds);
  EXPECT_NEAR(p.seconds, 0.802, 1e-15);
  // No link in play (B = 0): the CPU term alone, no latency.
  p = PredictWithCpu(ps, 4, LinkModel{}, cpu);
  EXPECT_EQ(p.link_s, 0);
  EXPECT_NEAR(p.seconds, 0.800, 1e-15);
  // Without a CPU cost the prediction is PredictSeconds'.
  EXPECT_NEAR(PredictWithCpu(ps, 4, links, ServerCpuModel{}).seconds,
              PredictSeconds(ps, links), 1e-15);
}

// The defaults are the simulator calibration's documented ones.
TEST(SyncModelTest, DefaultServerCpu_PerTransport) {
  EXPECT_EQ(DefaultServerCpu("plane").cpu_s_per_byte, 1e-10);
  EXPECT_EQ(DefaultServerCpu("").cpu_s_per_byte, 1e-10);
  EXPECT_EQ(DefaultServerCpu("grpc").cpu_s_per_byte, 3e-10);
  EXPECT_EQ(DefaultServerCpu("mixed").cpu_s_per_byte, 3e-10);
  EXPECT_EQ(DefaultServerCpu("grpc").cores, 1);
}

TEST(SyncModelTest, RingOfOneRankCostsNothing) {
  const SyncCost cost = ModelCost(Ring(1, 4 * kMiB));
  EXPECT_EQ(cost.latency_terms, 0);
  EXPECT_EQ(cost.link_bytes, 0);
}

TEST(SyncModelTest, SeparatePsIsBoundByTheBusierOfWorkerAndServerLinks) {
  // K = 1: the server's link carries N*S each way.
  EXPECT_EQ(ModelCost(Ps(SyncLayout::kPsSeparate, 4, 1, kMiB)).link_bytes,
            2 * 4 * kMiB);
  // K = 2: N*S/K = 2S.
  EXPECT_EQ(ModelCost(Ps(SyncLayout::kPsSeparate, 4, 2, kMiB)).link_bytes,
            2 * 2 * kMiB);
  // K = N and beyond: the worker's S.
  EXPECT_EQ(ModelCost(Ps(SyncLayout::kPsSeparate, 4, 4, kMiB)).link_bytes,
            2 * kMiB);
  EXPECT_EQ(ModelCost(Ps(SyncLayout::kPsSeparate, 4, 8, kMiB)).link_bytes,
            2 * kMiB);
  EXPECT_EQ(ModelCost(Ps(SyncLayout::kPsSeparate, 4, 1, kMiB)).latency_terms,
            2);
}

TEST(SyncModelTest, PipelinedPsOverlapsPushAndPull) {
  const SyncCase c = Ps(SyncLayout::kPsSeparate, 8, 8, 16 * kMiB, true);
  EXPECT_EQ(ModelCost(c).link_bytes, 16 * kMiB);
  // Each server's 2 MiB in two partitions of 1 MiB: the second one's pull
  // adds half the server's bytes again.
  SyncCase partitioned = c;
  partitioned.partition_bytes = kMiB;
  EXPECT_EQ(ModelCost(partitioned).link_bytes, 24 * kMiB);
  // One partition per server: no overlap, the unpipelined 2 S.
  partitioned.partition_bytes = 64 * kMiB;
  EXPECT_EQ(ModelCost(partitioned).link_bytes, 32 * kMiB);
  SyncCase unpipelined = c;
  unpipelined.pipelined = false;
  EXPECT_EQ(ModelCost(unpipelined).link_bytes, 32 * kMiB);
  // K = 1, N = 4, S = 4 MiB in 16 partitions of 256 KiB: 4 S (1 + 1/16)
  // in 17 pipeline stages.
  SyncCase one = Ps(SyncLayout::kPsSeparate, 4, 1, 4 * kMiB, true);
  one.partition_bytes = 256 * 1024;
  EXPECT_EQ(ModelCost(one).link_bytes, 16 * kMiB * (1 + 1.0 / 16));
  EXPECT_EQ(ModelCost(one).latency_terms, 17);
  // One partition per server: 2 stages, the unpipelined push then pull.
  EXPECT_EQ(ModelCost(partitioned).latency_terms, 2);
}

TEST(SyncModelTest, PipelinedPsWithNServersBeatsTheRingByTwoNMinusOneOverN) {
  for (int n : {2, 4, 6, 8}) {
    const double ring = ModelCost(Ring(n, kMiB)).link_bytes;
    const double ps =
        ModelCost(Ps(SyncLayout::kPsSeparate, n, n, kMiB, true)).link_bytes;
    EXPECT_DOUBLE_EQ(ring / ps, 2.0 * (n - 1) / n) << "N = " << n;
  }
}

TEST(SyncModelTest, CrossoverIsWhereThePsMeetsTheRing) {
  for (int n : {2, 4, 6, 8}) {
    for (bool pipelined : {false, true}) {
      const double k = CrossoverShards(n, pipelined);
      // At K*, N*S/K* on the server link equals the ring's bytes (pipelined:
      // once; unpipelined: twice).
      const double ps_bytes = (pipelined ? 1 : 2) * n / k;
      EXPECT_NEAR(ps_bytes, 2.0 * (n - 1) / n, 1e-12)
          << "N = " << n << (pipelined ? " pipelined" : " unpipelined");
    }
  }
  EXPECT_DOUBLE_EQ(CrossoverShards(8, true), 64.0 / 14);
  EXPECT_EQ(CrossoverShards(1, true), 0);
}

TEST(SyncModelTest, ColocatedOnEveryWorkerHostEqualsBytePsWithNoExtraServer) {
  const double bandwidth = 100 * kMiB;
  for (int n : {2, 3, 4, 8}) {
    for (bool pipelined : {false, true}) {
      const SyncCase c =
          Ps(SyncLayout::kPsColocated, n, n, 8 * kMiB, pipelined);
      EXPECT_NEAR(ModelCost(c).link_bytes / bandwidth,
                  BytePsSeconds(n, 0, 8 * kMiB, bandwidth), 1e-12)
          << "N = " << n;
      EXPECT_DOUBLE_EQ(ModelCost(c).link_bytes,
                       ModelCost(Ring(n, 8 * kMiB)).link_bytes);
    }
  }
}

TEST(SyncModelTest, BytePsHandValues) {
  // n = 4, k = 4: 2*4*3 / (16 + 16 - 8) = 24 / 24 = 1, i.e. M/B.
  EXPECT_DOUBLE_EQ(BytePsSeconds(4, 4, kMiB, kMiB), 1.0);
  // n = 2, k = 0: 2*2*1/4 = 1.
  EXPECT_DOUBLE_EQ(BytePsSeconds(2, 0, kMiB, kMiB), 1.0);
}

TEST(SyncModelTest, ColocatedWithFewerShardsThanWorkers) {
  // N = 4, K = 2, unpipelined: a shard host takes 3/2 S in per phase.
  EXPECT_DOUBLE_EQ(
      ModelCost(Ps(SyncLayout::kPsColocated, 4, 2, kMiB)).link_bytes,
      2 * 1.5 * kMiB);
  // Pipelined: (N + K - 2)/K = 2 S each way.
  EXPECT_DOUBLE_EQ(
      ModelCost(Ps(SyncLayout::kPsColocated, 4, 2, kMiB, true)).link_bytes,
      2 * kMiB);
  // N = 2, K = 1: the shard host takes 1/1 S in; the other host sends S.
  EXPECT_DOUBLE_EQ(
      ModelCost(Ps(SyncLayout::kPsColocated, 2, 1, kMiB)).link_bytes, 2 * kMiB);
}

TEST(SyncModelTest, ValidateNamesTheBadField) {
  EXPECT_THAT(
      ValidateSyncCase(Ring(0, 1)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("workers is 0")));
  EXPECT_THAT(
      ValidateSyncCase(Ps(SyncLayout::kPsSeparate, 2, 0, 1)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shards is 0")));
  EXPECT_THAT(ValidateSyncCase(Ps(SyncLayout::kPsColocated, 2, 3, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("at most one per worker host")));
  EXPECT_THAT(
      ValidateSyncCase(Ring(2, -1)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bytes is -1")));
  SyncCase negative = Ps(SyncLayout::kPsSeparate, 2, 1, 1, true);
  negative.partition_bytes = -1;
  EXPECT_THAT(ValidateSyncCase(negative),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("partition_bytes is -1")));
  EXPECT_THAT(ValidateSyncCase(Ps(SyncLayout::kPsColocated, 4, 4, 1)), IsOk());
}

TEST(SyncModelTest, LayoutNamesRoundTrip) {
  for (SyncLayout layout :
       {SyncLayout::kRing, SyncLayout::kPsSeparate, SyncLayout::kPsColocated}) {
    absl::StatusOr<SyncLayout> parsed_or =
        ParseSyncLayout(SyncLayoutName(layout));
    ASSERT_THAT(parsed_or, IsOk());
    const SyncLayout parsed = *parsed_or;
    EXPECT_EQ(parsed, layout);
  }
  EXPECT_THAT(ParseSyncLayout("tree"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown layout 'tree'")));
}

// Observations made by a known model are fitted back exactly.
TEST(SyncModelTest, FitRecoversTheModelThatMadeTheData) {
  const LinkModel truth{0.0004, 59.5e6};
  std::vector<SyncObservation> observations;
  for (int n : {2, 4, 8}) {
    for (double bytes : {4 * kMiB, 16 * kMiB}) {
      for (const SyncCase& c :
           {Ring(n, bytes), Ps(SyncLayout::kPsSeparate, n, 1, bytes),
            Ps(SyncLayout::kPsSeparate, n, n, bytes)}) {
        observations.push_back({ModelCost(c), PredictSeconds(c, truth)});
      }
    }
  }
  absl::StatusOr<LinkModel> fitted_or = FitAlphaBeta(observations);
  ASSERT_THAT(fitted_or, IsOk());
  const LinkModel fitted = *fitted_or;
  EXPECT_THAT(fitted.alpha_s, DoubleNear(truth.alpha_s, 1e-12));
  EXPECT_THAT(fitted.bandwidth_Bps, DoubleNear(truth.bandwidth_Bps, 1e-3));
}

// Relative, not absolute, error is minimised: a 10% slow small cell and a
// 10% fast large cell are weighed alike.
TEST(SyncModelTest, FitWeighsCellsByRelativeError) {
  std::vector<SyncObservation> observations = {
      {SyncCost{0, 1e6}, 0.011},  // truth 0.010 at B = 1e8
      {SyncCost{0, 1e8}, 0.9},    // truth 1.0
  };
  absl::StatusOr<LinkModel> fitted_or = FitAlphaBeta(observations);
  ASSERT_THAT(fitted_or, IsOk());
  const LinkModel fitted = *fitted_or;
  EXPECT_EQ(fitted.alpha_s, 0);
  // 1/B minimises (x*1e6/0.011 - 1)^2 + (x*1e8/0.9 - 1)^2.
  const double a = 1e6 / 0.011, b = 1e8 / 0.9;
  EXPECT_NEAR(1 / fitted.bandwidth_Bps, (a + b) / (a * a + b * b), 1e-18);
  EXPECT_NEAR(RelativeError(PredictSeconds(observations[0].cost, fitted),
                            observations[0].seconds),
              -RelativeError(PredictSeconds(observations[1].cost, fitted),
                             observations[1].seconds),
              0.02);
}

TEST(SyncModelTest, FitClampsANegativeAlphaToZero) {
  // Small cells faster than the bandwidth alone allows: the unconstrained
  // fit wants alpha < 0, which means nothing physical.
  std::vector<SyncObservation> observations = {
      {SyncCost{10, 1e6}, 0.005},
      {SyncCost{10, 1e8}, 1.0},
  };
  absl::StatusOr<LinkModel> fitted_or = FitAlphaBeta(observations);
  ASSERT_THAT(fitted_or, IsOk());
  const LinkModel fitted = *fitted_or;
  EXPECT_EQ(fitted.alpha_s, 0);
  EXPECT_GT(fitted.bandwidth_Bps, 0);
}

TEST(SyncModelTest, AlphaAtAGivenBandwidthIsExactOrClampedToZero) {
  const LinkModel truth{0.002, 1e8};
  std::vector<SyncObservation> observations;
  for (double terms : {2.0, 6.0, 14.0}) {
    for (double bytes : {1e6, 1e7}) {
      const SyncCost cost{terms, bytes};
      observations.push_back({cost, PredictSeconds(cost, truth)});
    }
  }
  absl::StatusOr<LinkModel> fitted = FitAlphaAtBandwidth(observations, 1e8);
  ASSERT_THAT(fitted, IsOk());
  EXPECT_THAT(fitted->alpha_s, DoubleNear(truth.alpha_s, 1e-12));
  EXPECT_EQ(fitted->bandwidth_Bps, 1e8);
  // At a tenth of the bandwidth the bytes alone take longer than measured:
  // alpha would be negative, and is 0.
  fitted = FitAlphaAtBandwidth(observations, 1e7);
  ASSERT_THAT(fitted, IsOk());
  EXPECT_EQ(fitted->alpha_s, 0);
  // No latency terms: nothing to fit alpha to.
  fitted = FitAlphaAtBandwidth({{SyncCost{0, 1e6}, 0.5}}, 1e8);
  ASSERT_THAT(fitted, IsOk());
  EXPECT_EQ(fitted->alpha_s, 0);
  for (double bad : {0.0, -1.0, std::nan(""), HUGE_VAL}) {
    EXPECT_THAT(FitAlphaAtBandwidth(observations, bad),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("must be > 0 and finite")));
  }
  EXPECT_THAT(FitAlphaAtBandwidth({}, 1e8),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no observations")));
  EXPECT_THAT(
      FitAlphaAtBandwidth({{SyncCost{2, 1e6}, -1}}, 1e8),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be > 0")));
}

TEST(SyncModelTest, FitRejectsWhatDeterminesNothing) {
  EXPECT_THAT(FitAlphaBeta({}), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("no observations")));
  EXPECT_THAT(FitAlphaBeta({{SyncCost{2, 0}, 0.1}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bandwidth is undetermined")));
  EXPECT_THAT(
      FitAlphaBeta({{SyncCost{2, 1e6}, 0}}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be > 0")));
}

}  // namespace
}  // namespace gradsync
