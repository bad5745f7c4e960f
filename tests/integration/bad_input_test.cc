// Integration tests of bad input against a real cluster (a coordinator
// and two cpu:2 workers): each is rejected with a clear error naming what
// is wrong, and changes no state (no job added, workers still free, the
// running job and its store untouched). Calls come from two kinds of
// outsider: a forger that names a real worker's id (ids are public: the
// CLI lists them) without its credential, and a registered daemon of its
// own that hosts none of the job's ranks.
#include <grpcpp/client_context.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "common/wire_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/job_spec.h"
#include "jobspec/job_spec_json.h"
#include "tests/integration/cluster_test_base.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr absl::Duration kRpcTimeout = absl::Seconds(30);
constexpr absl::Duration kStartTimeout = absl::Seconds(60);
constexpr absl::Duration kIdleTimeout = absl::Seconds(30);
// The generation of a job's first (and, without restarts, only) rendezvous.
constexpr int64_t kFirstGeneration = 1;

void SetDeadline(grpc::ClientContext* context) {
  context->set_deadline(absl::ToChronoTime(absl::Now() + kRpcTimeout));
}

JobSpec ValidSpec() {
  JobSpec spec = LongSyntheticSpec(2);
  spec.set_steps(10);
  return spec;
}

class BadInputTest : public ClusterTest {
 protected:
  // No job exists and every worker is idle with all devices free.
  void ExpectNothingChanged() {
    absl::StatusOr<ListJobsResponse> jobs = cluster().ListJobs();
    ASSERT_THAT(jobs, IsOk());
    EXPECT_THAT(jobs->jobs(), IsEmpty());
    EXPECT_THAT(cluster().WaitForIdleWorkers(kIdleTimeout), IsOk());
  }

  // Submits a 2-rank job that runs until cancelled and waits until it
  // RUNS (all ranks ready); it lands on node-a (placement order).
  std::string StartLongJob() {
    absl::StatusOr<std::string> job = cluster().Submit(LongSyntheticSpec(2));
    EXPECT_THAT(job, IsOk());
    if (!job.ok()) return "";
    absl::StatusOr<JobStatus> running = cluster().WaitForJob(
        *job,
        [](const JobStatus& s) {
          return s.state() == JOB_STATE_RUNNING && s.step() >= 1;
        },
        kStartTimeout, "RUNNING at step 1");
    EXPECT_THAT(running, IsOk());
    return *job;
  }

  // Who makes a worker's call: an id and the credential sent with it.
  struct Caller {
    std::string worker_id;
    std::string credential;
  };

  // Names cluster worker `worker` without its credential (it lives in the
  // daemon's memory only).
  Caller Forger(int worker) { return {cluster().worker_id(worker), ""}; }

  // A daemon of its own, registered with a GPU so that no CPU job is
  // placed on it: authenticated, but in no job.
  Caller Outsider() {
    grpc::ClientContext context;
    SetDeadline(&context);
    RegisterWorkerRequest request;
    request.set_host("node-x");
    request.set_address("127.0.0.1");
    request.set_wire_version(kWireVersion);
    Device* device = request.add_devices();
    device->set_kind("cuda");
    RegisterWorkerResponse response;
    EXPECT_TRUE(
        cluster().stub().RegisterWorker(&context, request, &response).ok());
    EXPECT_FALSE(response.credential().empty());
    return {response.worker_id(), response.credential()};
  }

  StoreScope Scope(const std::string& job_id, const Caller& caller,
                   int64_t generation = kFirstGeneration) {
    StoreScope scope;
    scope.set_worker_id(caller.worker_id);
    scope.set_credential(caller.credential);
    scope.set_job_id(job_id);
    scope.set_generation(generation);
    return scope;
  }

  [[nodiscard]] absl::Status StoreSet(const StoreScope& scope,
                                      const std::string& key) {
    grpc::ClientContext context;
    SetDeadline(&context);
    StoreSetRequest request;
    *request.mutable_scope() = scope;
    request.set_key(key);
    request.set_value("intruder");
    StoreSetResponse response;
    return FromGrpcStatus(
        cluster().stub().StoreSet(&context, request, &response));
  }

  [[nodiscard]] absl::Status StoreGet(const StoreScope& scope,
                                      const std::string& key,
                                      int64_t timeout_ms) {
    grpc::ClientContext context;
    SetDeadline(&context);
    StoreGetRequest request;
    *request.mutable_scope() = scope;
    request.set_key(key);
    request.set_timeout_ms(timeout_ms);
    StoreGetResponse response;
    return FromGrpcStatus(
        cluster().stub().StoreGet(&context, request, &response));
  }

