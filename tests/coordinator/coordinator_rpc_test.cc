// The coordinator over real gRPC on 127.0.0.1:0: registration, submission,
// heartbeat delivery, watching a job to its end, status codes on the wire,
// and blocked calls that leave threads for the call that releases them.
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/wire_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/coordinator.grpc.pb.h"
#include "server/coordinator/coordinator_server.h"
#include "tests/coordinator/coordinator_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

constexpr absl::Duration kRpcTimeout = absl::Seconds(10);

class CoordinatorRpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CoordinatorConfig config;
    config.wait_slice = absl::Milliseconds(10);
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server =
        CoordinatorServer::Start("127.0.0.1:0", config);
    ASSERT_THAT(server, IsOk());
    server_ = *std::move(server);
    stub_ = Coordinator::NewStub(grpc::CreateChannel(
        server_->address(), grpc::InsecureChannelCredentials()));
  }

  // A context whose deadline keeps a broken test from hanging.
  static std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(absl::ToChronoTime(absl::Now() + kRpcTimeout));
    return context;
  }

  std::string Register(const std::string& host, int devices) {
    RegisterWorkerRequest request;
    request.set_host(host);
    request.set_address("127.0.0.1");
    request.set_wire_version(kWireVersion);
    for (int i = 0; i < devices; ++i) {
      request.add_devices()->set_kind("cpu");
      request.mutable_devices(i)->set_index(i);
    }
    RegisterWorkerResponse response;
    EXPECT_TRUE(
        stub_->RegisterWorker(Context().get(), request, &response).ok());
    credentials_.Remember(response.worker_id(), response.credential());
    return response.worker_id();
  }

  std::string Credential(const std::string& id) const {
    return credentials_.Credential(id);
  }
  StoreScope Scope(const std::string& worker_id, const std::string& job_id,
                   int64_t generation = 1) const {
    return credentials_.Scope(worker_id, job_id, generation);
  }

  std::string Submit(int num_workers) {
    SubmitJobRequest request;
    *request.mutable_spec() = ValidSpec(num_workers);
    SubmitJobResponse response;
    EXPECT_TRUE(stub_->SubmitJob(Context().get(), request, &response).ok());
    return response.job_id();
  }

  grpc::Status Report(const std::string& worker, const std::string& job,
                      int rank, RankState state) {
    ReportRankRequest request;
    request.set_worker_id(worker);
    request.set_credential(Credential(worker));
    request.set_job_id(job);
    request.set_rank(rank);
    request.set_state(state);
    ReportRankResponse response;
    return stub_->ReportRank(Context().get(), request, &response);
  }

  std::unique_ptr<CoordinatorServer> server_;
  std::unique_ptr<Coordinator::Stub> stub_;
  gradsync::testing::CredentialBook credentials_;
};

