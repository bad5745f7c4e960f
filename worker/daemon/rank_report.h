// ReportRankState: a rank's lifecycle report (ReportRank: READY, SUCCEEDED,
// FAILED) from a worker to the coordinator, retried while the coordinator
// is unreachable (a restart on its --state-db takes seconds), shared by
// the job runners of built-in models (job_runner.h) and of entrypoints
// (worker/launch/entrypoint_runner.h).
//
// Retries: UNAVAILABLE and DEADLINE_EXCEEDED are retried every
// kReportRetryDelay for up to kCoordinatorOutageTolerance (three tries only
// once `cancelled` is set: a cancelled job's daemon may be shutting down).
// FAILED_PRECONDITION (the job already ended) is not an error here: there
// is nothing left to tell. Other failures are logged through `log`.
// Threading: thread-safe (no state).
#ifndef GRADSYNC_WORKER_DAEMON_RANK_REPORT_H_
#define GRADSYNC_WORKER_DAEMON_RANK_REPORT_H_

#include <atomic>
#include <functional>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/coordinator.pb.h"
#include "server/coordinator/coordinator_client.h"

namespace gradsync {

inline constexpr absl::Duration kCoordinatorOutageTolerance = absl::Minutes(2);
inline constexpr absl::Duration kReportRetryDelay = absl::Milliseconds(500);

// Sends `request` (worker id, credential, job, rank and state filled in)
// with `rpc_timeout` per try; `coordinator` names it in log lines.
void ReportRankState(CoordinatorClient& client,
                     const ReportRankRequest& request,
                     absl::Duration rpc_timeout, absl::string_view coordinator,
                     const std::atomic<bool>& cancelled,
                     const std::function<void(absl::string_view)>& log);

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_DAEMON_RANK_REPORT_H_
