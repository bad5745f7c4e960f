#include "tests/integration/test_cluster.h"

#include <grpcpp/client_context.h>
#include <grpcpp/support/channel_arguments.h>
#include <signal.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "security/certs.h"
#include "security/tls.h"
#include "security/tls_dir.h"

namespace gradsync {
namespace testing {
namespace {

constexpr char kListening[] = "gradsync-coordinator listening on ";
// How often the start-up and worker waits look again.
constexpr absl::Duration kPollInterval = absl::Milliseconds(50);
// SIGTERM to exit; the daemons cancel their jobs first, which is quick.
constexpr absl::Duration kStopGrace = absl::Seconds(15);
// GetMetrics of a long job passes gRPC's default 4 MiB receive limit.
constexpr int kMaxMessageBytes = 256 << 20;

void SetDeadline(grpc::ClientContext* context, absl::Duration timeout) {
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

std::string DescribeWorkers(const ListWorkersResponse& workers) {
  return absl::StrJoin(
      workers.workers(), "; ", [](std::string* out, const WorkerInfo& w) {
        absl::StrAppend(out, w.worker_id(), " (", w.host(), ") ",
                        WorkerState_Name(w.state()), ", free ",
                        w.free_devices(), " of ", w.devices_size(), ", jobs [",
                        absl::StrJoin(w.job_ids(), ", "), "]");
      });
}

}  // namespace

std::string ShortStateName(JobState state) {
  return std::string(absl::StripPrefix(JobState_Name(state), "JOB_STATE_"));
}

bool IsEnded(JobState state) {
  return state == JOB_STATE_SUCCEEDED || state == JOB_STATE_FAILED ||
         state == JOB_STATE_CANCELLED;
}

std::string TestCluster::WorkerHost(int i) {
  return absl::StrCat("node-", std::string(1, static_cast<char>('a' + i)));
}

std::string TestCluster::WorkerDir(int i) const {
  if (!options_.worker_dirs) return std::filesystem::current_path().string();
  return absl::StrCat(log_dir_, "/", WorkerHost(i));
}

TestCluster::TestCluster(const TestClusterOptions& options, std::string log_dir)
    : options_(options), log_dir_(std::move(log_dir)) {}

TestCluster::~TestCluster() { Stop(); }

absl::StatusOr<std::unique_ptr<TestCluster>> TestCluster::Start(
    const TestClusterOptions& options) {
  const char* tmp = getenv("TMPDIR");
  std::string pattern =
      absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp",
                   "/gradsync-integration.XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", pattern, " failed"));
  }
  std::unique_ptr<TestCluster> cluster(new TestCluster(options, pattern));
  absl::Status status = absl::OkStatus();
  if (options.tls) {
    absl::StatusOr<ClusterCertificates> certs = NewClusterCertificates(1);
    status = certs.ok() ? WriteTlsDir(cluster->tls_dir(), *certs, false)
                        : certs.status();
  }
  if (status.ok()) status = cluster->StartCoordinator("127.0.0.1:0");
  if (status.ok()) status = cluster->StartParameterServers();
  if (status.ok()) status = cluster->StartWorkers();
  if (!status.ok()) {
    const std::string ends = cluster->Stop();
    return Annotate(status, absl::StrCat("starting the test cluster (logs in ",
                                         cluster->log_dir(), "; ", ends, ")\n",
                                         cluster->DumpLogs()));
  }
  return cluster;
}

std::string TestCluster::tls_dir() const {
  return options_.tls ? absl::StrCat(log_dir_, "/tls") : "";
}

std::vector<std::string> TestCluster::CommonArgs() const {
  std::vector<std::string> args = {"--insecure"};
  if (options_.tls) args = {"--tls-dir", tls_dir()};
  if (options_.probes) {
    for (const char* flag : {"--metrics-listen", "--health-listen"}) {
      args.push_back(flag);
      args.push_back("127.0.0.1:0");
    }
  }
  return args;
}