TEST_F(CoordinatorRpcTest, ParameterServer_SwitchJob_OverTheWire) {
  RegisterParameterServerRequest ps;
  ps.set_host("ps-host");
  ps.set_address("127.0.0.1:29600");
  ps.set_wire_version(kWireVersion);
  RegisterParameterServerResponse registered;
  ASSERT_TRUE(
      stub_->RegisterParameterServer(Context().get(), ps, &registered).ok());
  EXPECT_EQ(registered.ps_id(), "ps-1");
  EXPECT_GT(registered.heartbeat_ms(), 0);

  const std::string w1 = Register("host-a", 1);
  const std::string job = Submit(1);
  SwitchJobRequest request;
  request.set_job_id(job);
  request.set_mode(SYNC_MODE_PS);
  SwitchJobResponse switched;
  ASSERT_TRUE(stub_->SwitchJob(Context().get(), request, &switched).ok());
  EXPECT_EQ(switched.epoch(), 1);
  EXPECT_THAT(switched.status().ps_addresses(), ElementsAre("127.0.0.1:29600"));
  HeartbeatRequest beat;
  beat.set_worker_id(w1);
  beat.set_credential(Credential(w1));
  HeartbeatResponse news;
  ASSERT_TRUE(stub_->Heartbeat(Context().get(), beat, &news).ok());
  ASSERT_THAT(news.switches(), SizeIs(1));
  EXPECT_EQ(news.switches(0).epoch(), 1);

  request.set_mode(SYNC_MODE_UNSPECIFIED);
  EXPECT_EQ(stub_->SwitchJob(Context().get(), request, &switched).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  PsHeartbeatRequest ps_beat;
  ps_beat.set_ps_id(registered.ps_id());
  ps_beat.set_credential(registered.credential());
  ps_beat.add_shards()->set_job_id("job-404");
  PsHeartbeatResponse ps_news;
  ASSERT_TRUE(stub_->PsHeartbeat(Context().get(), ps_beat, &ps_news).ok());
  EXPECT_THAT(ps_news.release_job_ids(), ElementsAre("job-404"));
  ps_beat.set_ps_id("ps-9");
  EXPECT_EQ(stub_->PsHeartbeat(Context().get(), ps_beat, &ps_news).error_code(),
            grpc::StatusCode::NOT_FOUND);
  ListWorkersResponse list;
  ASSERT_TRUE(
      stub_->ListWorkers(Context().get(), ListWorkersRequest(), &list).ok());
  ASSERT_THAT(list.parameter_servers(), SizeIs(1));
  EXPECT_THAT(list.parameter_servers(0).job_ids(), ElementsAre(job));
}

TEST_F(CoordinatorRpcTest, SubmitJob_HeartbeatLongPoll_DeliversAssignment) {
  const std::string w1 = Register("host-a", 2);
  EXPECT_EQ(w1, "w-1");
  HeartbeatResponse news;
  grpc::Status status;
  std::thread poller([&] {
    HeartbeatRequest request;
    request.set_worker_id(w1);
    request.set_credential(Credential(w1));
    request.set_wait_ms(2000);
    status = stub_->Heartbeat(Context().get(), request, &news);
  });
  const std::string job = Submit(2);
  poller.join();
  ASSERT_TRUE(status.ok()) << status.error_message();
  if (news.assignments().empty()) {
    // The poll ended before the submission; the next one has it.
    HeartbeatRequest request;
    request.set_worker_id(w1);
    request.set_credential(Credential(w1));
    ASSERT_TRUE(stub_->Heartbeat(Context().get(), request, &news).ok());
  }
  ASSERT_THAT(news.assignments(), SizeIs(1));
  EXPECT_EQ(news.assignments(0).job_id(), job);
  EXPECT_THAT(news.assignments(0).ranks(), ElementsAre(0, 1));

  ListWorkersResponse workers;
  ASSERT_TRUE(
      stub_->ListWorkers(Context().get(), ListWorkersRequest(), &workers).ok());
  ASSERT_THAT(workers.workers(), SizeIs(1));
  EXPECT_EQ(workers.workers(0).state(), WORKER_STATE_BUSY);
}

TEST_F(CoordinatorRpcTest, WatchJob_StreamsStatesAndEndsWhenTheJobEnds) {
  const std::string w1 = Register("host-a", 1);
  const std::string job = Submit(1);
  auto context = Context();
  WatchJobRequest request;
  request.set_job_id(job);
  std::unique_ptr<grpc::ClientReader<JobEvent>> reader =
      stub_->WatchJob(context.get(), request);
  JobEvent event;
  ASSERT_TRUE(reader->Read(&event));
  EXPECT_EQ(event.status().state(), JOB_STATE_RENDEZVOUS);

  ASSERT_TRUE(Report(w1, job, 0, RANK_STATE_READY).ok());
  ReportMetricsRequest metrics;
  metrics.set_worker_id(w1);
  metrics.set_credential(Credential(w1));
  metrics.set_job_id(job);
  metrics.add_metrics()->set_step(0);
  ReportMetricsResponse metrics_response;
  ASSERT_TRUE(
      stub_->ReportMetrics(Context().get(), metrics, &metrics_response).ok());
  ASSERT_TRUE(Report(w1, job, 0, RANK_STATE_SUCCEEDED).ok());

  std::vector<JobState> states;
  int steps = 0;
  while (reader->Read(&event)) {
    states.push_back(event.status().state());
    steps += event.steps_size();
  }
  const grpc::Status status = reader->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  ASSERT_FALSE(states.empty());
  EXPECT_EQ(states.back(), JOB_STATE_SUCCEEDED);
  EXPECT_EQ(steps, 1);
}

TEST_F(CoordinatorRpcTest, Errors_CrossTheWireWithTheirCodes) {
  const std::string w1 = Register("host-a", 1);
  const std::string w2 = Register("host-b", 1);

  SubmitJobRequest bad;
  *bad.mutable_spec() = ValidSpec(1);
  bad.mutable_spec()->mutable_dataset()->set_name("mnist-but-not-fashion");
  SubmitJobResponse submitted;
  grpc::Status status = stub_->SubmitJob(Context().get(), bad, &submitted);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("dataset.name"));

  SubmitJobRequest too_big;
  *too_big.mutable_spec() = ValidSpec(3);
  status = stub_->SubmitJob(Context().get(), too_big, &submitted);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  GetJobRequest get;
  get.set_job_id("job-404");
  JobStatus job_status;
  EXPECT_EQ(stub_->GetJob(Context().get(), get, &job_status).error_code(),
            grpc::StatusCode::NOT_FOUND);

  const std::string job = Submit(1);  // on w-1
  StoreSetRequest set;
  *set.mutable_scope() = Scope(w2, job);
  set.set_key("k");
  StoreSetResponse set_response;
  EXPECT_EQ(stub_->StoreSet(Context().get(), set, &set_response).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);

  auto context = Context();
  WatchJobRequest watch;
  watch.set_job_id("job-404");
  auto reader = stub_->WatchJob(context.get(), watch);
  JobEvent event;
  EXPECT_FALSE(reader->Read(&event));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);

  // A daemon of another build is refused, with both versions named.
  RegisterWorkerRequest old_worker;
  old_worker.set_host("host-c");
  old_worker.set_address("127.0.0.1");
  old_worker.add_devices()->set_kind("cpu");
  RegisterWorkerResponse registered;
  status = stub_->RegisterWorker(Context().get(), old_worker, &registered);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(),
              HasSubstr(absl::StrCat("wire version 0 (a build from before "
                                     "versioned registration) but this "
                                     "coordinator speaks version ",
                                     kWireVersion)));
  RegisterParameterServerRequest newer_ps;
  newer_ps.set_host("host-c");
  newer_ps.set_address("127.0.0.1:29600");
  newer_ps.set_wire_version(kWireVersion + 1);
  RegisterParameterServerResponse ps_registered;
  EXPECT_EQ(
      stub_->RegisterParameterServer(Context().get(), newer_ps, &ps_registered)
          .error_code(),
      grpc::StatusCode::FAILED_PRECONDITION);
  ListWorkersResponse list;
  ASSERT_TRUE(
      stub_->ListWorkers(Context().get(), ListWorkersRequest(), &list).ok());
  EXPECT_EQ(list.workers_size(), 2);
  EXPECT_EQ(list.parameter_servers_size(), 0);
  (void)w1;
}

