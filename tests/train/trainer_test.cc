// Trainer: ranks as threads over TCP communicators. After every step all
// ranks hold bitwise-identical parameters; N ranks follow a 1-rank run of
// the same global batch; runs are bitwise reproducible; accumulation of
// micro-batches matches one big batch; cancellation stops promptly.
#include "worker/train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "collectives/memory_store.h"
#include "collectives/tcp/tcp_communicator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/collectives/rank_group.h"
#include "tests/train/trainer_test_util.h"
#include "tests/util/status_matchers.h"
#include "worker/data/fashion_mnist.h"
#include "worker/model/blas.h"
#include "worker/train/checkpoint.h"
#include "worker/train/param_hash.h"

namespace gradsync {
namespace {

using ::gradsync::testing::ExpectAllOk;
using ::gradsync::testing::FashionMnistMlpConfig;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::JobOutcome;
using ::gradsync::testing::LoadOrDie;
using ::gradsync::testing::RankGroup;
using ::gradsync::testing::RunJob;
using ::gradsync::testing::SmallMlpConfig;
using ::gradsync::testing::SmallPipelineOptions;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Invariant 1: equal hashes on every rank after every step.
void ExpectIdenticalHashes(const JobOutcome& out, int64_t steps) {
  for (size_t r = 0; r < out.metrics.size(); ++r) {
    ASSERT_EQ(out.metrics[r].size(), static_cast<size_t>(steps)) << r;
  }
  for (int64_t s = 0; s < steps; ++s) {
    for (size_t r = 1; r < out.metrics.size(); ++r) {
      EXPECT_EQ(out.metrics[r][s].param_hash(), out.metrics[0][s].param_hash())
          << "rank " << r << " diverged at step " << s;
      EXPECT_EQ(out.metrics[r][s].loss(), out.metrics[0][s].loss())
          << "rank " << r << " step " << s;
    }
  }
  for (size_t r = 0; r < out.final_params.size(); ++r) {
    EXPECT_EQ(HashParameters(out.final_params[r]),
              out.metrics[r].back().param_hash());
  }
}

double MaxRelativeLossDifference(const std::vector<StepMetrics>& a,
                                 const std::vector<StepMetrics>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t s = 0; s < std::min(a.size(), b.size()); ++s) {
    worst = std::max(
        worst, std::fabs(a[s].loss() - b[s].loss()) / std::fabs(b[s].loss()));
  }
  return worst;
}

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_THAT(SetBlasThreads(1), IsOk()); }
};

TEST_F(TrainerTest, ThreeRanks_HashesIdenticalEveryStep_WithAccumulation) {
  TrainerConfig config = SmallMlpConfig();
  config.grad_accumulation_steps = 2;
  config.global_batch_size = 47;  // shares 16, 16, 15; micro-batches 8/7
  const TrainData data = LoadOrDie(config);
  const JobOutcome out = RunJob(config, data, 3);
  ExpectAllOk(out);
  ExpectIdenticalHashes(out, config.steps);
  for (int r = 0; r < 3; ++r) {
    const StepMetrics& m = out.metrics[r][0];
    EXPECT_EQ(m.rank(), r);
    EXPECT_EQ(m.step(), 0);
    EXPECT_EQ(m.samples(), r < 2 ? 16 : 15);
    EXPECT_EQ(m.mode(), SYNC_MODE_RING);
    EXPECT_GT(m.bytes_sent(), 0);
    EXPECT_GT(m.step_s(), 0);
    EXPECT_GE(m.compute_s(), 0);
    EXPECT_GE(m.comm_s(), 0);
    EXPECT_LE(m.compute_s() + m.comm_s(), m.step_s() * 1.0001);
    EXPECT_TRUE(out.results[r].evaluated);
    EXPECT_EQ(out.results[r].test_accuracy, out.results[0].test_accuracy);
    EXPECT_EQ(out.results[r].steps, config.steps);
  }
  // The loss falls on this learnable task.
  EXPECT_LT(out.metrics[0].back().loss(), out.metrics[0].front().loss());
}