absl::Status TestCluster::RestartCoordinator(int signal_number) {
  coordinator_->Signal(signal_number);
  if (!coordinator_->WaitForExit(absl::Seconds(30))) {
    return absl::DeadlineExceededError(
        "gradsync-coordinator did not exit within 30s of the signal");
  }
  ++coordinator_starts_;
  return StartCoordinator(address_);
}

absl::Status TestCluster::StartCoordinator(const std::string& listen) {
  std::vector<std::string> flags = {
      "--listen",       listen,
      "--lease-ms",     absl::StrCat(options_.lease_ms),
      "--heartbeat-ms", absl::StrCat(options_.heartbeat_ms)};
  for (std::string& arg : CommonArgs()) flags.push_back(std::move(arg));
  if (options_.state_db) {
    flags.push_back("--state-db");
    flags.push_back(absl::StrCat(log_dir_, "/coordinator.db"));
  }
  ASSIGN_OR_RETURN(
      coordinator_,
      ChildProcess::Start(
          "coordinator", GRADSYNC_COORDINATOR_BINARY, flags,
          absl::StrCat(log_dir_, "/coordinator",
                       coordinator_starts_ == 0
                           ? std::string()
                           : absl::StrCat("-", coordinator_starts_ + 1),
                       ".log")));
  const absl::Time deadline = absl::Now() + options_.start_timeout;
  for (;;) {
    const std::string log = coordinator_->ReadLog();
    const size_t at = log.find(kListening);
    if (at != std::string::npos) {
      const size_t begin = at + std::strlen(kListening);
      const size_t end = log.find('\n', begin);
      if (end != std::string::npos) {
        address_ = log.substr(begin, end - begin);
        break;
      }
    }
    if (!coordinator_->Running()) {
      return absl::InternalError(absl::StrCat(
          "gradsync-coordinator ended (", coordinator_->ExitDescription(),
          ") before announcing its address"));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "gradsync-coordinator did not announce its address within ",
          absl::FormatDuration(options_.start_timeout)));
    }
    absl::SleepFor(kPollInterval);
  }
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  TlsOptions tls;
  tls.dir = tls_dir();
  ASSIGN_OR_RETURN(const GrpcSecurity security,
                   SecurityFromOptions(tls, TlsRole::kUser));
  stub_ =
      Coordinator::NewStub(NewGrpcChannel(address_, security, channel_args));
  return absl::OkStatus();
}

absl::Status TestCluster::StartParameterServers() {
  for (int i = 0; i < options_.parameter_servers; ++i) {
    std::vector<std::string> args = {"--listen", "127.0.0.1:0", "--coordinator",
                                     address_};
    for (std::string& arg : CommonArgs()) args.push_back(std::move(arg));
    if (options_.ps_plaintext) args.push_back("--ps-plaintext");
    ASSIGN_OR_RETURN(
        std::unique_ptr<ChildProcess> ps,
        ChildProcess::Start(absl::StrCat("ps ", i), GRADSYNC_PS_BINARY, args,
                            absl::StrCat(log_dir_, "/ps-", i, ".log")));
    parameter_servers_.push_back(std::move(ps));
  }
  // Each announces its address on its first line, then registers.
  ps_addresses_.assign(parameter_servers_.size(), "");
  const absl::Time deadline = absl::Now() + options_.start_timeout;
  for (;;) {
    int registered = 0;
    ListWorkersResponse last;
    ASSIGN_OR_RETURN(last, ListWorkers());
    for (size_t i = 0; i < parameter_servers_.size(); ++i) {
      ChildProcess& ps = *parameter_servers_[i];
      if (!ps.Running()) {
        return absl::InternalError(absl::StrCat(ps.name(), " ended (",
                                                ps.ExitDescription(),
                                                ") before "
                                                "registering:\n",
                                                ps.ReadLog()));
      }
      // The address is the line that is just "host:port" (stdout; the log
      // interleaves stderr).
      for (absl::string_view line : absl::StrSplit(ps.ReadLog(), '\n')) {
        if (!line.empty() && !absl::StrContains(line, ' ') &&
            absl::StrContains(line, ':')) {
          ps_addresses_[i] = std::string(line);
        }
      }
      if (ps_addresses_[i].empty()) continue;
      for (const ParameterServerInfo& info : last.parameter_servers()) {
        if (info.address() == ps_addresses_[i] && !info.lost()) ++registered;
      }
    }
    if (registered == num_parameter_servers()) return absl::OkStatus();
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("not every parameter server registered within ",
                       absl::FormatDuration(options_.start_timeout)));
    }
    absl::SleepFor(kPollInterval);
  }
}

