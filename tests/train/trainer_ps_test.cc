// The PS path and mode switches of the Trainer, ranks as threads over TCP
// communicators and two in-process parameter servers (real gRPC on
// loopback):
//   - exactness: integer gradients give bitwise the same sums and SGD
//     parameters through the PS as through the ring;
//   - a PS run, and runs switching ps -> ring and ring -> ps, follow a
//     ring-only run within 1e-5 relative, for momentum and Adam;
//   - runtime switches (directives as the coordinator writes them): a storm
//     of 50 requests loses and repeats no step, keeps the ranks identical;
//   - PS-mode checkpoints match ring-mode ones.
// Failures are in trainer_ps_failure_test.cc.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/daemon/ps_server.h"
#include "study/alpha_beta/sync_bandwidth.h"
#include "tests/collectives/rank_group.h"
#include "tests/train/trainer_ps_fixture.h"
#include "tests/util/status_matchers.h"
#include "worker/train/checkpoint.h"
#include "worker/train/param_hash.h"
#include "worker/train/ps_sync.h"
#include "worker/train/ring_sync.h"
#include "worker/train/trainer.h"

namespace gradsync {
namespace {

using ::gradsync::testing::ExpectLockstep;
using ::gradsync::testing::FakeSwitchBoard;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::kWorld;
using ::gradsync::testing::MaxRelative;
using ::gradsync::testing::Outcome;
using ::gradsync::testing::RankGroup;
using ::gradsync::testing::SmallPipelineOptions;
using ::gradsync::testing::StatusIs;
using ::gradsync::testing::TrainerPsTest;
using ::testing::HasSubstr;

// Integer gradients: the PS's rank-order sum and the ring's sum are exact,
// so one SGD step (lr 0.5, exact too) leaves bitwise the same parameters.
TEST_F(TrainerPsTest, IntegerGradients_PsAndRingGiveTheSameSgdStep) {
  constexpr size_t kN = 1000;
  RankGroup group(kWorld, SmallPipelineOptions());
  std::vector<std::vector<float>> ring_params(kWorld), ps_params(kWorld);
  OptimizerConfig sgd;
  sgd.kind = OptimizerKind::kSgd;
  sgd.lr = 0.5;
  const std::vector<absl::Status> status = group.Run([&](int r) {
    std::vector<float> grads(kN), params(kN);
    for (size_t i = 0; i < kN; ++i) {
      grads[i] = static_cast<float>((static_cast<int>(i) * (r + 3)) % 97 - 40);
      params[i] = static_cast<float>(static_cast<int>(i % 17) - 8);
    }
    const std::vector<float> initial = params;
    // Ring: sum, then SGD on every rank.
    std::vector<float> ring_grads = grads;
    RingSyncOptions ro;
    ro.bucket_bytes = 256;
    ASSIGN_OR_RETURN(
        std::unique_ptr<RingSync> ring,
        RingSync::Create(&group.comm(r), absl::MakeSpan(ring_grads), ro));
    RETURN_IF_ERROR(ring->BeginStep(0, 0));
    for (size_t end = kN; end > 0; end -= std::min<size_t>(end, 100)) {
      ring->OnGradReady(end - std::min<size_t>(end, 100), end);
    }
    RETURN_IF_ERROR(
        ring->FinishStep({}, absl::Now() + absl::Seconds(20)).status());
    ASSIGN_OR_RETURN(Optimizer opt, Optimizer::Create(sgd, kN));
    ring_params[r] = params;
    RETURN_IF_ERROR(opt.Step(absl::MakeSpan(ring_params[r]), ring_grads));
    // PS: shards seeded with the same parameters, sum then SGD there.
    ASSIGN_OR_RETURN(std::vector<PsShardLocation> shards,
                     BalancedShardLocations(kN, addresses_));
    PsClientOptions po;
    po.chunk_bytes = 128;
    ASSIGN_OR_RETURN(std::unique_ptr<PsClient> client,
                     PsClient::Create("exact", r, kN, shards, po));
    ps::CreateShardRequest base;
    base.set_job_id("exact");
    base.set_num_shards(2);
    base.set_total_elements(kN);
    base.set_num_workers(kWorld);
    base.mutable_optimizer()->set_name("sgd");
    base.mutable_optimizer()->set_learning_rate(0.5);
    base.set_mode(ps::UPDATE_MODE_SYNC);
    base.set_seeded(true);
    base.set_sum_gradients(true);
    if (r < 2) {
      ParameterState state;
      state.params = initial;
      ASSIGN_OR_RETURN(
          state.optimizer, [&]() -> absl::StatusOr<OptimizerState> {
            ASSIGN_OR_RETURN(Optimizer o, Optimizer::Create(sgd, kN));
            return o.ExportState();
          }());
      RETURN_IF_ERROR(client->CreateAndSeedShard(r, base, state));
    }
    RETURN_IF_ERROR(group.comm(r).Barrier());
    ps_params[r] = initial;
    ASSIGN_OR_RETURN(
        std::unique_ptr<PsSync> ps,
        PsSync::Create(std::move(client), &group.comm(r), grads,
                       absl::MakeSpan(ps_params[r]), PsUpdate::kSync,
                       /*step_scalars=*/1));
    RETURN_IF_ERROR(ps->BeginStep(0, 0));
    for (size_t end = kN; end > 0; end -= std::min<size_t>(end, 100)) {
      ps->OnGradReady(end - std::min<size_t>(end, 100), end);
    }
    // The step's scalar rides to shard 0 and comes back summed.
    double loss[1] = {static_cast<double>(r + 1)};
    RETURN_IF_ERROR(
        ps->FinishStep(absl::MakeSpan(loss), absl::Now() + absl::Seconds(20))
            .status());
    EXPECT_EQ(loss[0], 10.0) << "rank " << r;  // 1 + 2 + 3 + 4
    // A step with another number of scalars is refused.
    RETURN_IF_ERROR(ps->BeginStep(1, 0));
    ps->OnGradReady(0, kN);
    double two[2] = {1.0, 2.0};
    absl::StatusOr<SyncStats> wrong =
        ps->FinishStep(absl::MakeSpan(two), absl::Now() + absl::Seconds(20));
    EXPECT_THAT(wrong, StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("FinishStep got 2 scalars, but the "
                                          "PS strategy was created for 1")));
    return absl::OkStatus();
  });
  for (int r = 0; r < kWorld; ++r) ASSERT_THAT(status[r], IsOk()) << r;
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ(ps_params[r], ring_params[0]) << "rank " << r;
    EXPECT_EQ(ring_params[r], ring_params[0]) << "rank " << r;
  }
  // And the step did something.
  EXPECT_NE(ring_params[0][1], static_cast<float>(1 % 17 - 8));
}

