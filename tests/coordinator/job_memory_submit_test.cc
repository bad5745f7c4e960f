// Spec resource bounds (issue 43, finding 7): the coordinator estimates a
// job's memory per rank from its spec (jobspec/job_memory.h), refuses at
// submit what the live workers' --max-job-memory cannot hold, and places
// no more ranks on a worker than its job memory holds.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/coordinator/coordinator_service.h"
#include "tests/coordinator/coordinator_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kMiB = int64_t{1} << 20;

class JobMemoryTest : public CoordinatorTest {
 protected:
  // A worker of `devices` cpu devices whose jobs may use `memory` bytes.
  std::string RegisterWithMemory(const std::string& host, int devices,
                                 int64_t memory) {
    return Register(host, devices, "cpu", memory);
  }

  // A synthetic job of `ranks` ranks whose ranks need 3 * 4 * floats bytes
  // each (parameters, gradients, sync buffer; SGD keeps no state).
  static JobSpec Synthetic(int ranks, int64_t floats) {
    JobSpec spec = ValidSpec(ranks);
    spec.mutable_model()->clear_layer_sizes();
    spec.mutable_model()->set_kind("synthetic");
    spec.mutable_model()->set_synthetic_floats(floats);
    spec.mutable_dataset()->set_name("synthetic");
    spec.mutable_optimizer()->set_name("sgd");
    return spec;
  }
};

TEST_F(JobMemoryTest, SubmitBeyondEveryWorkersJobMemory_RefusedNothingAdded) {
  RegisterWithMemory("host-a", 2, 64 * kMiB);
  // 8 Mi floats: 96 MiB a rank.
  absl::StatusOr<std::string> job = Submit(Synthetic(1, 8 * kMiB));
  EXPECT_THAT(job, StatusIs(absl::StatusCode::kResourceExhausted,
                            AllOf(HasSubstr("96.0 MiB per rank"),
                                  HasSubstr("--max-job-memory holds only 0 of "
                                            "its 1 ranks"),
                                  HasSubstr("host-a: 64.0 MiB"),
                                  HasSubstr("nothing was submitted"))));
  EXPECT_THAT(service_->ListJobs().jobs(), IsEmpty());
  // One that fits is taken.
  EXPECT_THAT(Submit(Synthetic(1, 4 * kMiB)), IsOk());
}

TEST_F(JobMemoryTest, RanksGoOnlyWhereTheyFit_SpreadAcrossWorkers) {
  // host-a's job memory holds one 48 MiB rank, host-b's any number.
  const std::string a = RegisterWithMemory("host-a", 4, 64 * kMiB);
  const std::string b = RegisterWithMemory("host-b", 4, 0);
  absl::StatusOr<std::string> job = Submit(Synthetic(3, 4 * kMiB));
  ASSERT_THAT(job, IsOk());
  const JobStatus status = Status(*job);
  ASSERT_EQ(status.ranks_size(), 3);
  EXPECT_EQ(status.ranks(0).worker_id(), a);
  EXPECT_EQ(status.ranks(1).worker_id(), b);
  EXPECT_EQ(status.ranks(2).worker_id(), b);
}

TEST_F(JobMemoryTest, MoreRanksThanTheJobMemoryHolds_Refused) {
  RegisterWithMemory("host-a", 4, 64 * kMiB);  // one 48 MiB rank
  EXPECT_THAT(Submit(Synthetic(2, 4 * kMiB)),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("holds only 1 of its 2 ranks")));
  EXPECT_THAT(service_->ListJobs().jobs(), IsEmpty());
}

// The finding's two one-rank jobs: each fits alone, so both are taken,
// but the second waits until the first has left the worker's memory.
TEST_F(JobMemoryTest, TwoJobsThatFitOnlyAlone_RunOneAfterTheOther) {
  const std::string w1 = RegisterWithMemory("host-a", 2, 64 * kMiB);
  absl::StatusOr<std::string> a = Submit(Synthetic(1, 4 * kMiB));  // 48 MiB
  absl::StatusOr<std::string> b = Submit(Synthetic(1, 4 * kMiB));
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(Status(*a).state(), JOB_STATE_RENDEZVOUS);
  EXPECT_EQ(Status(*b).state(), JOB_STATE_PENDING);
  EXPECT_THAT(Status(*b).message(), AllOf(HasSubstr("waiting for memory"),
                                          HasSubstr("48.0 MiB per rank")));
  EXPECT_EQ(service_->ListWorkers().workers(0).free_devices(), 1);
  ReportAll(*a, RANK_STATE_SUCCEEDED);  // its assignment never collected
  EXPECT_EQ(Status(*b).state(), JOB_STATE_RENDEZVOUS);
}

TEST_F(JobMemoryTest, WorkersWithoutALimit_TakeAnyJobTheSpecAllows) {
  Register("host-a", 1);  // states no job memory
  EXPECT_THAT(Submit(Synthetic(1, 256 * kMiB)), IsOk());
  EXPECT_EQ(service_->ListWorkers().workers(0).job_memory_bytes(), 0);
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