  [[nodiscard]] absl::Status StoreAdd(const StoreScope& scope,
                                      const std::string& key) {
    grpc::ClientContext context;
    SetDeadline(&context);
    StoreAddRequest request;
    *request.mutable_scope() = scope;
    request.set_key(key);
    request.set_delta(1);
    StoreAddResponse response;
    return FromGrpcStatus(
        cluster().stub().StoreAdd(&context, request, &response));
  }

  [[nodiscard]] absl::Status StoreWait(const StoreScope& scope,
                                       const std::string& key) {
    grpc::ClientContext context;
    SetDeadline(&context);
    StoreWaitRequest request;
    *request.mutable_scope() = scope;
    request.add_keys(key);
    request.set_timeout_ms(100);
    StoreWaitResponse response;
    return FromGrpcStatus(
        cluster().stub().StoreWait(&context, request, &response));
  }

  [[nodiscard]] absl::Status Barrier(const StoreScope& scope, int rank) {
    grpc::ClientContext context;
    SetDeadline(&context);
    BarrierRequest request;
    *request.mutable_scope() = scope;
    request.set_name("intruder-barrier");
    request.set_rank(rank);
    request.set_timeout_ms(100);
    BarrierResponse response;
    return FromGrpcStatus(
        cluster().stub().Barrier(&context, request, &response));
  }

  [[nodiscard]] absl::Status ReportMetrics(
      const std::string& job_id, const Caller& caller,
      const std::vector<StepMetrics>& metrics) {
    grpc::ClientContext context;
    SetDeadline(&context);
    ReportMetricsRequest request;
    request.set_worker_id(caller.worker_id);
    request.set_credential(caller.credential);
    request.set_job_id(job_id);
    for (const StepMetrics& m : metrics) *request.add_metrics() = m;
    ReportMetricsResponse response;
    return FromGrpcStatus(
        cluster().stub().ReportMetrics(&context, request, &response));
  }

  [[nodiscard]] absl::Status ReportRankFailed(const std::string& job_id,
                                              const Caller& caller, int rank) {
    grpc::ClientContext context;
    SetDeadline(&context);
    ReportRankRequest request;
    request.set_worker_id(caller.worker_id);
    request.set_credential(caller.credential);
    request.set_job_id(job_id);
    request.set_rank(rank);
    request.set_state(RANK_STATE_FAILED);
    request.set_message("forged failure");
    ReportRankResponse response;
    return FromGrpcStatus(
        cluster().stub().ReportRank(&context, request, &response));
  }

  // Cancels the long job and checks that the workers come back free.
  void CancelAndExpectIdle(const std::string& job_id) {
    absl::StatusOr<JobStatus> cancelled = cluster().Cancel(job_id);
    ASSERT_THAT(cancelled, IsOk());
    EXPECT_EQ(cancelled->state(), JOB_STATE_CANCELLED);
    EXPECT_THAT(cluster().WaitForIdleWorkers(kIdleTimeout), IsOk());
  }
};

TEST_F(BadInputTest, MalformedJsonSpec_InvalidArgument_NothingSubmitted) {
  // The JSON form users write (the CLI's --file) is parsed before anything
  // reaches the coordinator.
  EXPECT_THAT(ParseJobSpecJson(R"({"numWorkers": 4, "model": {"kind": )"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("could not be parsed")));
  EXPECT_THAT(
      ParseJobSpecJson(R"({"numWorkerz": 4})"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("numWorkerz")));
  EXPECT_THAT(ParseJobSpecJson(R"({"mode": "SYNC_MODE_TELEPATHY"})"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseJobSpecJson(R"({"batchSize": "many"})"),
              StatusIs(absl::StatusCode::kInvalidArgument));

  // Well-formed JSON with a bad value is the coordinator's to reject.
  absl::StatusOr<JobSpec> spec = ParseJobSpecJson(
      R"({"numWorkers": 0, "model": {"kind": "mlp",
          "layerSizes": [784, 10]}, "dataset": {"name": "fashion-mnist"},
          "optimizer": {"name": "sgd", "learningRate": 0.1},
          "batchSize": 64, "steps": 5})");
  ASSERT_THAT(spec, IsOk());
  EXPECT_THAT(
      cluster().Submit(*spec),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("numWorkers")));
  spec->set_num_workers(2);
  spec->set_batch_size(1);
  EXPECT_THAT(
      cluster().Submit(*spec),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("batchSize")));
  ExpectNothingChanged();
}

