// The daemons' Prometheus series: the coordinator's, exactly, from a job
// driven through its logic with a fake clock (coordinator_metrics.h); then
// the coordinator's and the parameter server's /metrics endpoints over a
// real socket (--metrics-listen), checked by promtool when it is installed.
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "observability/prometheus.h"
#include "server/coordinator/coordinator_server.h"
#include "server/ps/daemon/ps_server.h"
#include "tests/coordinator/coordinator_test_util.h"
#include "tests/ps/ps_test_util.h"
#include "tests/util/metrics_scrape.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

std::string Render(const CoordinatorService& service) {
  std::vector<MetricFamily> families;
  service.CollectMetrics(&families);
  return RenderMetrics(families);
}

StepMetrics Timed(int rank, int64_t step, SyncMode mode, double loss,
                  double compute, double comm, double idle, double busbw) {
  StepMetrics m;
  m.set_rank(rank);
  m.set_step(step);
  m.set_mode(mode);
  m.set_loss(loss);
  m.set_samples(32);
  m.set_compute_s(compute);
  m.set_comm_s(comm);
  m.set_idle_s(idle);
  m.set_step_s(compute + comm + idle);
  m.set_busbw_gbps(busbw);
  return m;
}

TEST_F(CoordinatorTest, CollectMetrics_RunningJob_ExactText) {
  const std::string w1 = Register("host-a", 2);
  RegisterPs("10.0.0.9:29600");
  absl::StatusOr<std::string> job = Submit(ValidSpec(2));
  ASSERT_THAT(job, IsOk());
  ReportAll(*job, RANK_STATE_READY);
  // Rank 0: a ring step, then a PS step; rank 1 only the first.
  ASSERT_THAT(
      ReportSteps(
          w1, *job,
          {Timed(0, 0, SYNC_MODE_RING, 1.5, 0.25, 0.125, 0.125, 2),
           Timed(1, 0, SYNC_MODE_RING, 1.5, 0.25, 0.125, 0.125, 2),
           Timed(0, 1, SYNC_MODE_PS, 0.75, 0.375, 0.0625, 0.0625, 0.5)}),
      IsOk());
  clock_.Advance(absl::Milliseconds(1500));

  const std::string expected =
      "# HELP gradsync_coordinator_jobs Jobs the coordinator keeps (ended "
      "ones until retired), by state.\n"
      "# TYPE gradsync_coordinator_jobs gauge\n"
      "gradsync_coordinator_jobs{state=\"pending\"} 0\n"
      "gradsync_coordinator_jobs{state=\"rendezvous\"} 0\n"
      "gradsync_coordinator_jobs{state=\"running\"} 1\n"
      "gradsync_coordinator_jobs{state=\"succeeded\"} 0\n"
      "gradsync_coordinator_jobs{state=\"failed\"} 0\n"
      "gradsync_coordinator_jobs{state=\"cancelled\"} 0\n"
      "# HELP gradsync_coordinator_workers Registered worker daemons.\n"
      "# TYPE gradsync_coordinator_workers gauge\n"
      "gradsync_coordinator_workers{state=\"live\"} 1\n"
      "gradsync_coordinator_workers{state=\"lost\"} 0\n"
      "# HELP gradsync_coordinator_parameter_servers Registered parameter "
      "servers.\n"
      "# TYPE gradsync_coordinator_parameter_servers gauge\n"
      "gradsync_coordinator_parameter_servers{state=\"live\"} 1\n"
      "gradsync_coordinator_parameter_servers{state=\"lost\"} 0\n"
      "# HELP gradsync_coordinator_heartbeat_age_seconds Seconds since each "
      "live daemon's last heartbeat (lost at the lease).\n"
      "# TYPE gradsync_coordinator_heartbeat_age_seconds gauge\n"
      "gradsync_coordinator_heartbeat_age_seconds{daemon=\"w-1\",kind="
      "\"worker\",host=\"host-a\"} 1.5\n"
      "gradsync_coordinator_heartbeat_age_seconds{daemon=\"ps-1\",kind=\"ps\","
      "host=\"ps-host\"} 1.5\n"
      "# HELP gradsync_job_info 1 for each running job: its current sync "
      "mode and model.\n"
      "# TYPE gradsync_job_info gauge\n"
      "gradsync_job_info{job=\"job-1\",mode=\"ps\",model=\"mlp\"} 1\n"
      "# HELP gradsync_job_step The lowest step every rank of the job "
      "reported.\n"
      "# TYPE gradsync_job_step gauge\n"
      "gradsync_job_step{job=\"job-1\"} 0\n"
      "# HELP gradsync_job_loss Rank 0's latest loss.\n"
      "# TYPE gradsync_job_loss gauge\n"
      "gradsync_job_loss{job=\"job-1\"} 0.75\n"
      "# HELP gradsync_job_samples_per_second Training samples per second "
      "over the job's last steps, all ranks.\n"
      "# TYPE gradsync_job_samples_per_second gauge\n"
      "gradsync_job_samples_per_second{job=\"job-1\"} 128\n"
      "# HELP gradsync_job_step_seconds Rank 0's mean step time over the "
      "last steps.\n"
      "# TYPE gradsync_job_step_seconds gauge\n"
      "gradsync_job_step_seconds{job=\"job-1\"} 0.5\n"
      "# HELP gradsync_job_step_phase_seconds Rank 0's mean step time by "
      "phase: compute, exposed communication (not hidden behind compute) "
      "and idle.\n"
      "# TYPE gradsync_job_step_phase_seconds gauge\n"
      "gradsync_job_step_phase_seconds{job=\"job-1\",phase=\"compute\"} "
      "0.3125\n"
      "gradsync_job_step_phase_seconds{job=\"job-1\",phase=\"communication\"}"
      " 0.09375\n"
      "gradsync_job_step_phase_seconds{job=\"job-1\",phase=\"idle\"} "
      "0.09375\n"
      "# HELP gradsync_job_busbw_bytes_per_second Bus bandwidth of the "
      "gradient sync (nccl-tests' busbw) of the job's latest step in each "
      "mode.\n"
      "# TYPE gradsync_job_busbw_bytes_per_second gauge\n"
      "gradsync_job_busbw_bytes_per_second{job=\"job-1\",mode=\"ps\"} "
      "500000000\n"
      "gradsync_job_busbw_bytes_per_second{job=\"job-1\",mode=\"ring\"} "
      "2000000000\n";
  EXPECT_EQ(expected, Render(*service_));
}

