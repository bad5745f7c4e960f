// 16-bit gradients through the parameter server (TrainerConfig::grad_dtype
// with SyncPath::kPs; issue 40), on two in-process servers, 4 ranks:
//   - Fashion-MNIST's MLP in PS mode with bf16 and fp16, over gRPC streams
//     and the tensor plane, follows the fp32 PS run within the ring's
//     stated tolerances (trainer_half_test.cc): the loss within 2% at every
//     step of 50, the test accuracy within half a point; ranks bitwise
//     equal at every step; the PS step's wire bytes are 2 per element.
//   - a bf16 run that switches ring -> PS -> ring (steps 10 and 20) keeps
//     the ranks bitwise equal at every step, takes each path when it should,
//     and follows the unswitched bf16 ring run within the same 2%.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/daemon/ps_server.h"
#include "tests/train/trainer_test_util.h"
#include "tests/util/status_matchers.h"
#include "worker/model/blas.h"
#include "worker/train/trainer.h"

namespace gradsync {
namespace {

using ::gradsync::testing::ExpectAllOk;
using ::gradsync::testing::FashionMnistMlpConfig;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::JobOutcome;
using ::gradsync::testing::LoadOrDie;
using ::gradsync::testing::RunJob;

constexpr int kRanks = 4;
// The ring's stated tolerances for 16-bit gradients (trainer_half_test.cc).
constexpr double kLossTolerance = 0.02;
constexpr double kAccuracyTolerance = 0.005;

// Every rank has rank 0's parameters (their hash) after every step.
void ExpectIdenticalRanks(const JobOutcome& out) {
  for (size_t r = 1; r < out.metrics.size(); ++r) {
    ASSERT_EQ(out.metrics[r].size(), out.metrics[0].size());
    for (size_t s = 0; s < out.metrics[0].size(); ++s) {
      ASSERT_EQ(out.metrics[r][s].param_hash(), out.metrics[0][s].param_hash())
          << "rank " << r << " diverged at step " << s;
    }
    EXPECT_EQ(out.final_params[r], out.final_params[0]) << "rank " << r;
  }
}

// The largest relative difference of rank 0's loss, step by step.
double WorstLossDifference(const JobOutcome& a, const JobOutcome& b) {
  double worst = 0;
  EXPECT_EQ(a.metrics[0].size(), b.metrics[0].size());
  const size_t n = std::min(a.metrics[0].size(), b.metrics[0].size());
  for (size_t s = 0; s < n; ++s) {
    const double x = a.metrics[0][s].loss();
    const double y = b.metrics[0][s].loss();
    worst = std::max(worst, std::fabs(x - y) / std::fabs(x));
  }
  return worst;
}

class TrainerPsHalfTest : public ::testing::TestWithParam<DataType> {
 protected:
  void SetUp() override {
    ASSERT_THAT(SetBlasThreads(1), IsOk());
    for (int i = 0; i < 2; ++i) {
      PsServerOptions options;
      options.tensor_port = 0;  // a tensor plane too
      absl::StatusOr<std::unique_ptr<PsServer>> server =
          PsServer::Start("127.0.0.1:0", options);
      ASSERT_THAT(server, IsOk());
      addresses_.push_back((*server)->address());
      servers_.push_back(*std::move(server));
    }
  }