// Invariant 2 on generated data: 4 ranks with global batch B follow the
// 1-rank run with batch B.
TEST_F(TrainerTest, FourRanks_TrackOneRank_SyntheticData) {
  TrainerConfig config = SmallMlpConfig();
  config.steps = 20;
  config.global_batch_size = 62;  // unequal shares 16, 16, 15, 15
  const TrainData data = LoadOrDie(config);
  const JobOutcome one = RunJob(config, data, 1);
  const JobOutcome four = RunJob(config, data, 4);
  ExpectAllOk(one);
  ExpectAllOk(four);
  ExpectIdenticalHashes(four, config.steps);
  EXPECT_LT(MaxRelativeLossDifference(four.metrics[0], one.metrics[0]), 1e-3);
  EXPECT_NEAR(four.results[0].test_accuracy, one.results[0].test_accuracy,
              0.01);
}

TEST_F(TrainerTest, FourRanks_TrackOneRank_FashionMnist) {
  GRADSYNC_SKIP_WITHOUT_FASHION_MNIST();
  const TrainerConfig config = FashionMnistMlpConfig(20);
  const absl::Time start = absl::Now();
  const TrainData data = LoadOrDie(config);
  const absl::Time loaded = absl::Now();
  const JobOutcome one = RunJob(config, data, 1);
  const absl::Time one_done = absl::Now();
  const JobOutcome four = RunJob(config, data, 4);
  const absl::Time four_done = absl::Now();
  ExpectAllOk(one);
  ExpectAllOk(four);
  ExpectIdenticalHashes(four, config.steps);
  const double diff =
      MaxRelativeLossDifference(four.metrics[0], one.metrics[0]);
  std::printf(
      "[fashion-mnist] 20 steps of 128: loss %.4f -> %.4f, 4-vs-1 max rel "
      "loss diff %.2e, test accuracy %.4f (1 rank) %.4f (4 ranks); load "
      "%.1f s, 1 rank %.1f s, 4 ranks %.1f s\n",
      one.metrics[0].front().loss(), one.metrics[0].back().loss(), diff,
      one.results[0].test_accuracy, four.results[0].test_accuracy,
      absl::ToDoubleSeconds(loaded - start),
      absl::ToDoubleSeconds(one_done - loaded),
      absl::ToDoubleSeconds(four_done - one_done));
  EXPECT_LT(diff, 1e-3);
  EXPECT_GT(four.results[0].test_accuracy, 0.6);
}

// Invariant 3: the same config and seed twice give bitwise-identical final
// parameters (fresh communicators each time).
TEST_F(TrainerTest, SameSeedTwice_BitwiseIdenticalFinalParameters) {
  TrainerConfig config = SmallMlpConfig();
  config.optimizer.kind = OptimizerKind::kAdam;
  config.optimizer.lr = 1e-3;
  const TrainData data = LoadOrDie(config);
  const JobOutcome a = RunJob(config, data, 2);
  const JobOutcome b = RunJob(config, data, 2);
  ExpectAllOk(a);
  ExpectAllOk(b);
  EXPECT_EQ(a.results[0].param_hash, b.results[0].param_hash);
  EXPECT_EQ(a.final_params[0], b.final_params[0]);
  EXPECT_EQ(a.results[0].test_accuracy, b.results[0].test_accuracy);
  config.seed += 1;
  const JobOutcome c = RunJob(config, LoadOrDie(config), 2);
  ExpectAllOk(c);
  EXPECT_NE(c.results[0].param_hash, a.results[0].param_hash);
}

