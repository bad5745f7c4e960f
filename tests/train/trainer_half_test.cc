// 16-bit gradients on the ring (TrainerConfig::grad_dtype, issue 40):
// ranks stay bitwise equal, the bytes on the wire halve, and Fashion-MNIST
// trains as with fp32: the loss trajectory within 2% and the test accuracy
// within half a point.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/train/trainer_test_util.h"
#include "tests/util/status_matchers.h"
#include "worker/data/fashion_mnist.h"
#include "worker/model/blas.h"
#include "worker/train/param_hash.h"
#include "worker/train/trainer.h"

namespace gradsync {
namespace {

using ::gradsync::testing::ExpectAllOk;
using ::gradsync::testing::FashionMnistMlpConfig;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::JobOutcome;
using ::gradsync::testing::LoadOrDie;
using ::gradsync::testing::RunJob;

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

class TrainerHalfTest : public ::testing::TestWithParam<DataType> {
 protected:
  void SetUp() override { ASSERT_THAT(SetBlasThreads(1), IsOk()); }
};

TEST_P(TrainerHalfTest, SyntheticModel_HalfTheBytes_RanksBitwiseEqual) {
  TrainerConfig config;
  config.model = "synthetic";
  config.synthetic_floats = 100000;
  config.synthetic_compute = absl::Milliseconds(1);
  config.optimizer.lr = 0.001;
  config.global_batch_size = 8;
  config.steps = 4;
  config.bucket_bytes = 100000;  // 4 buckets of 25,000 elements
  config.comm_timeout = absl::Seconds(20);
  config.grad_dtype = GetParam();
  const JobOutcome out = RunJob(config, TrainData{}, 4);
  ExpectAllOk(out);
  ExpectIdenticalRanks(out);
  // 2(N-1)/N of 200,000 bytes of gradient, plus the step's fp64 scalars
  // (the loss and one switch slot per rank).
  const int64_t want = 2 * 3 * 200000 / 4 + 2 * 3 * (8 + 4 * 8) / 4;
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(out.metrics[r][0].bytes_sent(), want) << r;
    EXPECT_EQ(out.metrics[r][0].sync_bytes(), 200000) << r;
  }
}

TEST_P(TrainerHalfTest, FashionMnist_FollowsFp32WithinStatedTolerances) {
  GRADSYNC_SKIP_WITHOUT_FASHION_MNIST();
  TrainerConfig config = FashionMnistMlpConfig(50);
  const TrainData data = LoadOrDie(config);
  const JobOutcome fp32 = RunJob(config, data, 4);
  config.grad_dtype = GetParam();
  const JobOutcome half = RunJob(config, data, 4);
  ExpectAllOk(fp32);
  ExpectAllOk(half);
  ExpectIdenticalRanks(half);
  double worst = 0;
  for (size_t s = 0; s < fp32.metrics[0].size(); ++s) {
    const double a = fp32.metrics[0][s].loss();
    const double b = half.metrics[0][s].loss();
    worst = std::max(worst, std::fabs(a - b) / std::fabs(a));
  }
  std::printf(
      "[%s] 50 steps: loss %.4f -> %.4f (fp32 -> %.4f), worst relative loss "
      "difference %.2e; test accuracy %.4f (fp32 %.4f)\n",
      DataTypeName(GetParam()).data(), half.metrics[0].front().loss(),
      half.metrics[0].back().loss(), fp32.metrics[0].back().loss(), worst,
      half.results[0].test_accuracy, fp32.results[0].test_accuracy);
  EXPECT_LT(worst, 0.02);
  EXPECT_NEAR(half.results[0].test_accuracy, fp32.results[0].test_accuracy,
              0.005);
  // 16-bit sums are not fp32 sums: the runs must differ somewhere.
  EXPECT_NE(half.final_params[0], fp32.final_params[0]);
}

INSTANTIATE_TEST_SUITE_P(BFloat16AndFloat16, TrainerHalfTest,
                         ::testing::Values(DataType::kBFloat16,
                                           DataType::kFloat16),
                         [](const auto& info) {
                           return std::string(DataTypeName(info.param));
                         });

}  // namespace
}  // namespace gradsync