TEST_F(CoordinatorRpcTest, StoreGet_ManyBlockedGets_LeaveThreadsForTheSet) {
  const std::string w1 = Register("host-a", 2);
  const std::string job = Submit(2);
  constexpr int kWaiters = 24;
  std::vector<grpc::Status> statuses(kWaiters);
  std::vector<std::string> values(kWaiters);
  std::vector<std::thread> waiters;
  waiters.reserve(kWaiters);
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      StoreGetRequest get;
      *get.mutable_scope() = Scope(w1, job);
      get.set_key("nccl/unique_id/0");
      get.set_timeout_ms(absl::ToInt64Milliseconds(kRpcTimeout));
      StoreGetResponse response;
      statuses[i] = stub_->StoreGet(Context().get(), get, &response);
      values[i] = response.value();
    });
  }
  StoreSetRequest set;
  *set.mutable_scope() = Scope(w1, job);
  set.set_key("nccl/unique_id/0");
  set.set_value("the-id");
  StoreSetResponse set_response;
  ASSERT_TRUE(stub_->StoreSet(Context().get(), set, &set_response).ok());
  for (std::thread& t : waiters) t.join();
  for (int i = 0; i < kWaiters; ++i) {
    EXPECT_TRUE(statuses[i].ok()) << i << ": " << statuses[i].error_message();
    EXPECT_EQ(values[i], "the-id");
  }
}

