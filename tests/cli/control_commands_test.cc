// The control commands end to end against a small fake Coordinator gRPC
// service in this process (submit, watch, status, cancel, metrics,
// workers), and against a closed port (the unreachable-coordinator error).
#include <arpa/inet.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "cli/control/command_env.h"
#include "cli/control/coordinator_client.h"
#include "cli/control/job_commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/coordinator.grpc.pb.h"

namespace gradsync {
namespace control {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

StepMetrics Metric(int rank, int64_t step) {
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
  return m;
}

// Canned answers: job "j-1" succeeds in 3 steps on 2 ranks, "j-fail"
// fails; every other id is unknown.
class FakeCoordinator final : public Coordinator::Service {
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
    if (request->job_id() != "j-1") return NotFound(request->job_id());
    *response = Job("j-1", JOB_STATE_SUCCEEDED);
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
    const bool fail = request->job_id() == "j-fail";
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
    writer->Write(event);
    return grpc::Status::OK;
  }

  grpc::Status GetMetrics(grpc::ServerContext*,
                          const GetMetricsRequest* request,
                          GetMetricsResponse* response) override {
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
    return grpc::Status::OK;
  }

  std::vector<JobSpec> submitted() {
    absl::MutexLock lock(&mu_);
    return submitted_;
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

  absl::Mutex mu_;
  std::vector<JobSpec> submitted_ ABSL_GUARDED_BY(mu_);
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

  FakeCoordinator fake_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(ControlCommandsTest, Submit_SendsTheSpecAndPrintsTheJobId) {
  EXPECT_EQ(Run(RunSubmit, {"--workers", "2", "--steps", "10", "--mode", "ps"}),
            kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(), StartsWith("submitted job j-1 (mlp-fashion-mnist: "
                                     "2 workers, ps)\n"));
  ASSERT_EQ(fake_.submitted().size(), 1u);
  const JobSpec spec = fake_.submitted()[0];
  EXPECT_EQ(spec.num_workers(), 2);
  EXPECT_EQ(spec.steps(), 10);
  EXPECT_EQ(spec.mode(), SYNC_MODE_PS);
  EXPECT_EQ(spec.model().layer_sizes_size(), 4);
}

TEST_F(ControlCommandsTest, Submit_Json_PrintsOnlyTheId) {
  EXPECT_EQ(Run(RunSubmit, {"--json"}), kExitOk);
  EXPECT_EQ(out_.str(), "{\"jobId\":\"j-1\"}\n");
}

TEST_F(ControlCommandsTest, Submit_CoordinatorFromTheEnvironment) {
  CommandEnv env;
  env.coordinator_env = address_;
  EXPECT_EQ(RunWithEnv(RunSubmit, {"--json"}, env), kExitOk) << err_.str();
  EXPECT_EQ(fake_.submitted().size(), 1u);
}

TEST_F(ControlCommandsTest, Submit_Follow_ShowsProgressAndTheBreakdown) {
  EXPECT_EQ(Run(RunSubmit, {"--follow", "--every", "1"}), kExitOk)
      << err_.str();
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("job j-1: RUNNING on 2 ranks\n"));
  EXPECT_THAT(out, HasSubstr("step 1/3  loss 2.0000  2560 samples/s  comm "
                             "20.0%  RUNNING\n"));
  EXPECT_THAT(out, HasSubstr("step 3/3  loss 0.6667"));
  EXPECT_THAT(out, HasSubstr("job j-1 SUCCEEDED after 3 steps in 1.0 s: test "
                             "accuracy 0.8125"));
  EXPECT_THAT(out, HasSubstr("per-step breakdown (means):\nRANK  STEPS  "
                             "COMPUTE_MS"));
  EXPECT_THAT(out, HasSubstr("\nall   6      30.00"));
}

TEST_F(ControlCommandsTest, Submit_RejectedSpec_ExitsTwoWithTheReason) {
  EXPECT_EQ(Run(RunSubmit, {"--workers", "9"}), kExitUsage);
  EXPECT_THAT(err_.str(),
              HasSubstr("gradsync submit: job spec field numWorkers"));
}

TEST_F(ControlCommandsTest, Submit_MalformedFile_ExitsTwoAndSendsNothing) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/bad_job_", getpid(), ".json");
  std::ofstream(path) << "{\"numWorkers\": }";
  EXPECT_EQ(Run(RunSubmit, {"--file", path}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr(path + ": not a valid job spec"));
  EXPECT_TRUE(fake_.submitted().empty());
  std::remove(path.c_str());
}

TEST_F(ControlCommandsTest, Submit_BadFlag_ExitsTwoWithAPointerToHelp) {
  EXPECT_EQ(Run(RunSubmit, {"--wrokers", "2"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("unknown flag '--wrokers'"));
  EXPECT_THAT(err_.str(), HasSubstr("gradsync submit --help"));
}

TEST_F(ControlCommandsTest, Help_ListsTheFlags) {
  EXPECT_EQ(Run(RunSubmit, {"--help"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("--synthetic-floats F"));
  EXPECT_THAT(out_.str(), HasSubstr("--file JOB.json"));
}

TEST_F(ControlCommandsTest, Watch_FailedJob_ExitsOneWithTheMessage) {
  EXPECT_EQ(Run(RunWatch, {"j-fail"}), kExitFailure);
  EXPECT_THAT(out_.str(),
              HasSubstr("job j-fail FAILED: rank 1 failed at step 2: "
                        "allreduce timed out\n"));
}

TEST_F(ControlCommandsTest, Watch_Json_EventLinesThenTheFinalLine) {
  EXPECT_EQ(Run(RunWatch, {"j-1", "--json"}), kExitOk);
  std::istringstream lines(out_.str());
  std::vector<std::string> all;
  for (std::string line; std::getline(lines, line);) all.push_back(line);
  ASSERT_EQ(all.size(), 6u);
  EXPECT_THAT(all[0], StartsWith("{\"status\":{\"jobId\":\"j-1\""));
  EXPECT_THAT(all[1], HasSubstr("\"steps\":[{\"rank\":0,\"step\":0,"));
  EXPECT_THAT(all[5], StartsWith("{\"final\":{\"jobId\":\"j-1\""));
  EXPECT_THAT(all[5], HasSubstr("\"breakdown\":[{\"rank\":\"0\",\"steps\":3,"));
}

TEST_F(ControlCommandsTest, Watch_UnknownJob_ExitsOne) {
  EXPECT_EQ(Run(RunWatch, {"j-404"}), kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("no job 'j-404'"));
}

TEST_F(ControlCommandsTest, Status_OneJob) {
  EXPECT_EQ(Run(RunStatus, {"j-1"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("state:     SUCCEEDED\n"));
  EXPECT_THAT(out_.str(), HasSubstr("accuracy:  0.8125"));
  EXPECT_THAT(out_.str(), HasSubstr("1     w-2     node  cpu:0\n"));
  EXPECT_EQ(Run(RunStatus, {"j-1", "--json"}), kExitOk);
  EXPECT_THAT(out_.str(), StartsWith("{\"jobId\":\"j-1\",\"spec\":{"));
  EXPECT_THAT(out_.str(), HasSubstr("\"state\":\"JOB_STATE_SUCCEEDED\""));
}

TEST_F(ControlCommandsTest, Status_AllJobs) {
  EXPECT_EQ(Run(RunStatus, {}), kExitOk);
  EXPECT_THAT(out_.str(), StartsWith("JOB     NAME    STATE"));
  EXPECT_THAT(out_.str(), HasSubstr("j-fail  fmnist  FAILED"));
  EXPECT_EQ(Run(RunStatus, {"--json"}), kExitOk);
  EXPECT_THAT(out_.str(), StartsWith("{\"jobs\":[{\"jobId\":\"j-1\""));
}

TEST_F(ControlCommandsTest, Status_UnknownJob_ExitsOne_JsonErrorOnStdout) {
  EXPECT_EQ(Run(RunStatus, {"j-404", "--json"}), kExitFailure);
  EXPECT_EQ(out_.str(),
            "{\"error\":{\"code\":\"NOT_FOUND\",\"message\":\"no job "
            "'j-404'\"}}\n");
  EXPECT_THAT(err_.str(), HasSubstr("gradsync status: no job 'j-404'"));
}

TEST_F(ControlCommandsTest, UsageError_WithJson_PrintsTheErrorAsJson) {
  EXPECT_EQ(Run(RunCancel, {"--json"}), kExitUsage);
  EXPECT_EQ(out_.str(),
            "{\"error\":{\"code\":\"INVALID_ARGUMENT\",\"message\":\"name "
            "the job\"}}\n");
}

TEST_F(ControlCommandsTest, Cancel) {
  EXPECT_EQ(Run(RunCancel, {"j-1"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("cancelled job j-1 (now CANCELLED"));
  EXPECT_EQ(Run(RunCancel, {"j-fail"}), kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("already ended"));
  EXPECT_EQ(Run(RunCancel, {}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("name the job"));
}

TEST_F(ControlCommandsTest, Metrics_CsvSortedAndJson) {
  EXPECT_EQ(Run(RunMetrics, {"j-1"}), kExitOk);
  std::istringstream lines(out_.str());
  std::string header, a, b, c;
  std::getline(lines, header);
  std::getline(lines, a);
  std::getline(lines, b);
  std::getline(lines, c);
  EXPECT_THAT(header, StartsWith("rank,step,loss,compute_s,comm_s"));
  EXPECT_THAT(a, StartsWith("0,0,2,"));
  EXPECT_THAT(b, StartsWith("0,1,1,"));
  EXPECT_THAT(c, StartsWith("1,1,1,"));
  EXPECT_EQ(Run(RunMetrics, {"j-1", "--format", "json"}), kExitOk);
  EXPECT_THAT(out_.str(),
              StartsWith("{\"jobId\":\"j-1\",\"metrics\":[{\"rank\":0,"));
  EXPECT_EQ(Run(RunMetrics, {"j-1", "--format", "xml"}), kExitUsage);
}

TEST_F(ControlCommandsTest, Workers_TableAndJson) {
  EXPECT_EQ(Run(RunWorkers, {}), kExitOk);
  EXPECT_THAT(out_.str(), StartsWith("ID   HOST  ADDRESS    DEVICES  STATE"));
  EXPECT_THAT(out_.str(), HasSubstr("w-2  node  127.0.0.1  cpu:0    IDLE"));
  EXPECT_EQ(Run(RunWorkers, {"--json"}), kExitOk);
  EXPECT_THAT(out_.str(),
              StartsWith("{\"workers\":[{\"workerId\":\"w-1\",\"host\":"));
}

// A port nothing listens on: bound, read, closed.
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(UnreachableCoordinatorTest, Client_FailsFastWithTheClearMessage) {
  const std::string address = absl::StrCat("127.0.0.1:", ClosedPort());
  ClientConfig config;
  config.address = address;
  config.rpc_timeout = absl::Seconds(30);
  CoordinatorClient client(config);
  const absl::Time start = absl::Now();
  absl::StatusOr<ListWorkersResponse> workers = client.ListWorkers();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  ASSERT_EQ(workers.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(workers.status().message()),
              StartsWith(absl::StrCat(
                  "cannot reach the coordinator at ", address,
                  ": is it running? start a local cluster with `gradsync "
                  "local up` or set --coordinator / GRADSYNC_COORDINATOR")));
  // Streams too.
  absl::Status watch =
      client.WatchJob("j-1", absl::InfiniteDuration(),
                      [](const JobEvent&) { return absl::OkStatus(); });
  EXPECT_EQ(watch.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(watch.message()),
              HasSubstr("cannot reach the coordinator"));
}

TEST(UnreachableCoordinatorTest, Commands_ExitOneWithTheMessage) {
  const std::string address = absl::StrCat("127.0.0.1:", ClosedPort());
  std::ostringstream out, err;
  CommandEnv env;
  env.out = &out;
  env.err = &err;
  env.coordinator_env = address;
  const absl::Time start = absl::Now();
  EXPECT_EQ(RunWorkers({"--json"}, env), kExitFailure);
  EXPECT_EQ(RunStatus({}, env), kExitFailure);
  EXPECT_EQ(RunSubmit({"--follow"}, env), kExitFailure);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_THAT(err.str(),
              HasSubstr(absl::StrCat("gradsync workers: cannot reach the "
                                     "coordinator at ",
                                     address, ": is it running?")));
  EXPECT_THAT(out.str(),
              StartsWith("{\"error\":{\"code\":\"UNAVAILABLE\",\"message\":"
                         "\"cannot reach the coordinator"));
  EXPECT_THAT(out.str(), Not(HasSubstr("submitted")));
}

TEST(ResolveCoordinatorAddressTest, FlagThenEnvThenDefault) {
  EXPECT_EQ(ResolveCoordinatorAddress("a:1", "b:2"), "a:1");
  EXPECT_EQ(ResolveCoordinatorAddress("", "b:2"), "b:2");
  EXPECT_EQ(ResolveCoordinatorAddress("", ""), "127.0.0.1:29400");
}

}  // namespace
}  // namespace control
}  // namespace gradsync