// Two micro-batches of B/2 accumulate to (nearly) the gradient of one
// batch of B: the trajectories agree within float tolerance.
TEST_F(TrainerTest, Accumulation_TwoMicroBatches_MatchOneBatch) {
  TrainerConfig config = SmallMlpConfig();
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.lr = 0.1;
  config.global_batch_size = 64;
  const TrainData data = LoadOrDie(config);
  const JobOutcome whole = RunJob(config, data, 2);
  config.grad_accumulation_steps = 2;
  const JobOutcome split = RunJob(config, data, 2);
  ExpectAllOk(whole);
  ExpectAllOk(split);
  ExpectIdenticalHashes(split, config.steps);
  EXPECT_LT(MaxRelativeLossDifference(split.metrics[0], whole.metrics[0]),
            1e-4);
  const std::vector<float>& p = split.final_params[0];
  const std::vector<float>& q = whole.final_params[0];
  ASSERT_EQ(p.size(), q.size());
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    max_diff = std::max(max_diff, static_cast<double>(std::fabs(p[i] - q[i])));
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(q[i])));
  }
  EXPECT_LT(max_diff, 1e-4 * max_abs);
}

TEST_F(TrainerTest, EvalEverySteps_SetsTestAccuracyOnThoseSteps) {
  TrainerConfig config = SmallMlpConfig();
  config.steps = 7;
  config.eval_every_steps = 3;
  const JobOutcome out = RunJob(config, LoadOrDie(config), 2);
  ExpectAllOk(out);
  for (int r = 0; r < 2; ++r) {
    for (int64_t s = 0; s < config.steps; ++s) {
      const bool eval = s == 2 || s == 5 || s == 6;
      EXPECT_EQ(out.metrics[r][s].test_accuracy() > 0, eval)
          << "rank " << r << " step " << s;
      EXPECT_EQ(out.metrics[r][s].test_accuracy(),
                out.metrics[0][s].test_accuracy());
    }
  }
  EXPECT_EQ(out.results[0].test_accuracy, out.metrics[0][6].test_accuracy());
}

TEST_F(TrainerTest, EpochsInsteadOfSteps_CountsStepsPerEpoch) {
  TrainerConfig config = SmallMlpConfig();
  config.steps = 0;
  config.epochs = 0.05;
  config.global_batch_size = 100;  // 81 steps per epoch of 8192
  const JobOutcome out = RunJob(config, LoadOrDie(config), 1);
  ExpectAllOk(out);
  EXPECT_EQ(out.results[0].steps, 5);  // ceil(0.05 * 81)
}

TEST_F(TrainerTest, SyntheticModel_ExactBytesAndIdenticalHashes) {
  TrainerConfig config;
  config.model = "synthetic";
  config.synthetic_floats = 100000;
  config.synthetic_compute = absl::Milliseconds(2);
  config.optimizer.lr = 0.001;
  config.global_batch_size = 8;
  config.steps = 5;
  config.bucket_bytes = 100000;  // 4 buckets
  config.comm_timeout = absl::Seconds(20);
  const JobOutcome out = RunJob(config, TrainData{}, 4);
  ExpectAllOk(out);
  ExpectIdenticalHashes(out, config.steps);
  // 2(N-1)/N of the buckets' bytes, plus the loss scalar and one switch
  // request slot per rank (8 bytes each).
  const int64_t want = 2 * 3 * 400000 / 4 + 2 * 3 * (8 + 4 * 8) / 4;
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(out.metrics[r][0].bytes_sent(), want) << r;
    // nccl-tests' terms: S = the 100000-float gradient, busbw = algbw *
    // 2(N-1)/N, the buckets' busy time within the step.
    const StepMetrics& m = out.metrics[r][0];
    EXPECT_EQ(m.sync_bytes(), 400000) << r;
    EXPECT_GT(m.sync_busy_s(), 0) << r;
    EXPECT_LE(m.sync_busy_s(), m.step_s()) << r;
    EXPECT_NEAR(m.algbw_gbps(), 400000 / m.sync_busy_s() / 1e9,
                1e-9 * m.algbw_gbps())
        << r;
    EXPECT_DOUBLE_EQ(m.busbw_gbps(), m.algbw_gbps() * 1.5) << r;
    EXPECT_EQ(out.metrics[r][0].samples(), 2);
    EXPECT_FALSE(out.results[r].evaluated);
  }
  // Parameters after one SGD step: -lr * (exact sum of the ranks' values).
  EXPECT_NE(out.metrics[0][0].param_hash(), out.metrics[0][1].param_hash());
}