absl::Status TestCluster::StartWorkers() {
  for (int i = 0; i < options_.workers; ++i) {
    const std::string host = WorkerHost(i);
    if (options_.worker_dirs) {
      std::error_code error;
      std::filesystem::create_directories(WorkerDir(i), error);
      if (error) {
        return absl::InternalError(absl::StrCat("cannot create ", WorkerDir(i),
                                                ": ", error.message()));
      }
    }
    std::vector<std::string> args = {
        "--coordinator", address_,
        "--devices",     absl::StrCat("cpu:", options_.devices_per_worker),
        "--address",     "127.0.0.1",
        "--host",        host};
    for (std::string& arg : CommonArgs()) args.push_back(std::move(arg));
    if (options_.ps_plaintext) args.push_back("--ps-plaintext");
    args.push_back("--ps-transport");
    args.push_back(options_.ps_transport);
    ASSIGN_OR_RETURN(std::unique_ptr<ChildProcess> worker,
                     ChildProcess::Start(
                         absl::StrCat("worker ", host), GRADSYNC_WORKER_BINARY,
                         args, absl::StrCat(log_dir_, "/worker-", host, ".log"),
                         options_.worker_dirs ? WorkerDir(i) : ""));
    workers_.push_back(std::move(worker));
  }
  worker_ids_.assign(workers_.size(), "");
  ListWorkersResponse last;
  const absl::Time deadline = absl::Now() + options_.start_timeout;
  for (;;) {
    for (const std::unique_ptr<ChildProcess>& worker : workers_) {
      if (!worker->Running()) {
        return absl::InternalError(absl::StrCat(worker->name(), " ended (",
                                                worker->ExitDescription(),
                                                ") before registering"));
      }
    }
    ASSIGN_OR_RETURN(last, ListWorkers());
    int registered = 0;
    for (const WorkerInfo& info : last.workers()) {
      for (int i = 0; i < num_workers(); ++i) {
        if (info.host() == WorkerHost(i) && info.state() == WORKER_STATE_IDLE &&
            info.free_devices() == options_.devices_per_worker) {
          worker_ids_[i] = info.worker_id();
          ++registered;
        }
      }
    }
    if (registered == num_workers()) return absl::OkStatus();
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("not every worker registered within ",
                       absl::FormatDuration(options_.start_timeout),
                       "; the coordinator knows: ", DescribeWorkers(last)));
    }
    absl::SleepFor(kPollInterval);
  }
}

absl::StatusOr<std::string> TestCluster::Submit(const JobSpec& spec) {
  grpc::ClientContext context;
  SetDeadline(&context, kRpcTimeout);
  SubmitJobRequest request;
  *request.mutable_spec() = spec;
  SubmitJobResponse response;
  RETURN_IF_ERROR(
      FromGrpcStatus(stub_->SubmitJob(&context, request, &response)));
  return response.job_id();
}

absl::StatusOr<JobStatus> TestCluster::GetJob(const std::string& job_id) {
  grpc::ClientContext context;
  SetDeadline(&context, kRpcTimeout);
  GetJobRequest request;
  request.set_job_id(job_id);
  JobStatus response;
  RETURN_IF_ERROR(FromGrpcStatus(stub_->GetJob(&context, request, &response)));
  return response;
}

