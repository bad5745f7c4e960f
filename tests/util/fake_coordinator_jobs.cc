// The fake coordinator's job table: the users' RPCs that the control
// commands call (see fake_coordinator.h).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "tests/util/fake_coordinator.h"

namespace gradsync::testing {
namespace {

grpc::Status NoJob(const std::string& job_id) {
  return grpc::Status(grpc::StatusCode::NOT_FOUND,
                      absl::StrCat("no job '", job_id, "'"));
}

bool Ended(JobState state) {
  return state == JOB_STATE_SUCCEEDED || state == JOB_STATE_FAILED ||
         state == JOB_STATE_CANCELLED;
}

// "job j-1 already ended (FAILED)", as the real coordinator says it.
grpc::Status AlreadyEnded(const JobStatus& job) {
  return grpc::Status(
      grpc::StatusCode::FAILED_PRECONDITION,
      absl::StrCat("job ", job.job_id(), " already ended (",
                   absl::StripPrefix(JobState_Name(job.state()), "JOB_STATE_"),
                   ")"));
}

}  // namespace

JobStatus* FakeCoordinator::FindJobLocked(const std::string& job_id) {
  for (JobStatus& job : jobs_) {
    if (job.job_id() == job_id) return &job;
  }
  return nullptr;
}

grpc::Status FakeCoordinator::SubmitJob(grpc::ServerContext* context,
                                        const SubmitJobRequest* request,
                                        SubmitJobResponse* response) {
  absl::MutexLock lock(&mu_);
  submitted_.push_back(request->spec());
  ++events_;
  if (!submit_answer_) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                        "the fake coordinator takes no jobs in this test");
  }
  std::string job_id;
  grpc::Status status = submit_answer_(request->spec(), &job_id);
  if (status.ok()) response->set_job_id(job_id);
  return status;
}

grpc::Status FakeCoordinator::GetJob(grpc::ServerContext* context,
                                     const GetJobRequest* request,
                                     JobStatus* response) {
  absl::MutexLock lock(&mu_);
  const JobStatus* job = FindJobLocked(request->job_id());
  if (job == nullptr) return NoJob(request->job_id());
  *response = *job;
  return grpc::Status::OK;
}

grpc::Status FakeCoordinator::ListJobs(grpc::ServerContext* context,
                                       const ListJobsRequest* request,
                                       ListJobsResponse* response) {
  absl::MutexLock lock(&mu_);
  for (const JobStatus& job : jobs_) *response->add_jobs() = job;
  return grpc::Status::OK;
}

grpc::Status FakeCoordinator::CancelJob(grpc::ServerContext* context,
                                        const CancelJobRequest* request,
                                        JobStatus* response) {
  absl::MutexLock lock(&mu_);
  JobStatus* job = FindJobLocked(request->job_id());
  if (job == nullptr) return NoJob(request->job_id());
  if (Ended(job->state())) return AlreadyEnded(*job);
  job->set_state(JOB_STATE_CANCELLED);
  job->set_message("cancelled by the user");
  ++events_;
  *response = *job;
  return grpc::Status::OK;
}

grpc::Status FakeCoordinator::SwitchJob(grpc::ServerContext* context,
                                        const SwitchJobRequest* request,
                                        SwitchJobResponse* response) {
  absl::MutexLock lock(&mu_);
  JobStatus* job = FindJobLocked(request->job_id());
  if (job == nullptr) return NoJob(request->job_id());
  if (Ended(job->state())) return AlreadyEnded(*job);
  switches_.push_back(request->mode());
  ++events_;
  job->set_switch_requests(job->switch_requests() + 1);
  response->set_epoch(job->switch_requests());
  *response->mutable_status() = *job;
  return grpc::Status::OK;
}

grpc::Status FakeCoordinator::WatchJob(grpc::ServerContext* context,
                                       const WatchJobRequest* request,
                                       grpc::ServerWriter<JobEvent>* writer) {
  std::vector<JobEvent> events;
  bool broken = false;
  {
    absl::MutexLock lock(&mu_);
    const JobStatus* job = FindJobLocked(request->job_id());
    if (job == nullptr) return NoJob(request->job_id());
    auto it = watch_events_.find(request->job_id());
    if (it != watch_events_.end()) {
      events = it->second;
    } else {
      *events.emplace_back().mutable_status() = *job;
    }
    if (break_watches_ > 0) {
      --break_watches_;
      broken = true;
      events.resize(std::min<size_t>(events.size(), 1));
    }
  }
  for (const JobEvent& event : events) {
    if (!writer->Write(event)) break;
  }
  if (broken) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "the coordinator is shutting down; retry against its "
                        "replacement");
  }
  return grpc::Status::OK;
}

void FakeCoordinator::BreakWatches(int count) {
  absl::MutexLock lock(&mu_);
  break_watches_ = count;
}

grpc::Status FakeCoordinator::GetMetrics(grpc::ServerContext* context,
                                         const GetMetricsRequest* request,
                                         GetMetricsResponse* response) {
  absl::MutexLock lock(&mu_);
  if (FindJobLocked(request->job_id()) == nullptr) {
    return NoJob(request->job_id());
  }
  auto it = job_metrics_.find(request->job_id());
  if (it != job_metrics_.end()) *response = it->second;
  return grpc::Status::OK;
}

grpc::Status FakeCoordinator::ListWorkers(grpc::ServerContext* context,
                                          const ListWorkersRequest* request,
                                          ListWorkersResponse* response) {
  absl::MutexLock lock(&mu_);
  *response = worker_list_;
  return grpc::Status::OK;
}

void FakeCoordinator::AddJob(const JobStatus& job) {
  absl::MutexLock lock(&mu_);
  jobs_.push_back(job);
}

void FakeCoordinator::AnswerSubmissions(SubmitAnswer answer) {
  absl::MutexLock lock(&mu_);
  submit_answer_ = std::move(answer);
}

void FakeCoordinator::SetWatchEvents(const std::string& job_id,
                                     std::vector<JobEvent> events) {
  absl::MutexLock lock(&mu_);
  watch_events_[job_id] = std::move(events);
}

void FakeCoordinator::SetMetrics(const std::string& job_id,
                                 GetMetricsResponse metrics) {
  absl::MutexLock lock(&mu_);
  job_metrics_[job_id] = std::move(metrics);
}

void FakeCoordinator::SetWorkerList(ListWorkersResponse workers) {
  absl::MutexLock lock(&mu_);
  worker_list_ = std::move(workers);
}

std::vector<JobSpec> FakeCoordinator::submitted() const {
  absl::MutexLock lock(&mu_);
  return submitted_;
}

std::vector<SyncMode> FakeCoordinator::switches() const {
  absl::MutexLock lock(&mu_);
  return switches_;
}

}  // namespace gradsync::testing
