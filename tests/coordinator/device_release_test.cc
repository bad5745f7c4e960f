// When a job's devices are free again (issue 43, finding 2): only once each
// worker's heartbeat says the job's ranks are gone. Until then placement
// counts them as in use, so a submit/cancel storm cannot pile jobs onto a
// worker whose cancelled ranks are still stopping.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/coordinator/coordinator_service.h"
#include "tests/coordinator/coordinator_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

class DeviceReleaseTest : public CoordinatorTest {
 protected:
  // A heartbeat that does not wait, from a daemon that still holds `held`.
  HeartbeatResponse PollHolding(const std::string& worker_id,
                                const std::vector<std::string>& held) {
    HeartbeatRequest request;
    request.set_worker_id(worker_id);
    request.set_credential(Credential(worker_id));
    for (const std::string& job : held) request.add_held_job_ids(job);
    absl::StatusOr<HeartbeatResponse> response = service_->Heartbeat(request);
    EXPECT_THAT(response, IsOk());
    return response.ok() ? *response : HeartbeatResponse();
  }

  void Cancel(const std::string& job_id) {
    CancelJobRequest cancel;
    cancel.set_job_id(job_id);
    ASSERT_THAT(service_->CancelJob(cancel), IsOk());
  }

  int FreeDevices() {
    return service_->ListWorkers().workers(0).free_devices();
  }
};

TEST_F(DeviceReleaseTest,
       CancelledJob_DevicesHeldUntilAHeartbeatLeavesItOut_ThenTheNextRuns) {
  const std::string w1 = Register("host-a", 1);
  absl::StatusOr<std::string> a = Submit(ValidSpec(1));
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(PollHolding(w1, {}).assignments(), SizeIs(1));
  Cancel(*a);
  absl::StatusOr<std::string> b = Submit(ValidSpec(1));
  ASSERT_THAT(b, IsOk());

  // The daemon still stops a's ranks: b waits, and the device stays a's.
  const HeartbeatResponse stopping = PollHolding(w1, {*a});
  EXPECT_THAT(stopping.cancel_job_ids(), ElementsAre(*a));
  EXPECT_THAT(stopping.assignments(), IsEmpty());
  EXPECT_THAT(PollHolding(w1, {*a}).assignments(), IsEmpty());
  EXPECT_EQ(Status(*b).state(), JOB_STATE_PENDING);
  EXPECT_EQ(FreeDevices(), 0);
  const WorkerInfo busy = service_->ListWorkers().workers(0);
  EXPECT_EQ(busy.state(), WORKER_STATE_BUSY);
  EXPECT_THAT(busy.job_ids(), ElementsAre(*a));

  // a's ranks are gone: the same heartbeat carries b's assignment.
  const HeartbeatResponse gone = PollHolding(w1, {});
  ASSERT_THAT(gone.assignments(), SizeIs(1));
  EXPECT_EQ(gone.assignments(0).job_id(), *b);
  EXPECT_EQ(Status(*b).state(), JOB_STATE_RENDEZVOUS);
  EXPECT_THAT(events_, Contains(HasSubstr(absl::StrCat("the ranks of job ", *a,
                                                       " have ended"))));
}

TEST_F(DeviceReleaseTest, FailedJob_OtherWorkersKeepItsDevicesUntilTheyStop) {
  const std::string w1 = Register("host-a", 1);
  const std::string w2 = Register("host-b", 1);
  absl::StatusOr<std::string> a = Submit(ValidSpec(2));
  ASSERT_THAT(a, IsOk());
  PollHolding(w1, {});
  PollHolding(w2, {});
  ASSERT_THAT(Report(w1, *a, 0, RANK_STATE_FAILED, 3, "allreduce #3", "boom"),
              IsOk());
  ASSERT_EQ(Status(*a).state(), JOB_STATE_FAILED);
  absl::StatusOr<std::string> b = Submit(ValidSpec(2));
  ASSERT_THAT(b, IsOk());
  // w1's rank ended (it failed); w2's is still being cancelled.
  PollHolding(w1, {});
  EXPECT_THAT(PollHolding(w2, {*a}).cancel_job_ids(), ElementsAre(*a));
  EXPECT_EQ(Status(*b).state(), JOB_STATE_PENDING);
  PollHolding(w2, {});
  EXPECT_EQ(Status(*b).state(), JOB_STATE_RENDEZVOUS);
}