TEST_F(TrainerTest, Cancelled_BeforeStart_ReturnsCancelled) {
  TrainerConfig config = SmallMlpConfig();
  std::atomic<bool> cancelled{true};
  const JobOutcome out = RunJob(config, LoadOrDie(config), 2, &cancelled);
  for (int r = 0; r < 2; ++r) {
    EXPECT_THAT(out.status[r],
                StatusIs(absl::StatusCode::kCancelled, HasSubstr("step 0")));
    EXPECT_TRUE(out.metrics[r].empty());
  }
}

// A long job cancelled mid-way: the flag plus aborting the communicators
// (what the daemon does) stops every rank within a step or so, even ranks
// blocked in a collective.
TEST_F(TrainerTest, Cancelled_MidRun_StopsPromptly) {
  TrainerConfig config;
  config.model = "synthetic";
  config.synthetic_floats = 50000;
  config.synthetic_compute = absl::Milliseconds(20);
  config.global_batch_size = 4;
  config.steps = 100000;
  config.comm_timeout = absl::Seconds(20);
  RankGroup group(3, SmallPipelineOptions());
  std::atomic<bool> cancelled{false};
  absl::Time cancel_time;
  std::thread canceller([&] {
    absl::SleepFor(absl::Milliseconds(300));
    cancel_time = absl::Now();
    cancelled.store(true);
    for (int r = 0; r < 3; ++r) {
      group.comm(r).Abort(absl::CancelledError("test cancels the job"));
    }
  });
  const JobOutcome out = RunJob(config, TrainData{}, 3, &cancelled, &group);
  const absl::Time done = absl::Now();
  canceller.join();
  for (int r = 0; r < 3; ++r) {
    EXPECT_THAT(out.status[r], StatusIs(absl::StatusCode::kCancelled)) << r;
    EXPECT_GT(out.metrics[r].size(), 0u);
    EXPECT_LT(out.metrics[r].size(), 100u);
  }
  EXPECT_LT(done - cancel_time, absl::Seconds(2));
}

// A rank that fails (here: its peer's communicator is aborted, as when a
// worker dies) makes the other ranks fail with an error naming the step
// and the operation, instead of hanging.
TEST_F(TrainerTest, PeerFailure_NamesStepAndOperation) {
  TrainerConfig config;
  config.model = "synthetic";
  config.synthetic_floats = 10000;
  config.synthetic_compute = absl::Milliseconds(5);
  config.global_batch_size = 4;
  config.steps = 100000;
  config.comm_timeout = absl::Seconds(20);
  RankGroup group(2, SmallPipelineOptions());
  std::thread killer([&] {
    absl::SleepFor(absl::Milliseconds(200));
    group.comm(1).Abort(absl::UnavailableError("rank 1 died"));
  });
  absl::Mutex mu;
  std::vector<TrainFailure> failures(2);
  std::vector<absl::Status> status = group.Run([&](int r) -> absl::Status {
    absl::StatusOr<std::unique_ptr<Trainer>> trainer =
        Trainer::Create(config, TrainData{}, &group.comm(r), nullptr, nullptr);
    if (!trainer.ok()) return trainer.status();
    absl::Status s = (*trainer)->Run().status();
    absl::MutexLock lock(&mu);
    failures[r] = (*trainer)->failure();
    return s;
  });
  killer.join();
  EXPECT_FALSE(status[0].ok());
  EXPECT_THAT(std::string(status[0].message()), HasSubstr("rank 0, step "));
  EXPECT_EQ(failures[0].operation, "gradient all-reduce");
  EXPECT_GT(failures[0].step, 0);
  EXPECT_THAT(std::string(failures[0].cause.message()), HasSubstr("rank 1"));
}

