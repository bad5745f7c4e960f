// GPU ranks with host-staged syncs (models/mlp/cuda_train_model.h): two
// ranks as threads over TCP communicators, rank 0 on CUDA device 0 and
// rank 1 on the CPU, through the ring and through two in-process parameter
// servers. After every step both ranks hold bitwise-identical parameters
// (the sync hands both the same gradient sum or the same pulled
// parameters), and the loss follows an all-CPU run within 1e-4 (the GPU's
// GEMMs only add in another order). Also: the host mirror holds the
// device's accumulated gradient when a range is reported, and a GPU-less
// host gets FAILED_PRECONDITION naming the device.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/daemon/ps_server.h"
#include "tests/collectives/rank_group.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/train/trainer_test_util.h"
#include "worker/model/blas.h"
#include "worker/model/cuda/cuda_status.h"
#include "worker/train/train_model.h"
#include "worker/train/trainer.h"

namespace gradsync {
namespace {

using ::gradsync::testing::JobOutcome;
using ::gradsync::testing::RankGroup;
using ::gradsync::testing::SmallPipelineOptions;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int kWorld = 2;
constexpr int64_t kSteps = 10;

// The trainer tests' small MLP (tests/train/trainer_test_util.h) for
// kSteps steps.
TrainerConfig SmallMlpConfig() {
  TrainerConfig c = ::gradsync::testing::SmallMlpConfig();
  c.steps = kSteps;
  return c;
}

class GpuTrainerTest : public gpu_test::GpuTest {
 protected:
  void SetUp() override {
    gpu_test::GpuTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(SetBlasThreads(1).ok());
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<std::unique_ptr<PsServer>> server =
          PsServer::Start("127.0.0.1:0");
      ASSERT_TRUE(server.ok()) << server.status();
      addresses_.push_back((*server)->address());
      servers_.push_back(*std::move(server));
    }
  }

  // Points `c` at the two shards under a fresh job id.
  void UsePs(TrainerConfig* c) {
    c->initial_path = SyncPath::kPs;
    c->ps.addresses = addresses_;
    c->ps.job_id = absl::StrCat("gpu-job-", ++jobs_);
    c->ps.chunk_bytes = 512;  // several chunks per shard
    c->ps.optimizer.set_name("momentum");
    c->ps.optimizer.set_learning_rate(c->optimizer.lr);
  }

  // Rank r runs on cuda_device devices[r] (-1: CPU).
  JobOutcome Run(const TrainerConfig& config, const std::vector<int>& devices) {
    absl::StatusOr<TrainData> data = LoadTrainData(config);
    EXPECT_TRUE(data.ok()) << data.status();
    RankGroup group(kWorld, SmallPipelineOptions());
    JobOutcome out;
    out.metrics.resize(kWorld);
    out.results.resize(kWorld);
    out.status = group.Run([&](int r) -> absl::Status {
      TrainerConfig mine = config;
      mine.cuda_device = devices[r];
      absl::StatusOr<std::unique_ptr<Trainer>> trainer = Trainer::Create(
          mine, *data, &group.comm(r),
          [&out, r](const StepMetrics& m) { out.metrics[r].push_back(m); },
          nullptr);
      if (!trainer.ok()) return trainer.status();
      absl::StatusOr<TrainResult> result = (*trainer)->Run();
      if (!result.ok()) return result.status();
      out.results[r] = *result;
      return absl::OkStatus();
    });
    return out;
  }

