// The coordinator and 16-bit gradients (JobSpec.grad_dtype): the spec is
// spelled canonically, refused where 16 bits are not built (entrypoint
// jobs), accepted for PS jobs and on the NCCL ring, and a runtime switch
// to PS of such a job is accepted like an fp32 job's.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/job_spec.h"
#include "server/coordinator/coordinator_service.h"
#include "tests/coordinator/coordinator_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::HasSubstr;

TEST(GradDtypeSpecTest, SpelledCanonically) {
  JobSpec spec = ValidSpec(2);
  spec.set_grad_dtype("BFloat16");
  absl::StatusOr<JobSpec> out = ValidateJobSpec(spec);
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ(out->grad_dtype(), "bf16");
  spec.clear_grad_dtype();
  out = ValidateJobSpec(spec);
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ(out->grad_dtype(), "fp32");
}

TEST(GradDtypeSpecTest, TakenByThePsAndNccl_ABadNameRefused) {
  // The parameter server takes both 16-bit types.
  for (const char* dtype : {"bf16", "fp16"}) {
    JobSpec ps = PsJobSpec(2, 1);
    ps.set_grad_dtype(dtype);
    absl::StatusOr<JobSpec> out = ValidateJobSpec(ps);
    ASSERT_THAT(out, IsOk());
    EXPECT_EQ(out->grad_dtype(), dtype);
  }
  // The NCCL ring of a GPU job takes 16 bits, as does its host ring.
  JobSpec nccl = ValidSpec(2, "cuda");
  nccl.set_grad_dtype("fp16");
  EXPECT_THAT(ValidateJobSpec(nccl), IsOk());
  nccl.set_ring_backend("tcp");
  EXPECT_THAT(ValidateJobSpec(nccl), IsOk());
  JobSpec bad = ValidSpec(2);
  bad.set_grad_dtype("fp8");
  EXPECT_THAT(ValidateJobSpec(bad), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("gradDtype is 'fp8'")));
}

using GradDtypeSwitchTest = CoordinatorTest;

TEST_F(GradDtypeSwitchTest, SwitchToPs_AcceptedForA16BitJob) {
  Register("host-a", 2);
  RegisterPs("10.0.0.9:1");
  JobSpec spec = ValidSpec(2);
  spec.set_grad_dtype("bf16");
  absl::StatusOr<std::string> job = Submit(spec);
  ASSERT_THAT(job, IsOk());
  SwitchJobRequest request;
  request.set_job_id(*job);
  request.set_mode(SYNC_MODE_PS);
  absl::StatusOr<SwitchJobResponse> response = service_->SwitchJob(request);
  ASSERT_THAT(response, IsOk());
  EXPECT_EQ(response->epoch(), 1);
  EXPECT_EQ(Status(*job).switch_requests(), 1);
  EXPECT_THAT(Status(*job).ps_addresses(),
              ::testing::ElementsAre("10.0.0.9:1"));
  // An fp32 job switches as before.
  JobSpec fp32 = ValidSpec(1);
  Register("host-b", 1);
  absl::StatusOr<std::string> other = Submit(fp32);
  ASSERT_THAT(other, IsOk());
  request.set_job_id(*other);
  EXPECT_THAT(service_->SwitchJob(request), IsOk());
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
