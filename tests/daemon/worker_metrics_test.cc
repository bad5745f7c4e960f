// The worker daemon's Prometheus series (worker/daemon/worker_metrics.h):
// exact text for known steps and device use, the all-reduce timing
// decorator (timed_communicator.h), a real job's ranks feeding them through
// the job runner, and the daemon's /metrics endpoint over a real socket.
#include "worker/daemon/worker_metrics.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "collectives/memory_store.h"
#include "collectives/tcp/tcp_communicator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "observability/prometheus.h"
#include "tests/util/fake_coordinator.h"
#include "tests/util/metrics_scrape.h"
#include "tests/util/status_matchers.h"
#include "worker/daemon/job_runner.h"
#include "worker/daemon/timed_communicator.h"
#include "worker/daemon/worker_daemon.h"

namespace gradsync {
namespace {

using ::gradsync::testing::FakeCoordinatorServer;
using ::gradsync::testing::IsOk;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Optional;

// The text of the families whose names start with `prefix`.
std::string RenderOnly(const MetricsRegistry& registry,
                       absl::string_view prefix) {
  std::vector<MetricFamily> kept;
  for (MetricFamily& family : registry.Collect()) {
    if (absl::StartsWith(family.name, prefix)) kept.push_back(family);
  }
  return RenderMetrics(kept);
}

TEST(WorkerMetricsTest, AddStep_CountsByModeAndPhase_ExactText) {
  MetricsRegistry registry;
  absl::StatusOr<std::unique_ptr<WorkerMetrics>> metrics =
      WorkerMetrics::Create(&registry, {"cpu:0"});
  ASSERT_THAT(metrics, IsOk());
  StepMetrics step;
  step.set_mode(SYNC_MODE_PS);
  step.set_compute_s(0.5);
  step.set_comm_s(0.25);
  step.set_idle_s(0.125);
  step.set_step_s(0.875);
  step.set_bytes_sent(1000);
  step.set_bytes_received(3000);
  (*metrics)->AddStep(step);
  (*metrics)->AddStep(step);
  EXPECT_EQ(
      "# HELP gradsync_worker_steps_total Steps this worker's ranks ran.\n"
      "# TYPE gradsync_worker_steps_total counter\n"
      "gradsync_worker_steps_total{mode=\"ps\"} 2\n"
      "gradsync_worker_steps_total{mode=\"ring\"} 0\n",
      RenderOnly(registry, "gradsync_worker_steps_total"));
  EXPECT_EQ(
      "# HELP gradsync_worker_step_phase_seconds_total Step time of this "
      "worker's ranks by phase: compute, exposed communication (not hidden "
      "behind compute) and idle.\n"
      "# TYPE gradsync_worker_step_phase_seconds_total counter\n"
      "gradsync_worker_step_phase_seconds_total{mode=\"ps\",phase="
      "\"communication\"} 0.5\n"
      "gradsync_worker_step_phase_seconds_total{mode=\"ps\",phase="
      "\"compute\"} 1\n"
      "gradsync_worker_step_phase_seconds_total{mode=\"ps\",phase=\"idle\"} "
      "0.25\n"
      "gradsync_worker_step_phase_seconds_total{mode=\"ring\",phase="
      "\"communication\"} 0\n"
      "gradsync_worker_step_phase_seconds_total{mode=\"ring\",phase="
      "\"compute\"} 0\n"
      "gradsync_worker_step_phase_seconds_total{mode=\"ring\",phase=\"idle\"}"
      " 0\n",
      RenderOnly(registry, "gradsync_worker_step_phase"));
  const std::string text = registry.Render();
  EXPECT_THAT(
      SampleValue(text, "gradsync_worker_sent_bytes_total{mode=\"ps\"}"),
      Optional(2000.0));
  EXPECT_THAT(
      SampleValue(text, "gradsync_worker_received_bytes_total{mode=\"ps\"}"),
      Optional(6000.0));
  EXPECT_THAT(
      SampleValue(text,
                  "gradsync_worker_step_seconds_bucket{mode=\"ps\",le=\"1\"}"),
      Optional(2.0));
  EXPECT_THAT(
      SampleValue(
          text, "gradsync_worker_step_seconds_bucket{mode=\"ps\",le=\"0.5\"}"),
      Optional(0.0));
  // sync_busy_s 0 (unknown) is not observed.
  EXPECT_THAT(text, Not(HasSubstr("gradsync_worker_sync_seconds_count")));
}

TEST(WorkerMetricsTest, DeviceUse_BusyWhileARankRuns) {
  MetricsRegistry registry;
  absl::StatusOr<std::unique_ptr<WorkerMetrics>> metrics =
      WorkerMetrics::Create(&registry, {"cpu:0", "cpu:1"});
  ASSERT_THAT(metrics, IsOk());
  const std::string busy0 =
      "gradsync_worker_device_busy_seconds_total{device=\"cpu:0\"}";
  const std::string ranks0 = "gradsync_worker_device_ranks{device=\"cpu:0\"}";
  EXPECT_THAT(SampleValue(registry.Render(), busy0), Optional(0.0));
  (*metrics)->RankStarted("cpu:0");
  absl::SleepFor(absl::Milliseconds(20));
  std::string text = registry.Render();
  EXPECT_THAT(SampleValue(text, ranks0), Optional(1.0));
  const std::optional<double> running = SampleValue(text, busy0);
  ASSERT_TRUE(running.has_value());
  EXPECT_GE(*running, 0.02);  // counts while the rank still runs
  (*metrics)->RankEnded("cpu:0");
  text = registry.Render();
  EXPECT_THAT(SampleValue(text, ranks0), Optional(0.0));
  EXPECT_GE(*SampleValue(text, busy0), *running);
  EXPECT_THAT(SampleValue(text,
                          "gradsync_worker_device_busy_seconds_total{device="
                          "\"cpu:1\"}"),
              Optional(0.0));
  // A stray end never makes the count negative.
  (*metrics)->RankEnded("cpu:1");
  EXPECT_THAT(SampleValue(registry.Render(),
                          "gradsync_worker_device_ranks{device=\"cpu:1\"}"),
              Optional(0.0));
}

// Two ranks of a TCP ring over an in-memory store, each wrapped.
TEST(TimedCommunicatorTest, ReportsEachSuccessfulAllReduceOnce) {
  MemoryStore store;
  absl::Mutex mu;
  std::vector<absl::Duration> seen;
  auto observe = [&](absl::Duration d) {
    absl::MutexLock lock(&mu);
    seen.push_back(d);
  };
  std::vector<std::unique_ptr<Communicator>> comms(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      TcpOptions options;
      options.timeout = absl::Seconds(10);
      absl::StatusOr<std::unique_ptr<Communicator>> comm =
          CreateTcpCommunicator(&store, rank, 2, options);
      ASSERT_THAT(comm, IsOk());
      comms[rank] =
          std::make_unique<TimedCommunicator>(*std::move(comm), observe);
    });
  }
  for (std::thread& t : threads) t.join();
  threads.clear();
  ASSERT_NE(comms[0], nullptr);
  ASSERT_NE(comms[1], nullptr);
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      std::vector<float> values(1000, static_cast<float>(rank + 1));
      std::unique_ptr<Work> work = comms[rank]->AllReduceAsync(
          values.data(), values.data(), values.size(), DataType::kFloat32,
          ReduceOp::kSum);
      ASSERT_THAT(work->Wait(absl::Now() + absl::Seconds(10)), IsOk());
      EXPECT_TRUE(work->Done());  // seen again: not reported twice
      EXPECT_EQ(values[999], 3.0f);
      ASSERT_THAT(comms[rank]->Barrier(), IsOk());  // not timed
    });
  }
  for (std::thread& t : threads) t.join();
  absl::MutexLock lock(&mu);
  ASSERT_EQ(seen.size(), 2u);
  for (absl::Duration d : seen) EXPECT_GE(d, absl::ZeroDuration());
}

