#include "server/coordinator/job_progress.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "server/coordinator/job_auto.h"

namespace gradsync {
namespace {

[[nodiscard]] absl::Status NotInJob(const Job& job, absl::string_view worker_id,
                                    int rank) {
  if (rank < 0 || rank >= job.world_size()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "rank ", rank, " is not in job ", job.id(), " (",
        job.world_size() == 0 ? std::string("no ranks placed yet")
                              : absl::StrCat("ranks 0..", job.world_size() - 1),
        "); is the worker reporting for another job?"));
  }
  return absl::PermissionDeniedError(
      absl::StrCat("rank ", rank, " of job ", job.id(), " runs on worker ",
                   job.ranks()[rank].slot.worker_id, ", not on ", worker_id,
                   "; a worker reports only for its own ranks"));
}

}  // namespace

absl::Status JobProgress::ReportRank(const ReportRankRequest& request) {
  const RankState state = request.state();
  if (state != RANK_STATE_READY && state != RANK_STATE_SUCCEEDED &&
      state != RANK_STATE_FAILED) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank report has state ", static_cast<int>(state),
        "; use RANK_STATE_READY, RANK_STATE_SUCCEEDED or RANK_STATE_FAILED"));
  }
  if (request.step() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank report has step ", request.step(), "; steps count from 0"));
  }
  absl::MutexLock lock(&state_.mu);
  RETURN_IF_ERROR(
      state_.workers.Authenticate(request.worker_id(), request.credential()));
  ASSIGN_OR_RETURN(Job * job, state_.FindJobLocked(request.job_id()));
  const int rank = request.rank();
  if (!job->HostsRank(request.worker_id(), rank)) {
    return NotInJob(*job, request.worker_id(), rank);
  }
  if (IsFinal(job->state())) {
    return JobEndedError(*job,
                         "the rank's report changes nothing, stop the rank");
  }
  if (request.links_size() > 0) {
    if (state != RANK_STATE_SUCCEEDED) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", rank, " of job ", job->id(),
          " sent link measurements with a report that is not its success; "
          "nothing changed"));
    }
    RETURN_IF_ERROR(job->AddLinks(rank, request.links()));
  }
  RankRecord& record = job->mutable_ranks()[rank];
  record.last_step = std::max(record.last_step, request.step());
  job->Touch();

  if (state == RANK_STATE_FAILED) {
    const WorkerRecord* worker = state_.workers.Find(request.worker_id());
    lifecycle_.EndLocked(
        *job, JOB_STATE_FAILED,
        absl::StrCat("rank ", rank, " failed at step ", request.step(),
                     " during ",
                     request.operation().empty() ? std::string("training")
                                                 : request.operation(),
                     ": ",
                     request.message().empty() ? std::string("no reason given")
                                               : request.message(),
                     "; see the log of worker ", request.worker_id(),
                     " on host ", worker == nullptr ? "?" : worker->host));
    return absl::OkStatus();
  }

  record.ready = true;
  if (state == RANK_STATE_SUCCEEDED) {
    record.succeeded = true;
    if (rank == 0) {
      job->SetResult(request.test_accuracy(), request.test_loss());
    }
  }
  const auto& ranks = job->ranks();
  const bool all_ready = std::all_of(
      ranks.begin(), ranks.end(), [](const RankRecord& r) { return r.ready; });
  const bool all_succeeded =
      std::all_of(ranks.begin(), ranks.end(),
                  [](const RankRecord& r) { return r.succeeded; });
  if (all_ready && job->state() == JOB_STATE_RENDEZVOUS) {
    RETURN_IF_ERROR(job->TransitionTo(JOB_STATE_RUNNING, "", state_.Now()));
    state_.LogLocked(absl::StrCat("job ", job->id(), " RUNNING: all ",
                                  job->world_size(), " ranks ready"));
  }
  if (all_succeeded) {
    lifecycle_.EndLocked(
        *job, JOB_STATE_SUCCEEDED,
        absl::StrCat("all ", job->world_size(), " ranks finished; last step ",
                     job->MinStep()));
  }
  return absl::OkStatus();
}

absl::Status JobProgress::ReportMetrics(const ReportMetricsRequest& request) {
  if (!request.log_lines().empty()) return ReportLogLines(request);
  for (const StepMetrics& step : request.metrics()) {
    if (step.step() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("step metrics of rank ", step.rank(), " have step ",
                       step.step(), "; steps count from 0 (nothing recorded)"));
    }
  }
  absl::MutexLock lock(&state_.mu);
  RETURN_IF_ERROR(
      state_.workers.Authenticate(request.worker_id(), request.credential()));
  ASSIGN_OR_RETURN(Job * job, state_.FindJobLocked(request.job_id()));
  for (const StepMetrics& step : request.metrics()) {
    if (!job->HostsRank(request.worker_id(), step.rank())) {
      return Annotate(NotInJob(*job, request.worker_id(), step.rank()),
                      "step metrics rejected (nothing recorded)");
    }
  }
  if (job->state() != JOB_STATE_RENDEZVOUS &&
      job->state() != JOB_STATE_RUNNING) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job->id(), " is ", JobStateName(job->state()),
                     job->message().empty() ? "" : ": ", job->message(),
                     "; it takes no more step metrics"));
  }
  if (request.metrics().empty()) return absl::OkStatus();
  job->AddMetrics(request.metrics());
  RunAutoModeLocked(state_, lifecycle_, *job);
  return absl::OkStatus();
}

