// Canned jobs for the fake coordinator (tests/util/fake_coordinator.h) and a
// fixture that runs the control commands against it in this process, with
// their output captured.
#ifndef GRADSYNC_TESTS_CLI_CONTROL_TEST_FIXTURE_H_
#define GRADSYNC_TESTS_CLI_CONTROL_TEST_FIXTURE_H_

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/framework/command_env.h"
#include "gtest/gtest.h"
#include "proto/coordinator.grpc.pb.h"
#include "tests/util/fake_coordinator.h"

namespace gradsync {
namespace cli {
namespace control {
namespace test_support {

inline StepMetrics Metric(int rank, int64_t step) {
  StepMetrics m;
  m.set_rank(rank);
  m.set_step(step);
  m.set_loss(2.0 / (step + 1));
  m.set_compute_s(0.03);
  m.set_comm_s(0.01);
  m.set_idle_s(0.01);
  m.set_step_s(0.05);
  m.set_bytes_sent(4096);
  m.set_bytes_received(4096);
  m.set_samples(64);
  // 1 MB synchronised in 1 ms of busy time: algbw 1 GB/s, busbw 1 GB/s on
  // the 2-rank ring.
  m.set_sync_bytes(1000000);
  m.set_sync_busy_s(0.001);
  m.set_algbw_gbps(1.0);
  m.set_busbw_gbps(1.0);
  return m;
}

// A job "fmnist" on 2 ranks in `state`.
inline JobStatus Job(const std::string& id, JobState state) {
  JobStatus job;
  job.set_job_id(id);
  job.set_state(state);
  job.mutable_spec()->set_name("fmnist");
  job.mutable_spec()->set_num_workers(2);
  job.mutable_spec()->set_steps(3);
  job.set_step(state == JOB_STATE_RUNNING ? 0 : 2);
  job.set_start_time(100);
  job.set_end_time(state == JOB_STATE_RUNNING ? 0 : 101);
  if (state == JOB_STATE_SUCCEEDED) job.set_test_accuracy(0.8125);
  if (state == JOB_STATE_FAILED) {
    job.set_message("rank 1 failed at step 2: allreduce timed out");
  }
  for (int r = 0; r < 2; ++r) {
    RankPlacement* rank = job.add_ranks();
    rank->set_rank(r);
    rank->set_worker_id(absl::StrCat("w-", r + 1));
    rank->set_host("node");
    rank->mutable_device()->set_kind("cpu");
  }
  return job;
}

// What `watch` sees of a job that ends in `state`: RUNNING, three steps of
// both ranks (each with the status, as the coordinator sends them), then
// the end.
inline std::vector<JobEvent> Events(const std::string& id, JobState state) {
  std::vector<JobEvent> events;
  *events.emplace_back().mutable_status() = Job(id, JOB_STATE_RUNNING);
  for (int64_t step = 0; step < 3; ++step) {
    JobEvent& event = events.emplace_back();
    *event.mutable_status() = Job(id, JOB_STATE_RUNNING);
    *event.add_steps() = Metric(0, step);
    *event.add_steps() = Metric(1, step);
  }
  *events.emplace_back().mutable_status() = Job(id, state);
  return events;
}

// The control commands' jobs, in the fake coordinator: "j-1" succeeded in
// 3 steps on 2 ranks (checkpoint of step 3); "j-fail" failed before any
// checkpoint, "j-ckpt" after the one of step 20; "j-waited" is j-ckpt's
// restart, cancelled before a step; "j-run" runs; "j-ps" is a running PS
// job that switched to ring at step 2; "j-restarted" failed and was
// restarted as j-1 (JobSpec.max_restarts); "j-hosts" is j-1 with its two
// ranks on two hosts. Every other id is unknown.
// Submissions are answered "j-1", with more than 8 workers refused.
inline void AddCannedJobs(gradsync::testing::FakeCoordinator* fake) {
  JobStatus ok = Job("j-1", JOB_STATE_SUCCEEDED);
  ok.mutable_spec()->mutable_checkpoint()->set_directory("/ck");
  ok.set_last_checkpoint("/ck/step-3.ckpt");
  ok.set_last_checkpoint_steps(3);
  fake->AddJob(ok);
  for (const char* id : {"j-fail", "j-ckpt"}) {
    JobStatus failed = Job(id, JOB_STATE_FAILED);
    failed.mutable_spec()->mutable_checkpoint()->set_directory("/ck");
    if (failed.job_id() == "j-ckpt") {
      failed.set_last_checkpoint("/ck/step-20.ckpt");
      failed.set_last_checkpoint_steps(20);
    }
    fake->AddJob(failed);
  }
  JobStatus waited = Job("j-waited", JOB_STATE_CANCELLED);
  waited.mutable_spec()->mutable_checkpoint()->set_directory("/ck");
  waited.mutable_spec()->mutable_checkpoint()->set_resume_from(
      "/ck/step-20.ckpt");
  waited.set_restart_of("j-ckpt");
  fake->AddJob(waited);
  fake->AddJob(Job("j-run", JOB_STATE_RUNNING));

  JobStatus ps = Job("j-ps", JOB_STATE_RUNNING);
  ps.mutable_spec()->set_mode(SYNC_MODE_PS);
  ps.mutable_spec()->mutable_ps()->set_shards(2);
  ps.set_mode(SYNC_MODE_RING);
  ps.add_ps_addresses("127.0.0.1:7001");
  ps.add_ps_addresses("127.0.0.1:7002");
  ps.set_switch_requests(1);
  SwitchRecord* record = ps.add_switches();
  record->set_step(2);
  record->set_from_mode(SYNC_MODE_PS);
  record->set_to_mode(SYNC_MODE_RING);
  record->set_epoch(1);
  fake->AddJob(ps);

  // j-1 with its ranks on two hosts.
  JobStatus hosts = Job("j-hosts", JOB_STATE_SUCCEEDED);
  hosts.mutable_ranks(0)->set_host("a");
  hosts.mutable_ranks(1)->set_host("b");
  fake->AddJob(hosts);

  JobStatus restarted = Job("j-restarted", JOB_STATE_FAILED);
  restarted.set_restarted_as("j-1");
  fake->AddJob(restarted);

  fake->SetWatchEvents("j-1", Events("j-1", JOB_STATE_SUCCEEDED));
  fake->SetWatchEvents("j-fail", Events("j-fail", JOB_STATE_FAILED));
  std::vector<JobEvent> events = Events("j-restarted", JOB_STATE_FAILED);
  events.back().mutable_status()->set_restarted_as("j-1");
  fake->SetWatchEvents("j-restarted", events);

  GetMetricsResponse metrics;
  *metrics.add_metrics() = Metric(1, 1);
  *metrics.add_metrics() = Metric(0, 0);
  *metrics.add_metrics() = Metric(0, 1);
  fake->SetMetrics("j-1", metrics);
  fake->SetMetrics("j-hosts", metrics);
  GetMetricsResponse ps_metrics;
  *ps_metrics.add_metrics() = Metric(0, 0);
  for (int k = 0; k < 2; ++k) {
    ps::ShardStats* shard = ps_metrics.add_shards();
    shard->set_job_id("j-ps");
    shard->set_shard(k);
    shard->set_end(50);
    shard->set_pushes(6);
    shard->set_bytes_in(1 << 20);
  }
  fake->SetMetrics("j-ps", ps_metrics);

  ListWorkersResponse workers;
  for (int i = 1; i <= 2; ++i) {
    WorkerInfo* w = workers.add_workers();
    w->set_worker_id(absl::StrCat("w-", i));
    w->set_host("node");
    w->set_address("127.0.0.1");
    Device* d = w->add_devices();
    d->set_kind("cpu");
    w->set_state(WORKER_STATE_IDLE);
    w->set_free_devices(1);
  }
  ParameterServerInfo* server = workers.add_parameter_servers();
  server->set_ps_id("ps-1");
  server->set_host("node");
  server->set_address("127.0.0.1:7001");
  fake->SetWorkerList(workers);

  fake->AnswerSubmissions([](const JobSpec& spec, std::string* job_id) {
    if (spec.num_workers() > 8) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "job spec field numWorkers is too many");
    }
    *job_id = "j-1";
    return grpc::Status::OK;
  });
}

class ControlCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(server_.port(), 0);
    AddCannedJobs(&fake_);
  }

  using Command = int (*)(const std::vector<std::string>&, const CommandEnv&);

  // Runs `command` with --coordinator pointing at the fake.
  int Run(Command command, std::vector<std::string> args) {
    args.push_back("--coordinator");
    args.push_back(server_.address());
    return RunWithEnv(command, args, CommandEnv());
  }

  int RunWithEnv(Command command, const std::vector<std::string>& args,
                 CommandEnv env) {
    out_.str("");
    err_.str("");
    env.out = &out_;
    env.err = &err_;
    env.now = [] { return absl::FromUnixSeconds(102); };
    return command(args, env);
  }

  gradsync::testing::FakeCoordinatorServer server_;
  gradsync::testing::FakeCoordinator& fake_ = server_.fake();
  std::ostringstream out_;
  std::ostringstream err_;
};

}  // namespace test_support
}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_CLI_CONTROL_TEST_FIXTURE_H_