absl::StatusOr<JobStatus> TestCluster::Cancel(const std::string& job_id) {
  grpc::ClientContext context;
  SetDeadline(&context, kRpcTimeout);
  CancelJobRequest request;
  request.set_job_id(job_id);
  JobStatus response;
  RETURN_IF_ERROR(
      FromGrpcStatus(stub_->CancelJob(&context, request, &response)));
  return response;
}

absl::StatusOr<ListJobsResponse> TestCluster::ListJobs() {
  grpc::ClientContext context;
  SetDeadline(&context, kRpcTimeout);
  ListJobsResponse response;
  RETURN_IF_ERROR(
      FromGrpcStatus(stub_->ListJobs(&context, ListJobsRequest(), &response)));
  return response;
}

absl::StatusOr<ListWorkersResponse> TestCluster::ListWorkers() {
  grpc::ClientContext context;
  SetDeadline(&context, kRpcTimeout);
  ListWorkersResponse response;
  RETURN_IF_ERROR(FromGrpcStatus(
      stub_->ListWorkers(&context, ListWorkersRequest(), &response)));
  return response;
}

absl::StatusOr<std::vector<StepMetrics>> TestCluster::GetMetrics(
    const std::string& job_id) {
  ASSIGN_OR_RETURN(const GetMetricsResponse response,
                   GetMetricsResponseOf(job_id));
  return std::vector<StepMetrics>(response.metrics().begin(),
                                  response.metrics().end());
}

absl::StatusOr<GetMetricsResponse> TestCluster::GetMetricsResponseOf(
    const std::string& job_id) {
  grpc::ClientContext context;
  SetDeadline(&context, kRpcTimeout);
  GetMetricsRequest request;
  request.set_job_id(job_id);
  GetMetricsResponse response;
  RETURN_IF_ERROR(
      FromGrpcStatus(stub_->GetMetrics(&context, request, &response)));
  return response;
}

absl::StatusOr<int64_t> TestCluster::Switch(const std::string& job_id,
                                            SyncMode mode) {
  grpc::ClientContext context;
  SetDeadline(&context, kRpcTimeout);
  SwitchJobRequest request;
  request.set_job_id(job_id);
  request.set_mode(mode);
  SwitchJobResponse response;
  RETURN_IF_ERROR(
      FromGrpcStatus(stub_->SwitchJob(&context, request, &response)));
  return response.epoch();
}

absl::StatusOr<JobStatus> TestCluster::WaitForJob(
    const std::string& job_id,
    const std::function<bool(const JobStatus&)>& done, absl::Duration timeout,
    absl::string_view what) {
  grpc::ClientContext context;
  SetDeadline(&context, timeout);
  WatchJobRequest request;
  request.set_job_id(job_id);
  std::unique_ptr<grpc::ClientReader<JobEvent>> reader =
      stub_->WatchJob(&context, request);
  JobEvent event;
  JobStatus last;
  bool seen = false;
  while (reader->Read(&event)) {
    last = event.status();
    seen = true;
    if (done(last)) {
      context.TryCancel();
      reader->Finish().IgnoreError();
      return last;
    }
  }
  const absl::Status status = FromGrpcStatus(reader->Finish());
  const std::string state =
      seen ? absl::StrCat("last seen ", ShortStateName(last.state()),
                          " at step ", last.step(),
                          last.message().empty() ? "" : ": ", last.message())
           : std::string("no event received");
  if (status.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id, " ended before ", what, " (", state, ")"));
  }
  if (status.code() == absl::StatusCode::kDeadlineExceeded) {
    return absl::DeadlineExceededError(
        absl::StrCat("job ", job_id, ": no ", what, " within ",
                     absl::FormatDuration(timeout), " (", state, ")"));
  }
  return Annotate(status, absl::StrCat("watching job ", job_id, " for ", what,
                                       " (", state, ")"));
}

