// JobSpec.grad_dtype: one parser, and the combinations 16-bit gradients
// are not built for yet.
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

TEST(GradDtypeTest, SixteenBits_AnywhereButTheNcclRing) {
  JobSpec spec;
  spec.set_grad_dtype("bf16");
  spec.set_mode(SYNC_MODE_RING);
  EXPECT_TRUE(ValidateGradDtype(spec, /*nccl_ring=*/false).ok());
  EXPECT_THAT(ValidateGradDtype(spec, /*nccl_ring=*/true).message(),
              HasSubstr("runs on NCCL"));
  // The parameter server takes 16-bit gradients: PS, auto and a scripted
  // switch to PS are accepted (an NCCL ring still is not).
  spec.set_mode(SYNC_MODE_PS);
  EXPECT_TRUE(ValidateGradDtype(spec, false).ok());
  spec.set_mode(SYNC_MODE_RING);
  spec.mutable_auto_mode()->set_enabled(true);
  EXPECT_TRUE(ValidateGradDtype(spec, false).ok());
  spec.mutable_auto_mode()->set_enabled(false);
  SwitchSpec* to_ps = spec.add_switches();
  to_ps->set_step(10);
  to_ps->set_mode(SYNC_MODE_PS);
  EXPECT_TRUE(ValidateGradDtype(spec, false).ok());
  spec.set_grad_dtype("fp16");
  EXPECT_TRUE(ValidateGradDtype(spec, false).ok());
  EXPECT_THAT(ValidateGradDtype(spec, true).message(),
              HasSubstr("runs on NCCL"));
  // fp32 goes anywhere.
  spec.set_grad_dtype("fp32");
  EXPECT_TRUE(ValidateGradDtype(spec, true).ok());
}

}  // namespace
}  // namespace gradsync