TEST_F(BadInputTest, UnknownModelOrDataset_InvalidArgument_NothingSubmitted) {
  JobSpec model = ValidSpec();
  model.mutable_model()->set_kind("resnet50");
  EXPECT_THAT(cluster().Submit(model),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("model.kind"), HasSubstr("resnet50"))));
  JobSpec dataset = ValidSpec();
  dataset.mutable_dataset()->set_name("imagenet");
  EXPECT_THAT(
      cluster().Submit(dataset),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("dataset.name"), HasSubstr("imagenet"))));
  JobSpec optimizer = ValidSpec();
  optimizer.mutable_optimizer()->set_name("lion");
  EXPECT_THAT(cluster().Submit(optimizer),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("optimizer.name")));
  ExpectNothingChanged();
}

TEST_F(BadInputTest, MoreRanksThanDevices_ResourceExhausted_NothingSubmitted) {
  JobSpec spec = ValidSpec();
  spec.set_num_workers(5);  // the cluster has 2 x cpu:2
  EXPECT_THAT(cluster().Submit(spec),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("5 ranks"), HasSubstr("only 4"))));
  ExpectNothingChanged();
}

TEST_F(BadInputTest, UnknownJobId_NotFound) {
  const std::string id = "no-such-job";
  const auto not_found =
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("no-such-job"));
  EXPECT_THAT(cluster().GetJob(id), not_found);
  EXPECT_THAT(cluster().Cancel(id), not_found);
  EXPECT_THAT(cluster().GetMetrics(id), not_found);
  EXPECT_THAT(cluster().WaitForJobEnd(id, kRpcTimeout),
              StatusIs(absl::StatusCode::kNotFound));
  const Caller outsider = Outsider();
  EXPECT_THAT(StoreSet(Scope(id, outsider), "key"), not_found);
  StepMetrics step;
  step.set_rank(0);
  EXPECT_THAT(ReportMetrics(id, outsider, {step}), not_found);
  ExpectNothingChanged();
}

TEST_F(BadInputTest, StoreCallsForAForeignJob_Rejected_StoreUntouched) {
  const std::string job = StartLongJob();
  ASSERT_FALSE(job.empty());
  // The job's two ranks are on node-a (worker 0). An authenticated
  // daemon that hosts none of them is refused...
  const StoreScope foreign = Scope(job, Outsider());
  const auto denied = StatusIs(absl::StatusCode::kPermissionDenied,
                               HasSubstr("hosts no rank of job"));
  EXPECT_THAT(StoreSet(foreign, "intruder"), denied);
  EXPECT_THAT(StoreAdd(foreign, "intruder-counter"), denied);
  EXPECT_THAT(StoreGet(foreign, "intruder", 100), denied);
  EXPECT_THAT(StoreWait(foreign, "intruder"), denied);
  EXPECT_THAT(Barrier(foreign, 0), denied);
  // ...and so is anyone who names the job's own worker without its
  // credential: it can neither read nor overwrite rank 0's ring address
  // (issue 24, observation 1), with or without the right generation.
  const auto forged = StatusIs(absl::StatusCode::kPermissionDenied,
                               HasSubstr("carries no credential"));
  for (const int64_t generation : {kFirstGeneration, kFirstGeneration + 1}) {
    const StoreScope scope = Scope(job, Forger(0), generation);
    EXPECT_THAT(StoreSet(scope, "tcp/addr/0"), forged);
    EXPECT_THAT(StoreGet(scope, "tcp/addr/0", 0), forged);
    EXPECT_THAT(StoreAdd(scope, "intruder-counter"), forged);
    EXPECT_THAT(Barrier(scope, 0), forged);
  }
  // The job runs on.
  absl::StatusOr<JobStatus> status = cluster().GetJob(job);
  ASSERT_THAT(status, IsOk());
  EXPECT_EQ(status->state(), JOB_STATE_RUNNING) << status->message();
  CancelAndExpectIdle(job);
}