absl::StatusOr<JobStatus> TestCluster::WaitForJobEnd(const std::string& job_id,
                                                     absl::Duration timeout) {
  return WaitForJob(
      job_id, [](const JobStatus& s) { return IsEnded(s.state()); }, timeout,
      "end");
}

absl::StatusOr<TestCluster::FinishedJob> TestCluster::RunToSuccess(
    const JobSpec& spec, absl::Duration timeout) {
  absl::StatusOr<std::string> job = Submit(spec);
  if (!job.ok()) return job.status();
  absl::StatusOr<JobStatus> status = WaitForJobEnd(*job, timeout);
  if (!status.ok()) return status.status();
  if (status->state() != JOB_STATE_SUCCEEDED) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", *job, " ended ", JobState_Name(status->state()),
                     ": ", status->message()));
  }
  absl::StatusOr<std::vector<StepMetrics>> metrics = GetMetrics(*job);
  if (!metrics.ok()) return metrics.status();
  return FinishedJob{*std::move(status), *std::move(metrics)};
}

absl::Status TestCluster::WaitForWorkers(
    const std::function<bool(const ListWorkersResponse&)>& done,
    absl::Duration timeout, absl::string_view what) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    ASSIGN_OR_RETURN(ListWorkersResponse workers, ListWorkers());
    if (done(workers)) return absl::OkStatus();
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "workers not ", what, " within ", absl::FormatDuration(timeout),
          "; the coordinator knows: ", DescribeWorkers(workers)));
    }
    absl::SleepFor(kPollInterval);
  }
}

absl::Status TestCluster::WaitForIdleWorkers(absl::Duration timeout) {
  return WaitForWorkers(
      [](const ListWorkersResponse& workers) {
        for (const WorkerInfo& w : workers.workers()) {
          if (w.state() == WORKER_STATE_LOST) continue;
          if (w.state() != WORKER_STATE_IDLE ||
              w.free_devices() != w.devices_size()) {
            return false;
          }
        }
        return true;
      },
      timeout, "idle with every device free");
}

std::string TestCluster::Stop() {
  if (stopped_) return stop_report_;
  stopped_ = true;
  std::vector<std::string> ends;
  // Workers first: with the coordinator gone they would retry until killed.
  for (const std::unique_ptr<ChildProcess>& worker : workers_) {
    worker->Signal(SIGTERM);
  }
  for (const std::unique_ptr<ChildProcess>& worker : workers_) {
    ends.push_back(
        absl::StrCat(worker->name(), ": ", worker->Stop(kStopGrace)));
  }
  for (const std::unique_ptr<ChildProcess>& ps : parameter_servers_) {
    ends.push_back(absl::StrCat(ps->name(), ": ", ps->Stop(kStopGrace)));
  }
  if (coordinator_ != nullptr) {
    ends.push_back(
        absl::StrCat("coordinator: ", coordinator_->Stop(kStopGrace)));
  }
  stop_report_ = absl::StrJoin(ends, "; ");
  return stop_report_;
}

std::string TestCluster::DumpLogs() const {
  std::string out;
  auto dump = [&out](const ChildProcess& process) {
    absl::StrAppend(&out, "===== ", process.name(), " (", process.log_path(),
                    ") =====\n", process.ReadLog(), "\n");
  };
  if (coordinator_ != nullptr) dump(*coordinator_);
  for (const std::unique_ptr<ChildProcess>& worker : workers_) dump(*worker);
  for (const std::unique_ptr<ChildProcess>& ps : parameter_servers_) dump(*ps);
  return out;
}

void TestCluster::RemoveLogs() {
  std::error_code ignored;
  std::filesystem::remove_all(log_dir_, ignored);
}

}  // namespace testing
}  // namespace gradsync
