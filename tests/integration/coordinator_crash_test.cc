// The coordinator killed with SIGKILL mid-job and started again on its
// --state-db (issue "trust and survival"): the running job goes on, its
// daemons re-attach under their old ids, it finishes with exactly the
// result of a run nothing interrupted (the same parameters' hash and loss
// at the last step on every rank, the same test accuracy), and every step
// metric of every rank reaches the coordinator, those of the outage
// included. Ring mode and PS mode.
#include <signal.h>

#include <iostream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/cluster_test_base.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

constexpr int kRanks = 4;
constexpr int64_t kSteps = 300;
constexpr absl::Duration kJobTimeout = absl::Seconds(120);

class CoordinatorCrashTest : public ClusterTest,
                             public ::testing::WithParamInterface<SyncMode> {
 protected:
  TestClusterOptions Options() const override {
    TestClusterOptions options;
    options.state_db = true;
    options.tls = true;
    options.parameter_servers = 1;
    options.lease_ms = 3000;
    return options;
  }

  JobSpec Spec() const {
    JobSpec spec = FashionMnistSpec(kRanks, {784, 64, 10}, /*batch_size=*/64,
                                    kSteps, /*learning_rate=*/1e-3,
                                    /*seed=*/5);
    if (!UseFashionMnist()) spec.mutable_dataset()->set_name("synthetic");
    spec.set_mode(GetParam());
    if (GetParam() == SYNC_MODE_PS) spec.mutable_ps()->set_shards(1);
    return spec;
  }

  std::set<std::string> LiveIds() {
    absl::StatusOr<ListWorkersResponse> list = cluster().ListWorkers();
    EXPECT_THAT(list, IsOk());
    std::set<std::string> ids;
    if (!list.ok()) return ids;
    for (const WorkerInfo& w : list->workers()) {
      if (w.state() != WORKER_STATE_LOST) ids.insert(w.worker_id());
    }
    for (const ParameterServerInfo& s : list->parameter_servers()) {
      if (!s.lost()) ids.insert(s.ps_id());
    }
    return ids;
  }
};

TEST_P(CoordinatorCrashTest, KilledMidJob_JobFinishesAsIfUninterrupted) {
  absl::StatusOr<TestCluster::FinishedJob> full =
      cluster().RunToSuccess(Spec(), kJobTimeout);
  ASSERT_THAT(full, IsOk());
  std::map<int, StepMetrics> last_of_full;
  for (const StepMetrics& m : full->metrics) {
    if (m.step() == kSteps - 1) last_of_full[m.rank()] = m;
  }
  ASSERT_EQ(last_of_full.size(), static_cast<size_t>(kRanks));
  ASSERT_THAT(cluster().WaitForIdleWorkers(kJobTimeout), IsOk());
  const std::set<std::string> daemons = LiveIds();

  absl::StatusOr<std::string> job = cluster().Submit(Spec());
  ASSERT_THAT(job, IsOk());
  ASSERT_THAT(cluster().WaitForJob(
                  *job,
                  [](const JobStatus& s) {
                    return s.state() == JOB_STATE_RUNNING && s.step() >= 5;
                  },
                  kJobTimeout, "RUNNING at step 5"),
              IsOk());
  const absl::Time killed = absl::Now();
  ASSERT_THAT(cluster().RestartCoordinator(SIGKILL), IsOk());
  std::cout << "coordinator killed and serving again after "
            << absl::FormatDuration(absl::Now() - killed) << "\n";

  absl::StatusOr<JobStatus> end = cluster().WaitForJobEnd(*job, kJobTimeout);
  ASSERT_THAT(end, IsOk());
  ASSERT_EQ(end->state(), JOB_STATE_SUCCEEDED) << end->message();
  EXPECT_EQ(end->test_accuracy(), full->status.test_accuracy());
  EXPECT_EQ(end->test_loss(), full->status.test_loss());
  EXPECT_EQ(LiveIds(), daemons) << "the daemons re-attached under new ids";

  absl::StatusOr<std::vector<StepMetrics>> metrics = cluster().GetMetrics(*job);
  ASSERT_THAT(metrics, IsOk());
  std::set<std::pair<int, int64_t>> seen;
  for (const StepMetrics& m : *metrics) {
    seen.insert({m.rank(), m.step()});
    if (m.step() != kSteps - 1) continue;
    const StepMetrics& want = last_of_full.at(m.rank());
    EXPECT_EQ(m.param_hash(), want.param_hash()) << "rank " << m.rank();
    EXPECT_EQ(m.loss(), want.loss()) << "rank " << m.rank();
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kRanks * kSteps))
      << "step metrics were lost across the restart";
  EXPECT_THAT(cluster().coordinator().ReadLog(),
              ::testing::HasSubstr("restarted on the state database"));
}

INSTANTIATE_TEST_SUITE_P(BothModes, CoordinatorCrashTest,
                         ::testing::Values(SYNC_MODE_RING, SYNC_MODE_PS),
                         [](const ::testing::TestParamInfo<SyncMode>& info) {
                           return info.param == SYNC_MODE_PS ? "Ps" : "Ring";
                         });

}  // namespace
}  // namespace testing
}  // namespace gradsync