absl::Status JobProgress::ReportLogLines(const ReportMetricsRequest& request) {
  if (!request.metrics().empty()) {
    return absl::InvalidArgumentError(
        "a metrics report carries step metrics or log lines, not both "
        "(nothing recorded)");
  }
  if (request.log_lines_size() > kMaxLogLinesPerReport) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a metrics report carries ", request.log_lines_size(),
        " log lines; at most ", kMaxLogLinesPerReport, " (nothing recorded)"));
  }
  absl::MutexLock lock(&state_.mu);
  RETURN_IF_ERROR(
      state_.workers.Authenticate(request.worker_id(), request.credential()));
  ASSIGN_OR_RETURN(Job * job, state_.FindJobLocked(request.job_id()));
  // Lines are taken after the job ended too (its last words are often the
  // interesting ones), but only from the workers that hold its ranks.
  const std::vector<int> ranks = job->RanksOn(request.worker_id());
  if (ranks.empty()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "worker '", request.worker_id(), "' hosts no rank of job ", job->id(),
        "; only a job's own workers may send its log lines (nothing "
        "recorded)"));
  }
  for (const JobLogLine& line : request.log_lines()) {
    if (line.rank() >= 0 && !job->HostsRank(request.worker_id(), line.rank())) {
      return Annotate(NotInJob(*job, request.worker_id(), line.rank()),
                      "log lines rejected (nothing recorded)");
    }
  }
  const WorkerRecord* worker = state_.workers.Find(request.worker_id());
  job->log().Append(request.log_lines(), request.worker_id(),
                    worker == nullptr ? "" : worker->host);
  return absl::OkStatus();
}

absl::StatusOr<GetJobLogsResponse> JobProgress::GetJobLogs(
    const GetJobLogsRequest& request) const {
  if (request.from_seq() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "from_seq is ", request.from_seq(), "; log lines count from 0"));
  }
  absl::MutexLock lock(&state_.mu);
  ASSIGN_OR_RETURN(const Job* job, state_.FindJobLocked(request.job_id()));
  if (request.has_rank() &&
      (request.rank() < 0 || request.rank() >= job->world_size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job ", job->id(), " has no rank ", request.rank(), " (it has ",
        job->world_size(), job->world_size() == 1 ? " rank" : " ranks", ")"));
  }
  GetJobLogsResponse response = job->log().Read(
      request.from_seq(),
      request.has_rank() ? std::optional<int>(request.rank()) : std::nullopt,
      kMaxLogLinesPerReport * 4);
  response.set_state(job->state());
  return response;
}

absl::StatusOr<std::optional<JobEvent>> JobProgress::WaitForJobEvent(
    absl::string_view job_id, JobWatchCursor* cursor, absl::Time deadline,
    CancelledFn cancelled) {
  const std::string id(job_id);
  absl::MutexLock lock(&state_.mu);
  RETURN_IF_ERROR(state_.FindJobLocked(id).status());
  if (cursor->done) return std::nullopt;
  const absl::Status status = state_.AwaitLocked(
      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu) {
        const Job* job = state_.jobs.Find(id);
        return job == nullptr || job->version() > cursor->version ||
               static_cast<int64_t>(job->metrics().size()) >
                   cursor->metrics_sent;
      },
      deadline, cancelled);
  if (status.code() == absl::StatusCode::kDeadlineExceeded) {
    return std::nullopt;
  }
  RETURN_IF_ERROR(status);
  ASSIGN_OR_RETURN(const Job* job, state_.FindJobLocked(id));
  JobEvent event;
  *event.mutable_status() = job->Status();
  const std::vector<StepMetrics>& metrics = job->metrics();
  const int64_t end =
      std::min(static_cast<int64_t>(metrics.size()),
               cursor->metrics_sent + int64_t{kMaxStepsPerEvent});
  for (int64_t i = cursor->metrics_sent; i < end; ++i) {
    *event.add_steps() = metrics[i];
  }
  cursor->version = job->version();
  cursor->metrics_sent = end;
  cursor->done =
      IsFinal(job->state()) && end == static_cast<int64_t>(metrics.size());
  return event;
}

absl::StatusOr<GetMetricsResponse> JobProgress::GetMetrics(
    const GetMetricsRequest& request) const {
  absl::MutexLock lock(&state_.mu);
  ASSIGN_OR_RETURN(const Job* job, state_.FindJobLocked(request.job_id()));
  GetMetricsResponse response;
  response.mutable_metrics()->Reserve(static_cast<int>(job->metrics().size()));
  for (const StepMetrics& step : job->metrics()) {
    *response.add_metrics() = step;
  }
  for (const auto& [shard, stats] : job->shard_stats()) {
    *response.add_shards() = stats;
  }
  return response;
}

}  // namespace gradsync
