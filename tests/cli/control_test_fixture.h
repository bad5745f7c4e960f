// A Coordinator gRPC service with canned job answers and a fixture that
// runs the control commands against it in this process, with their output
// captured.
#ifndef GRADSYNC_TESTS_CLI_CONTROL_TEST_FIXTURE_H_
#define GRADSYNC_TESTS_CLI_CONTROL_TEST_FIXTURE_H_

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "cli/control/command_env.h"
#include "gtest/gtest.h"
#include "proto/coordinator.grpc.pb.h"

namespace gradsync {
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

// Canned answers to the users' RPCs, for the control commands' output:
// job "j-1" succeeds in 3 steps on 2 ranks, "j-fail" fails; every other id
// is unknown. Not a coordinator (the worker and PS RPCs answer
// UNIMPLEMENTED): tests that need one use tests/util/fake_coordinator.h.
class CannedJobService final : public Coordinator::Service {
 public:
  grpc::Status SubmitJob(grpc::ServerContext*, const SubmitJobRequest* request,
                         SubmitJobResponse* response) override {
    absl::MutexLock lock(&mu_);
    submitted_.push_back(request->spec());
    if (request->spec().num_workers() > 8) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "job spec field numWorkers is too many");
    }
    response->set_job_id("j-1");
    return grpc::Status::OK;
  }

  grpc::Status GetJob(grpc::ServerContext*, const GetJobRequest* request,
                      JobStatus* response) override {
    if (request->job_id() == "j-ps") {
      *response = PsJob();
      return grpc::Status::OK;
    }
    if (request->job_id() == "j-fail" || request->job_id() == "j-ckpt") {
      // j-ckpt failed after the checkpoint of step 20; j-fail before any.
      *response = Job(request->job_id(), JOB_STATE_FAILED);
      response->mutable_spec()->mutable_checkpoint()->set_directory("/ck");
      if (request->job_id() == "j-ckpt") {
        response->set_last_checkpoint("/ck/step-20.ckpt");
        response->set_last_checkpoint_steps(20);
      }
      return grpc::Status::OK;
    }
    if (request->job_id() == "j-waited") {
      // A restart of j-ckpt, cancelled before it ran a step.
      *response = Job("j-waited", JOB_STATE_CANCELLED);
      response->mutable_spec()->mutable_checkpoint()->set_directory("/ck");
      response->mutable_spec()->mutable_checkpoint()->set_resume_from(
          "/ck/step-20.ckpt");
      response->set_restart_of("j-ckpt");
      return grpc::Status::OK;
    }
    if (request->job_id() == "j-run") {
      *response = Job("j-run", JOB_STATE_RUNNING);
      return grpc::Status::OK;
    }
    if (request->job_id() != "j-1") return NotFound(request->job_id());
    *response = Job("j-1", JOB_STATE_SUCCEEDED);
    response->mutable_spec()->mutable_checkpoint()->set_directory("/ck");
    response->set_last_checkpoint("/ck/step-3.ckpt");
    response->set_last_checkpoint_steps(3);
    return grpc::Status::OK;
  }

  // j-1 runs (in ring mode); j-fail ended; others are unknown.
  grpc::Status SwitchJob(grpc::ServerContext*, const SwitchJobRequest* request,
                         SwitchJobResponse* response) override {
    absl::MutexLock lock(&mu_);
    switches_.push_back(request->mode());
    if (request->job_id() == "j-fail") {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "job j-fail already ended (FAILED)");
    }
    if (request->job_id() != "j-1") return NotFound(request->job_id());
    response->set_epoch(static_cast<int64_t>(switches_.size()));
    *response->mutable_status() = Job("j-1", JOB_STATE_RUNNING);
    response->mutable_status()->set_mode(SYNC_MODE_RING);
    response->mutable_status()->set_switch_requests(response->epoch());
    return grpc::Status::OK;
  }

  grpc::Status ListJobs(grpc::ServerContext*, const ListJobsRequest*,
                        ListJobsResponse* response) override {
    *response->add_jobs() = Job("j-1", JOB_STATE_SUCCEEDED);
    *response->add_jobs() = Job("j-fail", JOB_STATE_FAILED);
    return grpc::Status::OK;
  }

  grpc::Status CancelJob(grpc::ServerContext*, const CancelJobRequest* request,
                         JobStatus* response) override {
    if (request->job_id() == "j-fail") {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "job j-fail already ended (FAILED)");
    }
    if (request->job_id() != "j-1") return NotFound(request->job_id());
    *response = Job("j-1", JOB_STATE_CANCELLED);
    return grpc::Status::OK;
  }

  grpc::Status WatchJob(grpc::ServerContext*, const WatchJobRequest* request,
                        grpc::ServerWriter<JobEvent>* writer) override {
    // j-restarted fails and is restarted as j-1 (JobSpec.max_restarts).
    const bool restarted = request->job_id() == "j-restarted";
    const bool fail = request->job_id() == "j-fail" || restarted;
    if (!fail && request->job_id() != "j-1") {
      return NotFound(request->job_id());
    }
    JobEvent event;
    *event.mutable_status() = Job(request->job_id(), JOB_STATE_RUNNING);
    writer->Write(event);
    for (int64_t step = 0; step < 3; ++step) {
      event.clear_steps();
      *event.add_steps() = Metric(0, step);
      *event.add_steps() = Metric(1, step);
      writer->Write(event);
    }
    event.clear_steps();
    *event.mutable_status() =
        Job(request->job_id(), fail ? JOB_STATE_FAILED : JOB_STATE_SUCCEEDED);
    if (restarted) event.mutable_status()->set_restarted_as("j-1");
    writer->Write(event);
    return grpc::Status::OK;
  }

  grpc::Status GetMetrics(grpc::ServerContext*,
                          const GetMetricsRequest* request,
                          GetMetricsResponse* response) override {
    if (request->job_id() == "j-ps") {
      *response->add_metrics() = Metric(0, 0);
      for (int k = 0; k < 2; ++k) {
        ps::ShardStats* shard = response->add_shards();
        shard->set_job_id("j-ps");
        shard->set_shard(k);
        shard->set_end(50);
        shard->set_pushes(6);
        shard->set_bytes_in(1 << 20);
      }
      return grpc::Status::OK;
    }
    if (request->job_id() != "j-1") return NotFound(request->job_id());
    *response->add_metrics() = Metric(1, 1);
    *response->add_metrics() = Metric(0, 0);
    *response->add_metrics() = Metric(0, 1);
    return grpc::Status::OK;
  }

  grpc::Status ListWorkers(grpc::ServerContext*, const ListWorkersRequest*,
                           ListWorkersResponse* response) override {
    for (int i = 1; i <= 2; ++i) {
      WorkerInfo* w = response->add_workers();
      w->set_worker_id(absl::StrCat("w-", i));
      w->set_host("node");
      w->set_address("127.0.0.1");
      Device* d = w->add_devices();
      d->set_kind("cpu");
      w->set_state(WORKER_STATE_IDLE);
      w->set_free_devices(1);
    }
    ParameterServerInfo* ps = response->add_parameter_servers();
    ps->set_ps_id("ps-1");
    ps->set_host("node");
    ps->set_address("127.0.0.1:7001");
    return grpc::Status::OK;
  }

  std::vector<JobSpec> submitted() {
    absl::MutexLock lock(&mu_);
    return submitted_;
  }
  std::vector<SyncMode> switches() {
    absl::MutexLock lock(&mu_);
    return switches_;
  }

 private:
  static grpc::Status NotFound(const std::string& id) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("no job '", id, "'"));
  }

  static JobStatus Job(const std::string& id, JobState state) {
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

  // A PS job that switched to ring at step 2 (request 1).
  static JobStatus PsJob() {
    JobStatus job = Job("j-ps", JOB_STATE_RUNNING);
    job.mutable_spec()->set_mode(SYNC_MODE_PS);
    job.mutable_spec()->mutable_ps()->set_shards(2);
    job.set_mode(SYNC_MODE_RING);
    job.add_ps_addresses("127.0.0.1:7001");
    job.add_ps_addresses("127.0.0.1:7002");
    job.set_switch_requests(1);
    SwitchRecord* record = job.add_switches();
    record->set_step(2);
    record->set_from_mode(SYNC_MODE_PS);
    record->set_to_mode(SYNC_MODE_RING);
    record->set_epoch(1);
    return job;
  }

  absl::Mutex mu_;
  std::vector<JobSpec> submitted_ ABSL_GUARDED_BY(mu_);
  std::vector<SyncMode> switches_ ABSL_GUARDED_BY(mu_);
};

class ControlCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&fake_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    address_ = absl::StrCat("127.0.0.1:", port);
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  using Command = int (*)(const std::vector<std::string>&, const CommandEnv&);

  // Runs `command` with --coordinator pointing at the fake.
  int Run(Command command, std::vector<std::string> args) {
    args.push_back("--coordinator");
    args.push_back(address_);
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

  CannedJobService fake_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::ostringstream out_;
  std::ostringstream err_;
};

}  // namespace test_support
}  // namespace control
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_CLI_CONTROL_TEST_FIXTURE_H_