TEST_F(BadInputTest, MetricsAndReportsFromRanksNotInTheJob_Rejected) {
  const std::string job = StartLongJob();
  ASSERT_FALSE(job.empty());
  // A marker step no real rank reaches.
  constexpr int64_t kMarkerStep = 999999999;
  StepMetrics outside;  // rank 5 of a 2-rank job
  outside.set_rank(5);
  outside.set_step(kMarkerStep);
  StepMetrics own;  // rank 0, which runs on node-a (worker 0)
  own.set_rank(0);
  own.set_step(kMarkerStep);

  const Caller outsider = Outsider();
  EXPECT_THAT(ReportMetrics(job, outsider, {outside}),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("rank 5 is not in job")));
  EXPECT_THAT(ReportMetrics(job, outsider, {own}),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("not on " + outsider.worker_id)));
  // All or nothing: the valid entry of a rejected batch is not recorded.
  EXPECT_THAT(ReportMetrics(job, outsider, {own, outside}),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(ReportRankFailed(job, outsider, 0),
              StatusIs(absl::StatusCode::kPermissionDenied));
  // A forged failure report for rank 0 in the name of the worker that
  // hosts it used to fail the job and blame that worker (issue 24,
  // observation 1); without the worker's credential it changes nothing.
  const auto forged = StatusIs(absl::StatusCode::kPermissionDenied,
                               HasSubstr("carries no credential"));
  EXPECT_THAT(ReportRankFailed(job, Forger(0), 0), forged);
  EXPECT_THAT(ReportMetrics(job, Forger(0), {own}), forged);
  EXPECT_THAT(ReportRankFailed(job, {cluster().worker_id(0), "guessed"}, 0),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("a credential that is not its own")));

  absl::StatusOr<std::vector<StepMetrics>> metrics = cluster().GetMetrics(job);
  ASSERT_THAT(metrics, IsOk());
  EXPECT_FALSE(metrics->empty());
  for (const StepMetrics& m : *metrics) {
    EXPECT_NE(m.step(), kMarkerStep) << "rank " << m.rank();
    EXPECT_LT(m.rank(), 2);
  }
  absl::StatusOr<JobStatus> status = cluster().GetJob(job);
  ASSERT_THAT(status, IsOk());
  EXPECT_EQ(status->state(), JOB_STATE_RUNNING) << status->message();
  CancelAndExpectIdle(job);
}

// Worker ids are public, so a call that names one proves nothing: without
// the worker's credential, deregistering it (issue 24, observation 1) or
// taking its heartbeat news (its assignments) is refused, and the worker
// stays registered and live.
TEST_F(BadInputTest, ForgedDeregisterOrHeartbeat_Refused_WorkerStays) {
  const auto forged = StatusIs(absl::StatusCode::kPermissionDenied,
                               HasSubstr("carries no credential"));
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    DeregisterWorkerRequest request;
    request.set_worker_id(cluster().worker_id(1));
    request.set_reason("forged");
    DeregisterWorkerResponse response;
    EXPECT_THAT(FromGrpcStatus(cluster().stub().DeregisterWorker(
                    &context, request, &response)),
                forged);
  }
  {
    grpc::ClientContext context;
    SetDeadline(&context);
    HeartbeatRequest request;
    request.set_worker_id(cluster().worker_id(1));
    HeartbeatResponse response;
    EXPECT_THAT(FromGrpcStatus(
                    cluster().stub().Heartbeat(&context, request, &response)),
                forged);
  }
  absl::StatusOr<ListWorkersResponse> workers = cluster().ListWorkers();
  ASSERT_THAT(workers, IsOk());
  int live = 0;
  for (const WorkerInfo& w : workers->workers()) {
    if (w.state() != WORKER_STATE_LOST) ++live;
  }
  EXPECT_EQ(live, 2);
  ExpectNothingChanged();
}

// A job spec that resumes from something that is not a checkpoint file
// fails that job with the reason, promptly, and the worker daemons live
// on: a directory used to kill every worker (an uncaught
// filesystem_error), a FIFO to block the ranks for good.
TEST_F(BadInputTest, ResumeFromADirectoryOrAFifo_FailsTheJob_DaemonsLive) {
  const std::string fifo =
      absl::StrCat(::testing::TempDir(), "/resume-fifo-", getpid());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& [path, why] :
       std::vector<std::pair<std::string, std::string>>{
           {"/etc", "/etc is a directory, not a checkpoint file"},
           {fifo, " is a FIFO, not a checkpoint file"}}) {
    JobSpec spec = ValidSpec();
    spec.mutable_checkpoint()->set_resume_from(path);
    absl::StatusOr<std::string> job = cluster().Submit(spec);
    ASSERT_THAT(job, IsOk());
    absl::StatusOr<JobStatus> failed = cluster().WaitForJob(
        *job, [](const JobStatus& s) { return s.state() == JOB_STATE_FAILED; },
        kStartTimeout, "FAILED");
    ASSERT_THAT(failed, IsOk()) << path;
    EXPECT_THAT(failed->message(), HasSubstr(why));
    EXPECT_THAT(cluster().WaitForIdleWorkers(kIdleTimeout), IsOk()) << path;
  }
  unlink(fifo.c_str());
  // Both daemons still take and finish a job.
  absl::StatusOr<std::string> job = cluster().Submit(ValidSpec());
  ASSERT_THAT(job, IsOk());
  absl::StatusOr<JobStatus> done = cluster().WaitForJob(
      *job, [](const JobStatus& s) { return s.state() == JOB_STATE_SUCCEEDED; },
      kStartTimeout, "SUCCEEDED");
  ASSERT_THAT(done, IsOk());
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
