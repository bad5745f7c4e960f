// EstimateRankMemory: exact byte counts for specs worked out by hand.
#include "jobspec/job_memory.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

using ::testing::HasSubstr;

JobSpec Mlp(std::initializer_list<int64_t> widths, const char* optimizer,
            const char* dataset, int batch) {
  JobSpec spec;
  spec.mutable_model()->set_kind("mlp");
  for (int64_t w : widths) spec.mutable_model()->add_layer_sizes(w);
  spec.mutable_optimizer()->set_name(optimizer);
  spec.mutable_dataset()->set_name(dataset);
  spec.set_batch_size(batch);
  return spec;
}

TEST(JobMemoryTest, FashionMnistMlpWithAdam_EveryTermByHand) {
  const RankMemoryEstimate e =
      EstimateRankMemory(Mlp({784, 256, 10}, "adam", "fashion-mnist", 64));
  // P = 785 * 256 + 257 * 10 = 203,530 parameters.
  EXPECT_TRUE(e.estimated);
  EXPECT_EQ(e.parameters, 203530 * 4);
  EXPECT_EQ(e.gradients, 203530 * 4);
  EXPECT_EQ(e.optimizer, 2 * 203530 * 4);  // Adam's two moments
  EXPECT_EQ(e.sync, 203530 * 4);
  // 64 * (784 + 256 + 10 outputs + 2 deltas of 784).
  EXPECT_EQ(e.activations, 64 * (784 + 256 + 10 + 2 * 784) * 4);
  EXPECT_EQ(e.data, int64_t{70000} * 785 * 4);
  EXPECT_EQ(e.total(),
            5 * 203530 * 4 + 64 * 2618 * 4 + int64_t{70000} * 785 * 4);
}

TEST(JobMemoryTest, OptimizerStateFollowsItsBuffers) {
  EXPECT_EQ(EstimateRankMemory(Mlp({4, 2}, "sgd", "synthetic", 1)).optimizer,
            0);
  EXPECT_EQ(EstimateRankMemory(Mlp({4, 2}, "sum", "synthetic", 1)).optimizer,
            0);
  EXPECT_EQ(
      EstimateRankMemory(Mlp({4, 2}, "momentum", "synthetic", 1)).optimizer,
      10 * 4);
  EXPECT_EQ(EstimateRankMemory(Mlp({4, 2}, "adamw", "synthetic", 1)).optimizer,
            2 * 10 * 4);
}

TEST(JobMemoryTest, SyntheticModel_NoActivationsNoData) {
  JobSpec spec;
  spec.mutable_model()->set_kind("synthetic");
  spec.mutable_model()->set_synthetic_floats(1000);
  spec.mutable_optimizer()->set_name("sgd");
  spec.mutable_dataset()->set_name("synthetic");
  spec.set_batch_size(64);
  const RankMemoryEstimate e = EstimateRankMemory(spec);
  EXPECT_EQ(e.total(), 3 * 4000);
  EXPECT_EQ(e.Describe(),
            "11.7 KiB per rank (parameters 3.91 KiB, gradients 3.91 KiB, "
            "sync buffer 3.91 KiB)");
}

// The finding's spec: layers 784,1000000,10 with Adam, accepted before and
// taking a worker past 11 GB with two jobs.
TEST(JobMemoryTest, TheFindingsWideLayer_IsTensOfGibibytes) {
  const RankMemoryEstimate e =
      EstimateRankMemory(Mlp({784, 1000000, 10}, "adam", "fashion-mnist", 64));
  // P = 785 * 10^6 + 1,000,001 * 10.
  const int64_t p = int64_t{785} * 1000000 + 10000010;
  EXPECT_EQ(e.parameters, p * 4);
  EXPECT_GT(e.total(), int64_t{15} << 30);
  EXPECT_THAT(e.Describe(), HasSubstr("GiB per rank (parameters 2.96 GiB"));
}

TEST(JobMemoryTest, Entrypoint_NotEstimated) {
  JobSpec spec;
  spec.mutable_model()->set_kind("entrypoint");
  const RankMemoryEstimate e = EstimateRankMemory(spec);
  EXPECT_FALSE(e.estimated);
  EXPECT_EQ(e.total(), 0);
  EXPECT_THAT(e.Describe(), HasSubstr("not estimated"));
}

}  // namespace
}  // namespace gradsync
