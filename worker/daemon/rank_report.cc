#include "worker/daemon/rank_report.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gradsync {

void ReportRankState(CoordinatorClient& client,
                     const ReportRankRequest& request,
                     absl::Duration rpc_timeout, absl::string_view coordinator,
                     const std::atomic<bool>& cancelled,
                     const std::function<void(absl::string_view)>& log) {
  absl::Status status;
  const absl::Time give_up = absl::Now() + kCoordinatorOutageTolerance;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) absl::SleepFor(kReportRetryDelay);
    status = client.ReportRank(request, {absl::Now() + rpc_timeout}).status();
    if ((status.code() != absl::StatusCode::kUnavailable &&
         status.code() != absl::StatusCode::kDeadlineExceeded) ||
        absl::Now() >= give_up || (cancelled.load() && attempt >= 2)) {
      break;
    }
    if (attempt == 0) {
      log(absl::StrCat("rank ", request.rank(),
                       ": the coordinator is unreachable (", status.ToString(),
                       "); retrying its ", RankState_Name(request.state()),
                       " report for up to ",
                       absl::FormatDuration(kCoordinatorOutageTolerance)));
    }
  }
  // FAILED_PRECONDITION: the job already ended (cancelled, or another rank
  // failed first); nothing to tell.
  if (!status.ok() && status.code() != absl::StatusCode::kFailedPrecondition) {
    log(absl::StrCat("rank ", request.rank(), ": ReportRank ",
                     RankState_Name(request.state()), " to ", coordinator,
                     " failed: ", status.ToString()));
  }
}

}  // namespace gradsync