JobSpec SmallMlpSpec() {
  JobSpec spec;
  spec.mutable_model()->set_kind("mlp");
  for (int64_t w : {16, 12, 4}) spec.mutable_model()->add_layer_sizes(w);
  spec.mutable_dataset()->set_name("synthetic");
  spec.mutable_optimizer()->set_name("sgd");
  spec.mutable_optimizer()->set_learning_rate(0.05);
  spec.set_num_workers(2);
  spec.set_batch_size(32);
  spec.set_steps(4);
  spec.set_seed(3);
  spec.set_bucket_bytes(256);
  return spec;
}

TEST(WorkerMetricsTest, JobRunner_FeedsStepsDevicesAndAllReduces) {
  FakeCoordinatorServer server;
  BlasThreadPolicy blas;
  MetricsRegistry registry;
  absl::StatusOr<std::unique_ptr<WorkerMetrics>> metrics =
      WorkerMetrics::Create(&registry, {"cpu:0", "cpu:1"});
  ASSERT_THAT(metrics, IsOk());
  JobRunnerConfig config;
  config.worker_id = "w-1";
  config.coordinator = server.address();
  config.rendezvous_timeout = absl::Seconds(20);
  config.collective_timeout = absl::Seconds(20);
  config.rpc_timeout = absl::Seconds(5);
  config.blas = &blas;
  config.metrics = metrics->get();
  Assignment a;
  a.set_job_id("job-m");
  a.set_generation(1);
  *a.mutable_spec() = SmallMlpSpec();
  a.set_world_size(2);
  for (int r : {0, 1}) {
    a.add_ranks(r);
    Device* d = a.add_devices();
    d->set_kind("cpu");
    d->set_index(r);
  }
  absl::StatusOr<std::unique_ptr<JobRunner>> runner =
      JobRunner::Start(a, config, server.NewClient());
  ASSERT_THAT(runner, IsOk());
  ASSERT_TRUE(server.fake().WaitFor([&] { return (*runner)->Done(); }));
  (*runner)->Join();
  ASSERT_EQ(server.fake().Reports("job-m", RANK_STATE_SUCCEEDED).size(), 2u);

  const std::string text = registry.Render();
  EXPECT_THAT(SampleValue(text, "gradsync_worker_steps_total{mode=\"ring\"}"),
              Optional(8.0));  // 4 steps x 2 ranks
  EXPECT_THAT(
      SampleValue(text, "gradsync_worker_step_seconds_count{mode=\"ring\"}"),
      Optional(8.0));
  const std::optional<double> allreduces =
      SampleValue(text, "gradsync_worker_allreduce_seconds_count");
  ASSERT_TRUE(allreduces.has_value());
  EXPECT_GE(*allreduces, 8.0);  // at least one bucket per rank and step
  for (const char* device : {"cpu:0", "cpu:1"}) {
    const std::string labels = absl::StrCat("{device=\"", device, "\"}");
    EXPECT_THAT(SampleValue(text, "gradsync_worker_device_ranks" + labels),
                Optional(0.0));
    const std::optional<double> busy =
        SampleValue(text, "gradsync_worker_device_busy_seconds_total" + labels);
    ASSERT_TRUE(busy.has_value());
    EXPECT_GT(*busy, 0.0);
  }
}