class TrainerPsOptimizerTest
    : public TrainerPsTest,
      public ::testing::WithParamInterface<OptimizerKind> {};

TEST_P(TrainerPsOptimizerTest, PsAndSwitchedRuns_FollowTheRingRun) {
  constexpr int64_t kSteps = 16;
  const TrainerConfig ring = Config(GetParam(), kSteps);
  TrainerConfig ps = Config(GetParam(), kSteps);
  ps.initial_path = SyncPath::kPs;
  TrainerConfig ps_then_ring = Config(GetParam(), kSteps);
  ps_then_ring.initial_path = SyncPath::kPs;
  ps_then_ring.switches = {{6, SyncPath::kRing}};
  TrainerConfig ring_then_ps = Config(GetParam(), kSteps);
  ring_then_ps.switches = {
      {6, SyncPath::kPs}, {11, SyncPath::kRing}, {13, SyncPath::kPs}};

  const Outcome reference = Run(ring);
  ASSERT_NO_FATAL_FAILURE(ExpectLockstep(reference, kSteps));
  for (const TrainerConfig* config : {&ps, &ps_then_ring, &ring_then_ps}) {
    const Outcome out = Run(*config);
    ASSERT_NO_FATAL_FAILURE(ExpectLockstep(out, kSteps));
    for (int64_t s = 0; s < kSteps; ++s) {
      // The state moves are timed on the steps that start a new path.
      const bool switched =
          s == 0 ? config->initial_path == SyncPath::kPs
                 : out.metrics[0][s].mode() != out.metrics[0][s - 1].mode();
      EXPECT_EQ(out.metrics[0][s].switch_s() > 0, switched) << "step " << s;
      SyncPath expected = config->initial_path;
      for (const ScriptedSwitch& sw : config->switches) {
        if (sw.step <= s) expected = sw.path;
      }
      EXPECT_EQ(out.metrics[0][s].mode(),
                expected == SyncPath::kPs ? SYNC_MODE_PS : SYNC_MODE_RING)
          << "step " << s;
      // nccl-tests' terms per step: S is the whole gradient (32-24-16-10:
      // 1362 floats) on both paths; busbw = algbw * the path's factor
      // (2(N-1)/N; 2 max(1, N/K) with K = 2 shards).
      const StepMetrics& m = out.metrics[0][s];
      EXPECT_EQ(m.sync_bytes(), 1362 * 4) << "step " << s;
      EXPECT_GT(m.sync_busy_s(), 0) << "step " << s;
      EXPECT_LE(m.sync_busy_s(), m.step_s()) << "step " << s;
      const double algbw = m.sync_bytes() / m.sync_busy_s() / 1e9;
      EXPECT_NEAR(m.algbw_gbps(), algbw, 1e-9 * algbw) << "step " << s;
      EXPECT_DOUBLE_EQ(m.busbw_gbps(),
                       m.algbw_gbps() * (expected == SyncPath::kPs
                                             ? PsBusFactor(kWorld, 2)
                                             : AllReduceBusFactor(kWorld)))
          << "step " << s;
    }
    std::cout << "largest relative loss difference to the ring run: "
              << MaxRelative(reference, out) << "\n";
    EXPECT_LT(MaxRelative(reference, out), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Optimizers, TrainerPsOptimizerTest,
                         ::testing::Values(OptimizerKind::kMomentum,
                                           OptimizerKind::kAdam));

// 50 runtime requests while the ranks step: each request is picked up by
// the ranks at one common step; no step is lost or repeated. The requests
// come faster than the steps, but after each tenth (a PS request) the
// requester lets two steps pass, so that the storm spans the run however
// slow the machine is and the job certainly changes mode.
TEST_F(TrainerPsTest, RuntimeSwitchStorm_NoLostOrRepeatedStep) {
  constexpr int64_t kSteps = 150;
  const TrainerConfig ring = Config(OptimizerKind::kMomentum, kSteps);
  const Outcome reference = Run(ring);
  TrainerConfig config = Config(OptimizerKind::kMomentum, kSteps);
  FakeSwitchBoard board;
  std::atomic<bool> done{false};
  std::atomic<int64_t> progress{-1};
  std::thread requester([&] {
    std::mt19937 random(7);
    std::uniform_int_distribution<int> pause_us(0, 4000);
    for (int64_t epoch = 1; epoch <= 50 && !done.load(); ++epoch) {
      const int64_t posted_after = progress.load();
      board.Request(epoch, epoch % 2 == 1 ? SYNC_MODE_PS : SYNC_MODE_RING,
                    addresses_);
      if (epoch % 10 == 5) {
        while (progress.load() < posted_after + 2 && !done.load()) {
          absl::SleepFor(absl::Milliseconds(1));
        }
      }
      absl::SleepFor(absl::Microseconds(pause_us(random)));
    }
  });
  const Outcome out = Run(config, board.Source(), &progress);
  done.store(true);
  requester.join();
  ASSERT_NO_FATAL_FAILURE(ExpectLockstep(out, kSteps));
  int changes = 0;
  int64_t last_epoch = 0;
  for (int64_t s = 1; s < kSteps; ++s) {
    const StepMetrics& m = out.metrics[0][s];
    if (m.mode() != out.metrics[0][s - 1].mode()) {
      ++changes;
      EXPECT_GT(m.switch_epoch(), 0) << "step " << s;
    }
    if (m.switch_epoch() > 0) {
      EXPECT_GT(m.switch_epoch(), last_epoch) << "step " << s;
      last_epoch = m.switch_epoch();
      for (int r = 1; r < kWorld; ++r) {
        EXPECT_EQ(out.metrics[r][s].switch_epoch(), m.switch_epoch());
      }
    }
  }
  EXPECT_GT(changes, 0);
  std::cout << "switch storm: " << changes << " mode changes, last request "
            << last_epoch << " acted on; largest relative loss difference "
            << "to the ring run " << MaxRelative(reference, out) << "\n";
  EXPECT_LT(MaxRelative(reference, out), 1e-4);
}

// Runtime switches of an asynchronous (SSP) job: in PS mode the ranks are
// not in lockstep, so shard 0 decides the step (ps.proto, "Step control")
// and leaving PS drains every push before it. Every rank still runs every
// step once, all switch at the same steps, and whenever the job is on the
// ring the ranks hold identical parameters.
TEST_F(TrainerPsTest, RuntimeSwitchesOfAnSspJob_SameStepsOnEveryRank) {
  constexpr int64_t kSteps = 120;
  TrainerConfig config = Config(OptimizerKind::kAdam, kSteps);
  config.ps.update = PsUpdate::kSsp;
  config.ps.staleness = 2;
  FakeSwitchBoard board;
  std::atomic<bool> done{false};
  std::atomic<int64_t> progress{-1};
  // A request every 15 steps of rank 0 (PS, ring, PS, ...), so that the
  // job spends whole stretches in SSP mode between switches.
  std::thread requester([&] {
    for (int64_t epoch = 1; epoch <= 6 && !done.load(); ++epoch) {
      while (progress.load() < epoch * 15 && !done.load()) {
        absl::SleepFor(absl::Milliseconds(1));
      }
      board.Request(epoch, epoch % 2 == 1 ? SYNC_MODE_PS : SYNC_MODE_RING,
                    addresses_);
    }
  });
  const Outcome out = Run(config, board.Source(), &progress);
  done.store(true);
  requester.join();
  int changes = 0, ring_steps = 0;
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_THAT(out.status[r], IsOk()) << "rank " << r;
    ASSERT_EQ(out.metrics[r].size(), static_cast<size_t>(kSteps)) << r;
  }
  for (int64_t s = 0; s < kSteps; ++s) {
    const StepMetrics& m = out.metrics[0][s];
    for (int r = 1; r < kWorld; ++r) {
      ASSERT_EQ(out.metrics[r][s].step(), s);
      ASSERT_EQ(out.metrics[r][s].mode(), m.mode())
          << "rank " << r << " step " << s;
      ASSERT_EQ(out.metrics[r][s].switch_epoch(), m.switch_epoch()) << s;
      if (m.mode() == SYNC_MODE_RING) {
        ASSERT_EQ(out.metrics[r][s].param_hash(), m.param_hash())
            << "rank " << r << " step " << s;
      }
    }
    if (m.mode() == SYNC_MODE_RING) ++ring_steps;
    if (s > 0 && m.mode() != out.metrics[0][s - 1].mode()) ++changes;
    EXPECT_TRUE(std::isfinite(m.loss())) << s;
  }
  std::cout << "SSP job: " << changes << " mode changes, " << ring_steps
            << " ring steps of " << kSteps << "\n";
  EXPECT_EQ(changes, 6);
  // The final parameters are the drained PS state or the ring's: the same
  // on every rank either way.
  for (int r = 1; r < kWorld; ++r) {
    EXPECT_EQ(out.metrics[r].back().param_hash(),
              out.metrics[0].back().param_hash());
  }
}

// Checkpoints of a PS-mode job hold the shards' optimizer state: they match
// a ring-mode job's checkpoints of the same steps (parameters within
// rounding, Adam's step count and moments).
TEST_F(TrainerPsTest, PsModeCheckpoints_MatchRingModeCheckpoints) {
  constexpr int64_t kSteps = 10;
  const std::string base = ::testing::TempDir() + "/trainer_ps_ckpt";
  std::filesystem::remove_all(base);
  TrainerConfig ring = Config(OptimizerKind::kAdam, kSteps);
  ring.checkpoint_dir = base + "/ring";
  ring.checkpoint_every = 4;
  TrainerConfig ps = Config(OptimizerKind::kAdam, kSteps);
  ps.initial_path = SyncPath::kPs;
  ps.checkpoint_dir = base + "/ps";
  ps.checkpoint_every = 4;
  ASSERT_NO_FATAL_FAILURE(ExpectLockstep(Run(ring), kSteps));
  ASSERT_NO_FATAL_FAILURE(ExpectLockstep(Run(ps), kSteps));
  for (int64_t done : {4, 8, 10}) {
    SCOPED_TRACE(absl::StrCat("after ", done, " steps"));
    absl::StatusOr<Checkpoint> a =
        ReadCheckpoint(CheckpointPath(ring.checkpoint_dir, done));
    absl::StatusOr<Checkpoint> b =
        ReadCheckpoint(CheckpointPath(ps.checkpoint_dir, done));
    ASSERT_THAT(a, IsOk());
    ASSERT_THAT(b, IsOk());
    EXPECT_EQ(b->steps_done, done);
    EXPECT_EQ(b->optimizer.kind, OptimizerKind::kAdam);
    EXPECT_EQ(b->optimizer.step, a->optimizer.step);
    ASSERT_EQ(b->params.size(), a->params.size());
    ASSERT_EQ(b->optimizer.buffers.size(), 2u);
    double worst = 0;
    for (size_t i = 0; i < a->params.size(); ++i) {
      worst = std::max(worst, std::abs(double{a->params[i]} - b->params[i]));
    }
    EXPECT_LT(worst, 1e-5);
    // Adam's first moment moved too (not zeros, close to the ring's).
    double m_diff = 0, m_norm = 0;
    for (size_t i = 0; i < a->params.size(); ++i) {
      m_diff = std::max(m_diff, std::abs(double{a->optimizer.buffers[0][i]} -
                                         b->optimizer.buffers[0][i]));
      m_norm = std::max(m_norm, std::abs(double{b->optimizer.buffers[0][i]}));
    }
    EXPECT_GT(m_norm, 0);
    EXPECT_LT(m_diff, 1e-4 * m_norm + 1e-9);
  }
  std::filesystem::remove_all(base);
}

}  // namespace
}  // namespace gradsync
