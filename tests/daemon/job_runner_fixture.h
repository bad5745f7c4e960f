// The fixture of the JobRunner tests (job_runner_test.cc,
// job_runner_hosts_test.cc): an in-process fake Coordinator, runners
// started against it, the small job specs the tests train, and a helper
// that runs one job over runners registered as separate hosts.
#ifndef GRADSYNC_TESTS_DAEMON_JOB_RUNNER_FIXTURE_H_
#define GRADSYNC_TESTS_DAEMON_JOB_RUNNER_FIXTURE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/fake_coordinator.h"
#include "tests/util/status_matchers.h"
#include "worker/daemon/blas_policy.h"
#include "worker/daemon/job_runner.h"

namespace gradsync {
namespace job_runner_testing {

inline JobSpec MlpSpec(int64_t steps) {
  JobSpec spec;
  spec.mutable_model()->set_kind("mlp");
  for (int64_t w : {16, 12, 4}) spec.mutable_model()->add_layer_sizes(w);
  spec.mutable_dataset()->set_name("synthetic");
  spec.mutable_optimizer()->set_name("momentum");
  spec.mutable_optimizer()->set_learning_rate(0.05);
  spec.set_num_workers(2);
  spec.set_batch_size(32);
  spec.set_steps(steps);
  spec.set_seed(3);
  spec.set_bucket_bytes(256);
  spec.set_eval_every_steps(3);
  return spec;
}

inline JobSpec SyntheticSpec(int64_t steps, double compute_ms) {
  JobSpec spec;
  spec.mutable_model()->set_kind("synthetic");
  spec.mutable_model()->set_synthetic_floats(20000);
  spec.mutable_model()->set_synthetic_compute_ms(compute_ms);
  spec.mutable_dataset()->set_name("synthetic");
  spec.mutable_optimizer()->set_name("sgd");
  spec.mutable_optimizer()->set_learning_rate(0.001);
  spec.set_num_workers(2);  // the worker checks the spec as the coordinator
  spec.set_batch_size(4);
  spec.set_steps(steps);
  return spec;
}

inline Assignment MakeAssignment(const std::string& job, const JobSpec& spec,
                                 int world, std::vector<int> ranks) {
  Assignment a;
  a.set_job_id(job);
  a.set_generation(1);
  *a.mutable_spec() = spec;
  a.set_world_size(world);
  for (int r : ranks) {
    a.add_ranks(r);
    Device* d = a.add_devices();
    d->set_kind("cpu");
    d->set_index(r);
  }
  return a;
}

class JobRunnerTest : public ::testing::Test {
 protected:
  ::gradsync::testing::FakeCoordinator& fake() { return server_.fake(); }

  JobRunnerConfig Config(const std::string& worker_id) {
    JobRunnerConfig c;
    c.worker_id = worker_id;
    c.coordinator = server_.address();
    c.rendezvous_timeout = absl::Seconds(20);
    c.collective_timeout = absl::Seconds(20);
    c.rpc_timeout = absl::Seconds(5);
    c.blas = &blas_;
    return c;
  }

  std::unique_ptr<JobRunner> Start(const Assignment& a,
                                   const std::string& worker_id = "w-1") {
    absl::StatusOr<std::unique_ptr<JobRunner>> runner =
        JobRunner::Start(a, Config(worker_id), server_.NewClient());
    EXPECT_THAT(runner, ::gradsync::testing::IsOk());
    return runner.ok() ? *std::move(runner) : nullptr;
  }

  size_t CountReports(const std::string& job, RankState state) {
    return fake().Reports(job, state).size();
  }

  // Runs `spec` with one JobRunner per host: worker "w-<host>" registered
  // as host-a, host-b, ... with ranks_per_host[h] ranks, numbered host by
  // host. Expects every rank to succeed with identical parameters after
  // each of `steps` steps; returns the runners' log lines.
  std::vector<std::string> RunOnHostsAndCheck(
      const std::string& job, const JobSpec& spec,
      const std::vector<int>& ranks_per_host, int64_t steps);

  ::gradsync::testing::FakeCoordinatorServer server_;
  BlasThreadPolicy blas_;
};

inline std::vector<std::string> JobRunnerTest::RunOnHostsAndCheck(
    const std::string& job, const JobSpec& spec,
    const std::vector<int>& ranks_per_host, int64_t steps) {
  auto lines = std::make_shared<std::vector<std::string>>();
  auto mu = std::make_shared<absl::Mutex>();
  int world = 0;
  for (int n : ranks_per_host) world += n;
  std::vector<std::unique_ptr<JobRunner>> runners;
  int first = 0;
  for (size_t h = 0; h < ranks_per_host.size(); ++h) {
    const std::string host =
        absl::StrCat("host-", std::string(1, static_cast<char>('a' + h)));
    JobRunnerConfig config = Config(absl::StrCat("w-", host));
    config.host = host;
    config.log = [lines, mu](absl::string_view line) {
      absl::MutexLock lock(mu.get());
      lines->emplace_back(line);
    };
    std::vector<int> ranks;
    for (int r = 0; r < ranks_per_host[h]; ++r) ranks.push_back(first + r);
    first += ranks_per_host[h];
    absl::StatusOr<std::unique_ptr<JobRunner>> runner = JobRunner::Start(
        MakeAssignment(job, spec, world, ranks), config, server_.NewClient());
    EXPECT_THAT(runner, ::gradsync::testing::IsOk());
    if (!runner.ok()) return {};
    runners.push_back(*std::move(runner));
  }
  const bool done = fake().WaitFor([&] {
    for (auto& r : runners) {
      if (!r->Done()) return false;
    }
    return true;
  });
  EXPECT_TRUE(done);
  if (!done) return {};
  for (auto& r : runners) r->Join();
  EXPECT_EQ(fake().Reports(job, RANK_STATE_SUCCEEDED).size(),
            static_cast<size_t>(world));
  std::map<int64_t, std::vector<StepMetrics>> by_step;
  for (const StepMetrics& m : fake().metrics()) {
    by_step[m.step()].push_back(m);
  }
  EXPECT_EQ(by_step.size(), static_cast<size_t>(steps));
  for (const auto& [step, ms] : by_step) {
    EXPECT_EQ(ms.size(), static_cast<size_t>(world)) << "step " << step;
    for (const StepMetrics& m : ms) {
      EXPECT_EQ(ms[0].param_hash(), m.param_hash()) << "step " << step;
    }
  }
  absl::MutexLock lock(mu.get());
  return *lines;
}

}  // namespace job_runner_testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_DAEMON_JOB_RUNNER_FIXTURE_H_
