// The defaults every reader of a spec shares (job_spec.h, optimizer_spec.h):
// the PS partitions, how ringBackend "auto" resolves, and the optimizer
// the ranks and the PS shards build.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/job_spec.h"
#include "jobspec/optimizer_spec.h"
#include "tests/jobspec/job_spec_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::gradsync::testing::ValidSpec;
using ::testing::HasSubstr;

// 0 stays 0 in the spec; every reader resolves it to the one default.
TEST(JobSpecDefaultsTest, PsPartition_TheSpecsOrTheDefault) {
  PsSpec ps;
  EXPECT_EQ(PsPartitionBytes(ps), kDefaultPsPartitionBytes);
  EXPECT_EQ(kDefaultPsPartitionBytes, 4 * 1024 * 1024);
  ps.set_partition_bytes(65536);
  EXPECT_EQ(PsPartitionBytes(ps), 65536);
  // The validated spec keeps the 0 (a spec says what its user set).
  absl::StatusOr<JobSpec> spec = ValidateJobSpec(ValidSpec(2));
  ASSERT_THAT(spec, IsOk());
  EXPECT_EQ(spec->ps().partition_bytes(), 0);
}

TEST(JobSpecDefaultsTest, RingRunsOnNccl_NcclOrAutoForAnMlpOnCuda) {
  JobSpec spec = ValidSpec(2, "cuda");
  for (const char* backend : {"", "auto", "nccl"}) {
    spec.set_ring_backend(backend);
    EXPECT_TRUE(RingRunsOnNccl(spec)) << backend;
  }
  spec.set_ring_backend("tcp");
  EXPECT_FALSE(RingRunsOnNccl(spec));
  spec.set_ring_backend("auto");
  spec.set_device("cpu");
  EXPECT_FALSE(RingRunsOnNccl(spec));
  spec.set_device("cuda");
  spec.mutable_model()->set_kind("synthetic");
  EXPECT_FALSE(RingRunsOnNccl(spec));
}

// Unset hyper-parameters get the defaults of their kind, for a spec
// checked or not (the PS builds its shards' optimizer from what a worker
// sends); the torch PS path's "sum" is an optimizer too.
TEST(JobSpecDefaultsTest, OptimizerConfigFromSpec_FillsTheDefaultsOfItsKind) {
  OptimizerSpec spec;
  spec.set_name("momentum");
  spec.set_learning_rate(0.05);
  absl::StatusOr<OptimizerConfig> config = OptimizerConfigFromSpec(spec);
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->kind, OptimizerKind::kMomentum);
  EXPECT_EQ(config->lr, 0.05);
  EXPECT_EQ(config->momentum, kDefaultMomentum);
  EXPECT_EQ(kDefaultMomentum, 0.9);
  spec.set_name("adamw");
  spec.set_beta1(0.8);
  config = OptimizerConfigFromSpec(spec);
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->beta1, 0.8);
  EXPECT_EQ(config->beta2, kDefaultAdamBeta2);
  EXPECT_EQ(config->eps, kDefaultAdamEpsilon);
  EXPECT_EQ(kDefaultAdamBeta2, 0.999);
  EXPECT_EQ(kDefaultAdamEpsilon, 1e-8);
  spec.set_name("sum");
  config = OptimizerConfigFromSpec(spec);
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->kind, OptimizerKind::kSum);
  spec.set_name("lbfgs");
  EXPECT_THAT(OptimizerConfigFromSpec(spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("optimizer.name is 'lbfgs'")));
}

// What the coordinator checks is what the ranks build.
TEST(JobSpecDefaultsTest, ValidatedOptimizer_BuildsTheSameConfig) {
  JobSpec spec = ValidSpec(2);
  spec.mutable_optimizer()->set_name("adam");
  absl::StatusOr<JobSpec> valid = ValidateJobSpec(spec);
  ASSERT_THAT(valid, IsOk());
  EXPECT_EQ(valid->optimizer().beta1(), kDefaultAdamBeta1);
  absl::StatusOr<OptimizerConfig> from_checked =
      OptimizerConfigFromSpec(valid->optimizer());
  absl::StatusOr<OptimizerConfig> from_sent =
      OptimizerConfigFromSpec(spec.optimizer());
  ASSERT_THAT(from_checked, IsOk());
  ASSERT_THAT(from_sent, IsOk());
  EXPECT_EQ(from_checked->beta1, from_sent->beta1);
  EXPECT_EQ(from_checked->beta2, from_sent->beta2);
  EXPECT_EQ(from_checked->eps, from_sent->eps);
  EXPECT_THAT(ValidateOptimizerConfig(*from_checked), IsOk());
}

}  // namespace
}  // namespace gradsync