// A coordinator with a users' token (--user-token-file) answers the user
// RPCs only for calls that present it ("authorization: Bearer <token>");
// the daemons' RPCs go by their own credentials and need none of it.
TEST(CoordinatorUserTokenTest, UserRpcs_NeedTheToken_DaemonRpcsDoNot) {
  const std::string token(64, 'f');
  CoordinatorConfig config;
  config.user_token = token;
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server =
      CoordinatorServer::Start("127.0.0.1:0", config);
  ASSERT_THAT(server, IsOk());
  std::unique_ptr<Coordinator::Stub> stub =
      Coordinator::NewStub(grpc::CreateChannel(
          (*server)->address(), grpc::InsecureChannelCredentials()));
  auto call = [&](const std::string& presented) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcTimeout));
    if (!presented.empty()) {
      context.AddMetadata("authorization", "Bearer " + presented);
    }
    ListWorkersResponse response;
    return stub->ListWorkers(&context, ListWorkersRequest(), &response);
  };
  grpc::Status none = call("");
  EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(none.error_message(), HasSubstr("GRADSYNC_TOKEN_FILE"));
  EXPECT_EQ(call(std::string(64, 'e')).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(call(token).ok());
  for (const std::string& presented : {std::string(), std::string("x")}) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcTimeout));
    if (!presented.empty()) context.AddMetadata("authorization", presented);
    SubmitJobRequest submit;
    *submit.mutable_spec() = ValidSpec(1);
    SubmitJobResponse submitted;
    EXPECT_EQ(stub->SubmitJob(&context, submit, &submitted).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  // Registration is a daemon's call: no user token.
  RegisterWorkerRequest request;
  request.set_host("host-a");
  request.set_address("127.0.0.1");
  request.set_wire_version(kWireVersion);
  request.add_devices()->set_kind("cpu");
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcTimeout));
  RegisterWorkerResponse registered;
  EXPECT_TRUE(stub->RegisterWorker(&context, request, &registered).ok());
  // Nothing was submitted by the refused calls.
  grpc::ClientContext list_context;
  list_context.AddMetadata("authorization", "Bearer " + token);
  ListJobsResponse jobs;
  ASSERT_TRUE(stub->ListJobs(&list_context, ListJobsRequest(), &jobs).ok());
  EXPECT_EQ(jobs.jobs_size(), 0);
}

// --advertise: where the cluster reaches the coordinator, over the wire in
// ListWorkers (`gradsync version`); a wildcard listen advertises a
// reachable address instead; a wildcard advertise is refused.
TEST(CoordinatorAdvertiseTest, TheAdvertisedAddressCrossesTheWire) {
  CoordinatorServerOptions options;
  options.advertise = "coord.example";
  absl::StatusOr<std::unique_ptr<CoordinatorServer>> server =
      CoordinatorServer::Start("127.0.0.1:0", CoordinatorConfig(), options);
  ASSERT_THAT(server, IsOk());
  const std::string expected =
      absl::StrCat("coord.example:", (*server)->port());
  EXPECT_EQ((*server)->advertised_address(), expected);
  std::unique_ptr<Coordinator::Stub> stub =
      Coordinator::NewStub(grpc::CreateChannel(
          (*server)->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcTimeout));
  ListWorkersResponse list;
  ASSERT_TRUE(stub->ListWorkers(&context, ListWorkersRequest(), &list).ok());
  EXPECT_EQ(list.coordinator_address(), expected);

  absl::StatusOr<std::unique_ptr<CoordinatorServer>> wildcard =
      CoordinatorServer::Start("0.0.0.0:0", CoordinatorConfig());
  ASSERT_THAT(wildcard, IsOk());
  EXPECT_FALSE(absl::StartsWith((*wildcard)->advertised_address(), "0.0.0.0"))
      << (*wildcard)->advertised_address();
  EXPECT_TRUE(absl::EndsWith((*wildcard)->advertised_address(),
                             absl::StrCat(":", (*wildcard)->port())));

  options.advertise = "0.0.0.0:29400";
  EXPECT_THAT(
      CoordinatorServer::Start("127.0.0.1:0", CoordinatorConfig(), options),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("wildcard")));
}

TEST_F(CoordinatorRpcTest, Shutdown_WithAWatchWaiting_ReturnsPromptly) {
  Register("host-a", 1);
  const std::string job = Submit(1);
  auto context = Context();
  WatchJobRequest watch;
  watch.set_job_id(job);
  auto reader = stub_->WatchJob(context.get(), watch);
  JobEvent event;
  // After the first event the handler waits for news on a server thread.
  ASSERT_TRUE(reader->Read(&event));
  const absl::Time start = absl::Now();
  server_->Shutdown();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_FALSE(reader->Read(&event));
  EXPECT_FALSE(reader->Finish().ok());
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
