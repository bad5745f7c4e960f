// MetricsReporter: sends a job's step metrics to the coordinator
// (ReportMetrics) from its own thread, so that the ranks' step loops never
// wait for the network. Add() only queues; the sender takes everything
// queued (every local rank's metrics of the steps since the last report)
// into one request, at most one every min_interval: a small model's steps
// take milliseconds, and a report per step and worker cost the coordinator
// a sixth of a 2-core host's CPU in a 4-rank job. Flush and closing send
// at once.
//
//   MetricsReporter reporter(client, "w-1", "job-3", {}, log);
//   trainer sink: [&](const StepMetrics& m) { reporter.Add(m); }
//   ...
//   reporter.Flush(absl::Now() + absl::Seconds(10));  // before SUCCEEDED
//
// The job's log lines (AddLogLine) travel the same way, in reports of their
// own (a report carries metrics or lines), at most kMaxLogLinesPerReport
// at a time; beyond kMaxQueuedLogLines the oldest are dropped.
//
// Metrics are best effort, but outlive a coordinator restart: while the
// coordinator is unreachable (UNAVAILABLE, DEADLINE_EXCEEDED) a request is
// retried every retry_delay for up to outage_tolerance, and the steps
// queue behind it; other errors drop it (counted, and logged once). A
// queue over max_queued drops its oldest entries. They never fail the job.
//
// Errors: Flush returns DEADLINE_EXCEEDED when metrics added before it are
// still unsent at its deadline.
// Threading: thread-safe. The destructor flushes for up to
// options.close_timeout, then stops the sender.
#ifndef GRADSYNC_WORKER_DAEMON_METRICS_REPORTER_H_
#define GRADSYNC_WORKER_DAEMON_METRICS_REPORTER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/cancellable_calls.h"
#include "proto/coordinator.pb.h"
#include "server/coordinator/coordinator_client.h"

namespace gradsync {

using LogFn = std::function<void(absl::string_view)>;

inline constexpr size_t kMaxQueuedLogLines = 1000;

// The rank a job's log line is about: N when it starts "rank N" followed by
// ':', ' ' or its end; -1 otherwise.
int LogLineRank(absl::string_view line);

struct MetricsReporterOptions {
  absl::Duration rpc_timeout = absl::Seconds(10);
  // The worker's credential (RegisterWorkerResponse), sent with each batch.
  std::string credential;
  size_t max_batch = 4096;      // metrics per request
  size_t max_queued = 1 << 20;  // beyond this the oldest are dropped
  absl::Duration retry_delay = absl::Milliseconds(200);
  // Least time between two reports' starts (0: send as soon as queued).
  absl::Duration min_interval = absl::Milliseconds(100);
  // How long a coordinator may stay unreachable (a restart) before the
  // metrics of that time are dropped.
  absl::Duration outage_tolerance = absl::Minutes(2);
  absl::Duration close_timeout = absl::Seconds(5);
};

class MetricsReporter {
 public:
  MetricsReporter(std::shared_ptr<CoordinatorClient> client,
                  std::string worker_id, std::string job_id,
                  MetricsReporterOptions options, LogFn log);
  ~MetricsReporter();

  MetricsReporter(const MetricsReporter&) = delete;
  MetricsReporter& operator=(const MetricsReporter&) = delete;

  // Queues `metrics`; never blocks on the network.
  void Add(const StepMetrics& metrics);

  // Queues a line the worker logged about the job (`rank` -1: about no one
  // rank); never blocks on the network.
  void AddLogLine(int rank, absl::string_view text);

  // Waits until every metric and log line added before the call was sent
  // or dropped.
  [[nodiscard]] absl::Status Flush(absl::Time deadline);

  int64_t sent() const;
  int64_t dropped() const;

 private:
  void SendLoop();
  // Sends one batch (one retry when the coordinator was unreachable).
  [[nodiscard]] absl::Status Send(const ReportMetricsRequest& request);
  void Log(absl::string_view line) const;

  const std::shared_ptr<CoordinatorClient> client_;
  const std::string worker_id_;
  const std::string job_id_;
  const MetricsReporterOptions options_;
  const LogFn log_;

  mutable absl::Mutex mu_;
  std::deque<StepMetrics> queue_ ABSL_GUARDED_BY(mu_);
  int64_t added_ ABSL_GUARDED_BY(mu_) = 0;  // ever queued
  int64_t done_ ABSL_GUARDED_BY(mu_) = 0;   // sent or dropped
  int64_t sent_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<JobLogLine> lines_ ABSL_GUARDED_BY(mu_);
  int64_t lines_added_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t lines_done_ ABSL_GUARDED_BY(mu_) = 0;  // sent or dropped
  bool logged_drop_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int flushing_ ABSL_GUARDED_BY(mu_) = 0;      // Flush calls waiting
  bool abandon_ ABSL_GUARDED_BY(mu_) = false;  // closing ran out of time
  bool logged_outage_ ABSL_GUARDED_BY(mu_) = false;
  // The sender's RPC, cancelled when closing runs out of time.
  CancellableCalls calls_;
  std::thread sender_;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_DAEMON_METRICS_REPORTER_H_