  // Mixed (cuda:0 + CPU) against all-CPU: lockstep hashes every step on
  // the mixed run, losses within 1e-4.
  void ExpectMixedTracksCpu(const TrainerConfig& mixed_config,
                            const TrainerConfig& cpu_config) {
    const JobOutcome mixed = Run(mixed_config, {0, -1});
    const JobOutcome cpu = Run(cpu_config, {-1, -1});
    for (int r = 0; r < kWorld; ++r) {
      ASSERT_TRUE(mixed.status[r].ok()) << "rank " << r << mixed.status[r];
      ASSERT_TRUE(cpu.status[r].ok()) << "rank " << r << cpu.status[r];
      ASSERT_EQ(mixed.metrics[r].size(), static_cast<size_t>(kSteps));
      ASSERT_EQ(cpu.metrics[r].size(), static_cast<size_t>(kSteps));
    }
    for (int64_t s = 0; s < kSteps; ++s) {
      EXPECT_EQ(mixed.metrics[1][s].param_hash(),
                mixed.metrics[0][s].param_hash())
          << "the CPU rank diverged from the GPU rank at step " << s;
      EXPECT_EQ(mixed.metrics[1][s].loss(), mixed.metrics[0][s].loss())
          << "step " << s;
      EXPECT_NEAR(mixed.metrics[0][s].loss(), cpu.metrics[0][s].loss(), 1e-4)
          << "step " << s;
      const SyncMode mode = mixed_config.initial_path == SyncPath::kPs
                                ? SYNC_MODE_PS
                                : SYNC_MODE_RING;
      EXPECT_EQ(mixed.metrics[0][s].mode(), mode) << "step " << s;
    }
    EXPECT_TRUE(mixed.results[0].evaluated);
    EXPECT_EQ(mixed.results[0].test_accuracy, mixed.results[1].test_accuracy);
    EXPECT_NEAR(mixed.results[0].test_accuracy, cpu.results[0].test_accuracy,
                0.01);
    EXPECT_LT(mixed.metrics[0].back().loss(), mixed.metrics[0].front().loss());
  }

  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<PsServer>> servers_;
  int jobs_ = 0;
};

TEST_F(GpuTrainerTest, Ring_CudaAndCpuRanks_LockstepAndTrackCpu) {
  ExpectMixedTracksCpu(SmallMlpConfig(), SmallMlpConfig());
}

TEST_F(GpuTrainerTest, Ring_WithAccumulation_LockstepAndTrackCpu) {
  TrainerConfig config = SmallMlpConfig();
  config.grad_accumulation_steps = 3;
  ExpectMixedTracksCpu(config, config);
}

TEST_F(GpuTrainerTest, Ps_CudaAndCpuRanks_LockstepAndTrackCpu) {
  TrainerConfig mixed = SmallMlpConfig();
  UsePs(&mixed);
  TrainerConfig cpu = SmallMlpConfig();
  UsePs(&cpu);
  ExpectMixedTracksCpu(mixed, cpu);
}

// The host mirror holds the device's accumulated gradient (two passes, the
// second reporting) when each range is reported, as the CPU model's.
TEST_F(GpuTrainerTest, ReportedRanges_HoldTheAccumulatedGradient) {
  TrainerConfig config = SmallMlpConfig();
  absl::StatusOr<std::unique_ptr<TrainModel>> cpu = CreateTrainModel(config, 0);
  config.cuda_device = 0;
  absl::StatusOr<std::unique_ptr<TrainModel>> gpu = CreateTrainModel(config, 0);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  ASSERT_TRUE(gpu_test::BitwiseEqual((*gpu)->params(), (*cpu)->params()));
  Batch batch[2];
  for (int i = 0; i < 2; ++i) {
    const gpu_test::TestBatch b = gpu_test::MakeBatch(13, 32, 10, 40 + i);
    batch[i].features = b.x;
    batch[i].labels = b.y;
  }
  for (TrainModel* m : {cpu->get(), gpu->get()}) {
    ASSERT_TRUE(
        m->ForwardBackward(batch[0], 0, GradMode::kOverwrite, 26, {}).ok());
  }
  ASSERT_TRUE(
      (*cpu)->ForwardBackward(batch[1], 0, GradMode::kAccumulate, 26, {}).ok());
  const std::vector<float> expected((*cpu)->grads().begin(),
                                    (*cpu)->grads().end());
  size_t next_end = expected.size();
  TrainModel* model = gpu->get();
  const absl::StatusOr<PassStats> pass = model->ForwardBackward(
      batch[1], 0, GradMode::kAccumulate, 26, [&](size_t begin, size_t end) {
        EXPECT_EQ(end, next_end);
        next_end = begin;
        gpu_test::ExpectNear(
            model->grads().subspan(begin, end - begin),
            absl::MakeConstSpan(expected).subspan(begin, end - begin),
            "reported range");
      });
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_EQ(next_end, 0u);
  EXPECT_EQ(pass->count, 13u);
}

// Runs everywhere: without a GPU the CUDA model names the device.
TEST(GpuTrainModelTest, NoGpu_FailsNamingTheDevice) {
  if (gpu::VisibleCudaDeviceCount() > 0) GTEST_SKIP() << "a GPU is visible";
  TrainerConfig config = SmallMlpConfig();
  config.cuda_device = 0;
  const absl::StatusOr<std::unique_ptr<TrainModel>> model =
      CreateTrainModel(config, 0);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(model.status().message()),
              AllOf(HasSubstr("cuda:0"), HasSubstr("no CUDA device")));
}

}  // namespace
}  // namespace gradsync
