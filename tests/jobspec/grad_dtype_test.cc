// JobSpec.grad_dtype: one parser for every path (the spec-level checks,
// 16 bits on the PS and NCCL included, are in
// tests/coordinator/grad_dtype_spec_test.cc).
#include "jobspec/grad_dtype.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

using ::testing::HasSubstr;

TEST(GradDtypeTest, ParsesTheThreeTypesAndTheirAliases) {
  EXPECT_EQ(*ParseGradDtype(""), DataType::kFloat32);
  EXPECT_EQ(*ParseGradDtype("fp32"), DataType::kFloat32);
  EXPECT_EQ(*ParseGradDtype("bf16"), DataType::kBFloat16);
  EXPECT_EQ(*ParseGradDtype("BFloat16"), DataType::kBFloat16);
  EXPECT_EQ(*ParseGradDtype("fp16"), DataType::kFloat16);
  EXPECT_EQ(*ParseGradDtype("half"), DataType::kFloat16);
  EXPECT_EQ(GradDtypeName(DataType::kBFloat16), "bf16");
  EXPECT_EQ(GradDtypeName(DataType::kFloat16), "fp16");
  EXPECT_EQ(GradDtypeName(DataType::kFloat32), "fp32");
}

TEST(GradDtypeTest, RefusesOtherTypes_NamingTheField) {
  for (const char* bad : {"fp8", "double", "int32", "bf 16"}) {
    absl::StatusOr<DataType> type = ParseGradDtype(bad);
    ASSERT_FALSE(type.ok()) << bad;
    EXPECT_THAT(type.status().message(),
                HasSubstr("gradDtype is '" + std::string(bad) +
                          "'; use fp32 (the default), bf16 or fp16"));
  }
}

TEST(GradDtypeTest, SpecUsesPs_PsAutoOrAScriptedSwitchToPs) {
  JobSpec spec;
  spec.set_mode(SYNC_MODE_RING);
  EXPECT_FALSE(SpecUsesPs(spec));
  spec.set_mode(SYNC_MODE_PS);
  EXPECT_TRUE(SpecUsesPs(spec));
  spec.set_mode(SYNC_MODE_RING);
  spec.mutable_auto_mode()->set_enabled(true);
  EXPECT_TRUE(SpecUsesPs(spec));
  spec.mutable_auto_mode()->set_enabled(false);
  SwitchSpec* to_ring = spec.add_switches();
  to_ring->set_step(5);
  to_ring->set_mode(SYNC_MODE_RING);
  EXPECT_FALSE(SpecUsesPs(spec));
  SwitchSpec* to_ps = spec.add_switches();
  to_ps->set_step(10);
  to_ps->set_mode(SYNC_MODE_PS);
  EXPECT_TRUE(SpecUsesPs(spec));
}

}  // namespace
}  // namespace gradsync