TEST_F(CoordinatorTest, CollectMetrics_EndedJob_CountedButNoJobSeries) {
  Register("host-a", 1);
  absl::StatusOr<std::string> job = Submit(ValidSpec(1));
  ASSERT_THAT(job, IsOk());
  ReportAll(*job, RANK_STATE_READY);
  ReportAll(*job, RANK_STATE_SUCCEEDED);
  const std::string text = Render(*service_);
  EXPECT_THAT(
      SampleValue(text, "gradsync_coordinator_jobs{state=\"succeeded\"}"),
      Optional(1.0));
  EXPECT_THAT(SampleValue(text, "gradsync_coordinator_jobs{state=\"running\"}"),
              Optional(0.0));
  EXPECT_EQ(std::nullopt,
            SampleValue(text, "gradsync_job_step{job=\"job-1\"}"));
}

TEST(CoordinatorMetricsEndpointTest, ServesSeriesOverHttp) {
  CoordinatorServerOptions options;
  options.metrics_listen = "127.0.0.1:0";
  CoordinatorConfig config;
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server =
      CoordinatorServer::Start("127.0.0.1:0", std::move(config), options);
  ASSERT_THAT(server, IsOk());
  ASSERT_FALSE((*server)->metrics_address().empty());
  RegisterWorkerRequest worker;
  worker.set_host("host-a");
  worker.set_address("127.0.0.1");
  worker.set_wire_version(kWireVersion);
  Device* device = worker.add_devices();
  device->set_kind("cpu");
  device->set_index(0);
  ASSERT_THAT((*server)->service()->RegisterWorker(worker), IsOk());

  absl::StatusOr<std::string> text =
      ScrapeMetrics((*server)->metrics_address());
  ASSERT_THAT(text, IsOk());
  EXPECT_THAT(
      SampleValue(*text, "gradsync_coordinator_workers{state=\"live\"}"),
      Optional(1.0));
  EXPECT_THAT(*text,
              HasSubstr("gradsync_build_info{daemon=\"gradsync-coordinator\""));
  EXPECT_THAT(*text,
              HasSubstr("gradsync_coordinator_heartbeat_age_seconds{"
                        "daemon=\"w-1\",kind=\"worker\",host=\"host-a\"}"));
  (*server)->Shutdown();
  EXPECT_FALSE(ScrapeMetrics((*server)->metrics_address()).ok());
}

TEST(CoordinatorMetricsEndpointTest, NoListenAddress_ServesNone) {
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server =
      CoordinatorServer::Start("127.0.0.1:0", CoordinatorConfig());
  ASSERT_THAT(server, IsOk());
  EXPECT_EQ("", (*server)->metrics_address());
  // The build info is there for an in-process reader all the same.
  EXPECT_THAT((*server)->metrics().Render(),
              HasSubstr("gradsync_build_info{daemon=\"gradsync-coordinator\""));
}