TEST_F(DeviceReleaseTest, AssignmentNeverCollected_DevicesFreeAtOnce) {
  const std::string w1 = Register("host-a", 1);
  absl::StatusOr<std::string> a = Submit(ValidSpec(1));
  ASSERT_THAT(a, IsOk());
  Cancel(*a);  // before any heartbeat: no rank of it ever ran
  absl::StatusOr<std::string> b = Submit(ValidSpec(1));
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(Status(*b).state(), JOB_STATE_RENDEZVOUS);
}

TEST_F(DeviceReleaseTest, RunningJobMissingFromTheHeartbeat_KeepsItsDevices) {
  // Only ended jobs are freed: a heartbeat that omits a running job (its
  // assignment lost on the way, say) does not hand its devices out twice.
  const std::string w1 = Register("host-a", 1);
  absl::StatusOr<std::string> a = Submit(ValidSpec(1));
  ASSERT_THAT(a, IsOk());
  PollHolding(w1, {});
  PollHolding(w1, {});
  EXPECT_EQ(FreeDevices(), 0);
  EXPECT_EQ(Status(*a).state(), JOB_STATE_RENDEZVOUS);
}

TEST_F(DeviceReleaseTest, LostWorker_ItsHeldDevicesGoWithIt) {
  const std::string w1 = Register("host-a", 1);
  absl::StatusOr<std::string> a = Submit(ValidSpec(1));
  ASSERT_THAT(a, IsOk());
  PollHolding(w1, {});
  Cancel(*a);
  clock_.Advance(kLease + absl::Seconds(1));
  service_->CheckLeases(clock_.Now());
  EXPECT_EQ(service_->ListWorkers().workers(0).state(), WORKER_STATE_LOST);
  const std::string w2 = Register("host-b", 1);
  absl::StatusOr<std::string> b = Submit(ValidSpec(1));
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(Status(*b).state(), JOB_STATE_RENDEZVOUS);
  EXPECT_EQ(Status(*b).ranks(0).worker_id(), w2);
}

// The storm of the finding, against a model daemon whose cancelled ranks
// take three heartbeats to stop: however fast jobs come and go, the
// coordinator never has more jobs on the worker than it has devices.
TEST_F(DeviceReleaseTest, SubmitCancelStorm_NeverMoreJobsOnAWorkerThanDevices) {
  constexpr int kDevices = 3;
  const std::string w1 = Register("host-a", kDevices);
  std::vector<std::string> running;                   // started, not cancelled
  std::vector<std::pair<std::string, int>> stopping;  // job, polls left
  std::set<std::string> started;
  size_t most_held = 0;
  for (int i = 0; i < 1000; ++i) {
    absl::StatusOr<std::string> job = Submit(ValidSpec(1 + i % kDevices));
    ASSERT_THAT(job, IsOk());
    std::vector<std::string> held = running;
    for (const auto& [id, polls] : stopping) held.push_back(id);
    const HeartbeatResponse news = PollHolding(w1, held);
    for (const std::string& id : news.cancel_job_ids()) {
      running.erase(std::remove(running.begin(), running.end(), id),
                    running.end());
      stopping.emplace_back(id, 3);
    }
    for (const Assignment& assignment : news.assignments()) {
      running.push_back(assignment.job_id());
      started.insert(assignment.job_id());
    }
    for (auto& [id, polls] : stopping) --polls;
    stopping.erase(std::remove_if(stopping.begin(), stopping.end(),
                                  [](const auto& s) { return s.second <= 0; }),
                   stopping.end());
    // Devices in use by the jobs this daemon holds, of any state.
    size_t in_use = 0;
    for (const std::string& id : running) in_use += Status(id).ranks_size();
    for (const auto& [id, polls] : stopping) in_use += Status(id).ranks_size();
    most_held = std::max(most_held, in_use);
    ASSERT_LE(in_use, static_cast<size_t>(kDevices)) << "after pair " << i;
    Cancel(*job);
  }
  EXPECT_GT(started.size(), 10u) << "the storm should start jobs too";
  EXPECT_EQ(most_held, static_cast<size_t>(kDevices));
  const ListJobsResponse jobs = service_->ListJobs();
  for (const JobStatus& job : jobs.jobs()) {
    EXPECT_EQ(job.state(), JOB_STATE_CANCELLED) << job.job_id();
  }
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