TEST_F(TrainerTest, Create_BadInputs_ReturnInvalidArgument) {
  TrainerConfig config = SmallMlpConfig();
  const TrainData data = LoadOrDie(config);
  RankGroup group(1, SmallPipelineOptions());
  EXPECT_THAT(Trainer::Create(config, data, nullptr, nullptr, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(
      Trainer::Create(config, TrainData{}, &group.comm(0), nullptr, nullptr),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("training and test data")));
  TrainerConfig wide = config;
  wide.layer_sizes = {33, 10};  // the data has 32 features
  EXPECT_THAT(Trainer::Create(wide, data, &group.comm(0), nullptr, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument));
  TrainerConfig no_batch = config;
  no_batch.global_batch_size = 0;
  EXPECT_THAT(
      Trainer::Create(no_batch, data, &group.comm(0), nullptr, nullptr),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("batchSize")));
}

// The NCCL ring (ring_backend kNccl) on a host without it: refused at
// Create without a communicator factory, and a CPU model refuses to start
// the device ring at step 0 (it has no device buffers), naming the fix.
TEST_F(TrainerTest, NcclRing_WithoutGpuModelOrFactory_FailsClearly) {
  TrainerConfig config = SmallMlpConfig();
  config.ring_backend = RingBackend::kNccl;
  const TrainData data = LoadOrDie(config);
  RankGroup group(1, SmallPipelineOptions());
  EXPECT_THAT(Trainer::Create(config, data, &group.comm(0), nullptr, nullptr),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("this rank is on the CPU"),
                             HasSubstr("ringBackend \"tcp\""))));
  TrainerConfig on_gpu = config;
  on_gpu.cuda_device = 0;  // refused before the model is made: no GPU needed
  EXPECT_THAT(Trainer::Create(on_gpu, data, &group.comm(0), nullptr, nullptr),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("built without NCCL?"),
                             HasSubstr("ringBackend \"tcp\""))));

  // The factory's error names the operation and the step.
  int calls = 0;
  DeviceCommFactory failing =
      [&calls](int64_t step,
               absl::Time) -> absl::StatusOr<std::unique_ptr<Communicator>> {
    ++calls;
    return absl::UnavailableError(absl::StrCat("no NCCL peer for step ", step));
  };
  absl::StatusOr<std::unique_ptr<Trainer>> trainer = Trainer::Create(
      config, data, &group.comm(0), nullptr, nullptr, SwitchSource(), failing);
  ASSERT_THAT(trainer, IsOk());
  EXPECT_THAT((*trainer)->Run(),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr("rank 0, step 0, NCCL communicator "
                                       "setup before step 0"),
                             HasSubstr("no NCCL peer for step 0"))));
  EXPECT_EQ(calls, 1);

  // A communicator arrives, but the CPU mlp has no device buffers.
  DeviceCommFactory tcp =
      [](int64_t, absl::Time) -> absl::StatusOr<std::unique_ptr<Communicator>> {
    MemoryStore store;
    TcpOptions options = SmallPipelineOptions();
    options.job_id = "nccl-stand-in";
    return CreateTcpCommunicator(&store, 0, 1, options);
  };
  trainer = Trainer::Create(config, data, &group.comm(0), nullptr, nullptr,
                            SwitchSource(), tcp);
  ASSERT_THAT(trainer, IsOk());
  EXPECT_THAT((*trainer)->Run(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("start of the NCCL ring"),
                             HasSubstr("mlp on a CUDA device"))));
}

}  // namespace
}  // namespace gradsync