  // Fashion-MNIST's MLP for `steps` steps, PS settings filled in (a new
  // job id each time), starting on the ring.
  TrainerConfig Config(int64_t steps, DataType type, bool plane) {
    TrainerConfig c = FashionMnistMlpConfig(steps);
    c.grad_dtype = type;
    c.ps.addresses = addresses_;
    c.ps.job_id = absl::StrCat("half-", ++jobs_);
    c.ps.tensor_plane = plane;
    c.ps.optimizer.set_name("adam");
    c.ps.optimizer.set_learning_rate(c.optimizer.lr);
    return c;
  }

  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<PsServer>> servers_;
  int jobs_ = 0;
};

TEST_P(TrainerPsHalfTest, FashionMnistOnPs_FollowsFp32WithinStatedTolerances) {
  GRADSYNC_SKIP_WITHOUT_FASHION_MNIST();
  constexpr int64_t kSteps = 50;
  TrainerConfig fp32_config = Config(kSteps, DataType::kFloat32, false);
  fp32_config.initial_path = SyncPath::kPs;
  const TrainData data = LoadOrDie(fp32_config);
  const JobOutcome fp32 = RunJob(fp32_config, data, kRanks);
  ExpectAllOk(fp32);
  ExpectIdenticalRanks(fp32);
  const size_t elements = fp32.final_params[0].size();
  for (bool plane : {false, true}) {
    SCOPED_TRACE(plane ? "tensor plane" : "gRPC streams");
    TrainerConfig config = Config(kSteps, GetParam(), plane);
    config.initial_path = SyncPath::kPs;
    const JobOutcome half = RunJob(config, data, kRanks);
    ExpectAllOk(half);
    ExpectIdenticalRanks(half);
    ASSERT_EQ(half.metrics[0].size(), static_cast<size_t>(kSteps));
    for (int r = 0; r < kRanks; ++r) {
      for (const StepMetrics& m : half.metrics[r]) {
        ASSERT_EQ(m.mode(), SYNC_MODE_PS) << "step " << m.step();
        // Each element once, 2 bytes, both ways (the fp32 run: 4).
        ASSERT_EQ(m.sync_bytes(), static_cast<int64_t>(elements * 2))
            << "rank " << r << " step " << m.step();
        ASSERT_EQ(m.bytes_received(), static_cast<int64_t>(elements * 2))
            << "rank " << r << " step " << m.step();
      }
    }
    EXPECT_EQ(fp32.metrics[0][0].sync_bytes(),
              static_cast<int64_t>(elements * 4));
    const double worst = WorstLossDifference(fp32, half);
    std::printf(
        "[%s, %s] PS, 50 steps: loss %.4f -> %.4f (fp32 PS -> %.4f), worst "
        "relative loss difference %.2e; test accuracy %.4f (fp32 %.4f)\n",
        DataTypeName(GetParam()).data(), plane ? "plane" : "grpc",
        half.metrics[0].front().loss(), half.metrics[0].back().loss(),
        fp32.metrics[0].back().loss(), worst, half.results[0].test_accuracy,
        fp32.results[0].test_accuracy);
    EXPECT_LT(worst, kLossTolerance);
    EXPECT_NEAR(half.results[0].test_accuracy, fp32.results[0].test_accuracy,
                kAccuracyTolerance);
    // 16-bit traffic is not fp32 traffic: the runs must differ somewhere.
    EXPECT_NE(half.final_params[0], fp32.final_params[0]);
  }
}

TEST_P(TrainerPsHalfTest, RingPsRingSwitch_RanksBitwiseFollowsUnswitched) {
  GRADSYNC_SKIP_WITHOUT_FASHION_MNIST();
  constexpr int64_t kSteps = 30;
  const TrainerConfig ring = Config(kSteps, GetParam(), false);
  const TrainData data = LoadOrDie(ring);
  const JobOutcome reference = RunJob(ring, data, kRanks);
  ExpectAllOk(reference);
  ExpectIdenticalRanks(reference);
  for (bool plane : {false, true}) {
    SCOPED_TRACE(plane ? "tensor plane" : "gRPC streams");
    TrainerConfig config = Config(kSteps, GetParam(), plane);
    config.switches = {{10, SyncPath::kPs}, {20, SyncPath::kRing}};
    const JobOutcome out = RunJob(config, data, kRanks);
    ExpectAllOk(out);
    ExpectIdenticalRanks(out);
    ASSERT_EQ(out.metrics[0].size(), static_cast<size_t>(kSteps));
    for (int64_t s = 0; s < kSteps; ++s) {
      const SyncMode want = s >= 10 && s < 20 ? SYNC_MODE_PS : SYNC_MODE_RING;
      for (int r = 0; r < kRanks; ++r) {
        ASSERT_EQ(out.metrics[r][s].mode(), want)
            << "rank " << r << " step " << s;
      }
    }
    const double worst = WorstLossDifference(reference, out);
    std::printf(
        "[%s, %s] ring -> PS (10) -> ring (20), 30 steps: loss %.4f -> %.4f "
        "(unswitched %.4f), worst relative loss difference %.2e\n",
        DataTypeName(GetParam()).data(), plane ? "plane" : "grpc",
        out.metrics[0].front().loss(), out.metrics[0].back().loss(),
        reference.metrics[0].back().loss(), worst);
    EXPECT_LT(worst, kLossTolerance);
    // The first 10 steps are the same ring steps: bitwise the same.
    for (int64_t s = 0; s < 10; ++s) {
      EXPECT_EQ(out.metrics[0][s].param_hash(),
                reference.metrics[0][s].param_hash())
          << "step " << s;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BFloat16AndFloat16, TrainerPsHalfTest,
                         ::testing::Values(DataType::kBFloat16,
                                           DataType::kFloat16),
                         [](const auto& info) {
                           return std::string(DataTypeName(info.param));
                         });

}  // namespace
}  // namespace gradsync
