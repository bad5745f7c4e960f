// JobProgress: what a job's ranks report (their lifecycle, step metrics)
// and what users read back (job events, metrics), over the shared
// CoordinatorState. A rank report may move the job on (all READY:
// RENDEZVOUS -> RUNNING) or end it (JobLifecycle).
//
// Threading: thread-safe; each call takes the state's mutex.
#ifndef GRADSYNC_SERVER_COORDINATOR_JOB_PROGRESS_H_
#define GRADSYNC_SERVER_COORDINATOR_JOB_PROGRESS_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/coordinator.pb.h"
#include "server/coordinator/coordinator_state.h"
#include "server/coordinator/job_lifecycle.h"

namespace gradsync {

// Where a watcher of one job is: what it has already been sent.
struct JobWatchCursor {
  int64_t version = 0;       // the job version of the last event sent
  int64_t metrics_sent = 0;  // how many of the job's step metrics were sent
  bool done = false;         // the job ended and everything was sent
};

class JobProgress {
 public:
  // Most step metrics in one JobEvent (keeps messages far below gRPC's
  // 4 MiB); the rest follow in the next events.
  static constexpr int kMaxStepsPerEvent = 4096;

  // `state` and `lifecycle` must outlive the progress.
  JobProgress(CoordinatorState* state, JobLifecycle* lifecycle)
      : state_(*state), lifecycle_(*lifecycle) {}
  JobProgress(const JobProgress&) = delete;
  JobProgress& operator=(const JobProgress&) = delete;

  // See CoordinatorService::ReportRank.
  [[nodiscard]] absl::Status ReportRank(const ReportRankRequest& request);
  // See CoordinatorService::ReportMetrics.
  [[nodiscard]] absl::Status ReportMetrics(const ReportMetricsRequest& request);
  // See CoordinatorService::GetJobLogs.
  [[nodiscard]] absl::StatusOr<GetJobLogsResponse> GetJobLogs(
      const GetJobLogsRequest& request) const;
  // See CoordinatorService::WaitForJobEvent.
  [[nodiscard]] absl::StatusOr<std::optional<JobEvent>> WaitForJobEvent(
      absl::string_view job_id, JobWatchCursor* cursor, absl::Time deadline,
      CancelledFn cancelled);
  // See CoordinatorService::GetMetrics.
  [[nodiscard]] absl::StatusOr<GetMetricsResponse> GetMetrics(
      const GetMetricsRequest& request) const;

 private:
  // ReportMetrics of a report that carries log lines.
  [[nodiscard]] absl::Status ReportLogLines(
      const ReportMetricsRequest& request);

  CoordinatorState& state_;
  JobLifecycle& lifecycle_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_JOB_PROGRESS_H_