TEST(PsMetricsEndpointTest, ShardCountersOverHttp) {
  PsServerOptions options;
  options.metrics_listen = "127.0.0.1:0";
  options.compute_threads = 1;
  absl::StatusOr<std::unique_ptr<PsServer>> server =
      PsServer::Start("127.0.0.1:0", options);
  ASSERT_THAT(server, IsOk());
  ShardSpec spec;
  spec.config = ShardConfig(/*num_workers=*/1, 0, 8);
  spec.total_elements = 8;
  ASSERT_THAT((*server)->service()->CreateShard(spec), IsOk());
  absl::StatusOr<std::shared_ptr<PsShard>> shard =
      (*server)->service()->FindShard("job", 0);
  ASSERT_THAT(shard, IsOk());
  const std::vector<float> grads(8, 1.0f);
  ASSERT_THAT(PushGradient(**shard, 0, 0, grads), IsOk());
  ASSERT_THAT(PullParams(**shard, 0, 1), IsOk());
  const PsShardStats stats = (*shard)->Stats();

  absl::StatusOr<std::string> text =
      ScrapeMetrics((*server)->metrics_address());
  ASSERT_THAT(text, IsOk());
  const std::string labels = "{job=\"job\",shard=\"0\"}";
  EXPECT_THAT(SampleValue(*text, "gradsync_ps_shards"), Optional(1.0));
  EXPECT_THAT(SampleValue(*text, "gradsync_ps_received_bytes_total" + labels),
              Optional(32.0));
  EXPECT_THAT(SampleValue(*text, "gradsync_ps_sent_bytes_total" + labels),
              Optional(static_cast<double>(stats.bytes_out)));
  EXPECT_THAT(SampleValue(*text, "gradsync_ps_pushes_total" + labels),
              Optional(1.0));
  EXPECT_THAT(SampleValue(*text, "gradsync_ps_updates_total" + labels),
              Optional(1.0));
  EXPECT_THAT(SampleValue(*text, "gradsync_ps_queue_depth" + labels),
              Optional(0.0));
  EXPECT_THAT(SampleValue(*text, "gradsync_ps_shard_version" + labels),
              Optional(1.0));
  EXPECT_THAT(
      SampleValue(*text, "gradsync_ps_optimizer_seconds_total" + labels),
      Optional(absl::ToDoubleSeconds(stats.apply_time)));
  EXPECT_THAT(*text, HasSubstr("gradsync_build_info{daemon=\"gradsync-ps\""));

  // A released shard's series go with it.
  ASSERT_THAT((*server)->service()->Release("job", 0), IsOk());
  text = ScrapeMetrics((*server)->metrics_address());
  ASSERT_THAT(text, IsOk());
  EXPECT_THAT(SampleValue(*text, "gradsync_ps_shards"), Optional(0.0));
  EXPECT_EQ(std::nullopt,
            SampleValue(*text, "gradsync_ps_pushes_total" + labels));
}

// promtool check metrics on what both daemons serve with live data: a
// registered worker and parameter server, and a shard that took a step.
TEST(DaemonMetricsPromtoolTest, CoordinatorAndPsText_PassPromtool) {
  const std::optional<std::string> promtool = FindPromtool();
  if (!promtool) {
    if (ToolsRequired()) {
      FAIL() << "promtool not found, and GRADSYNC_REQUIRE_TOOLS=1 "
                "(scripts/install_deps.sh extracts it to "
                "/usr/local/bin/promtool)";
    }
    GTEST_SKIP() << "promtool not found (Debian package prometheus, or set "
                    "$PROMTOOL); the text format is checked exactly by the "
                    "other tests instead";
  }
  CoordinatorServerOptions coordinator_options;
  coordinator_options.metrics_listen = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> coordinator =
      CoordinatorServer::Start("127.0.0.1:0", CoordinatorConfig(),
                               coordinator_options);
  ASSERT_THAT(coordinator, IsOk());
  RegisterParameterServerRequest ps_request;
  ps_request.set_host("ps-host");
  ps_request.set_address("127.0.0.1:29600");
  ps_request.set_wire_version(kWireVersion);
  ASSERT_THAT((*coordinator)->service()->RegisterParameterServer(ps_request),
              IsOk());
  PsServerOptions ps_options;
  ps_options.metrics_listen = "127.0.0.1:0";
  ps_options.compute_threads = 1;
  absl::StatusOr<std::unique_ptr<PsServer>> ps =
      PsServer::Start("127.0.0.1:0", ps_options);
  ASSERT_THAT(ps, IsOk());
  ShardSpec spec;
  spec.config = ShardConfig(/*num_workers=*/1, 0, 8);
  spec.total_elements = 8;
  ASSERT_THAT((*ps)->service()->CreateShard(spec), IsOk());
  for (const std::string& address :
       {(*coordinator)->metrics_address(), (*ps)->metrics_address()}) {
    absl::StatusOr<std::string> text = ScrapeMetrics(address);
    ASSERT_THAT(text, IsOk());
    const absl::Status verdict = PromtoolCheck(*promtool, *text);
    EXPECT_TRUE(verdict.ok()) << verdict << "\n" << *text;
  }
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