TEST(WorkerMetricsTest, Daemon_ServesMetricsOverHttp) {
  FakeCoordinatorServer server;
  WorkerDaemonConfig config;
  config.coordinator = server.address();
  config.devices = "cpu:2";
  config.host = "node-m";
  config.metrics_listen = "127.0.0.1:0";
  std::string address;
  std::string scraped;
  WorkerDaemonHooks hooks;
  hooks.connect_coordinator = [&](const std::string&) {
    return server.NewClient();
  };
  hooks.metrics_serving = [&](const std::string& a) { address = a; };
  hooks.wait_for_stop = [&] {
    absl::StatusOr<std::string> text = ScrapeMetrics(address);
    EXPECT_THAT(text, IsOk());
    if (text.ok()) scraped = *text;
    return std::string("the test's stop");
  };
  hooks.log = [](absl::string_view) {};
  EXPECT_EQ(RunWorkerDaemon(config, hooks), 0);
  ASSERT_FALSE(address.empty());
  EXPECT_THAT(
      SampleValue(scraped, "gradsync_worker_device_ranks{device=\"cpu:1\"}"),
      Optional(0.0));
  EXPECT_THAT(scraped,
              HasSubstr("gradsync_build_info{daemon=\"gradsync-worker\""));
  EXPECT_THAT(scraped, HasSubstr("# TYPE gradsync_worker_allreduce_seconds "
                                 "histogram"));
  // Stopped with the daemon.
  EXPECT_FALSE(ScrapeMetrics(address).ok());
  const std::optional<std::string> promtool = FindPromtool();
  if (promtool) {
    const absl::Status verdict = PromtoolCheck(*promtool, scraped);
    EXPECT_TRUE(verdict.ok()) << verdict;
  }
}

TEST(WorkerMetricsTest, MetricsListenFlag_Parses) {
  const char* argv[] = {"gradsync-worker", "--metrics-listen", "0.0.0.0:9402"};
  absl::StatusOr<WorkerDaemonConfig> config =
      ParseWorkerDaemonFlags(3, const_cast<char**>(argv));
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->metrics_listen, "0.0.0.0:9402");
}

}  // namespace
}  // namespace gradsync
