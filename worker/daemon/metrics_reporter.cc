#include "worker/daemon/metrics_reporter.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace gradsync {

int LogLineRank(absl::string_view line) {
  if (!absl::ConsumePrefix(&line, "rank ")) return -1;
  size_t digits = 0;
  while (digits < line.size() && digits < 9 &&
         absl::ascii_isdigit(line[digits])) {
    ++digits;
  }
  if (digits == 0) return -1;
  if (digits < line.size() && line[digits] != ':' && line[digits] != ' ') {
    return -1;
  }
  int rank = -1;
  return absl::SimpleAtoi(line.substr(0, digits), &rank) ? rank : -1;
}

MetricsReporter::MetricsReporter(std::shared_ptr<CoordinatorClient> client,
                                 std::string worker_id, std::string job_id,
                                 MetricsReporterOptions options, LogFn log)
    : client_(std::move(client)),
      worker_id_(std::move(worker_id)),
      job_id_(std::move(job_id)),
      options_(options),
      log_(std::move(log)) {
  sender_ = std::thread([this] { SendLoop(); });
}

MetricsReporter::~MetricsReporter() {
  if (!Flush(absl::Now() + options_.close_timeout).ok()) {
    {
      absl::MutexLock lock(&mu_);
      abandon_ = true;
    }
    calls_.CancelAll(absl::CancelledError("metrics reporter closed"));
  }
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  sender_.join();
  absl::MutexLock lock(&mu_);
  if (dropped_ > 0) {
    Log(absl::StrCat("job ", job_id_, ": ", dropped_, " of ", added_,
                     " step metrics could not be sent to the coordinator"));
  }
}

void MetricsReporter::Log(absl::string_view line) const {
  if (log_) log_(line);
}

void MetricsReporter::Add(const StepMetrics& metrics) {
  absl::MutexLock lock(&mu_);
  if (queue_.size() >= options_.max_queued) {
    queue_.pop_front();
    ++dropped_;
    ++done_;
  }
  queue_.push_back(metrics);
  ++added_;
}

void MetricsReporter::AddLogLine(int rank, absl::string_view text) {
  JobLogLine line;
  line.set_rank(rank);
  line.set_time_unix_ms(absl::ToUnixMillis(absl::Now()));
  line.set_text(std::string(text));
  absl::MutexLock lock(&mu_);
  if (lines_.size() >= kMaxQueuedLogLines) {
    lines_.pop_front();
    ++lines_done_;
  }
  lines_.push_back(std::move(line));
  ++lines_added_;
}

absl::Status MetricsReporter::Flush(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  const int64_t target = added_;
  const int64_t lines_target = lines_added_;
  auto flushed = [this, target, lines_target]()
                     ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                       return done_ >= target && lines_done_ >= lines_target;
                     };
  ++flushing_;  // the sender stops waiting out min_interval
  const bool done = mu_.AwaitWithDeadline(absl::Condition(&flushed), deadline);
  --flushing_;
  if (done) return absl::OkStatus();
  return absl::DeadlineExceededError(
      absl::StrCat("job ", job_id_, ": ", target - done_,
                   " step metrics still unsent to the coordinator"));
}

int64_t MetricsReporter::sent() const {
  absl::MutexLock lock(&mu_);
  return sent_;
}

int64_t MetricsReporter::dropped() const {
  absl::MutexLock lock(&mu_);
  return dropped_;
}

absl::Status MetricsReporter::Send(const ReportMetricsRequest& request) {
  const absl::Time give_up = absl::Now() + options_.outage_tolerance;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&abandon_),
                               options_.retry_delay)) {
        return absl::CancelledError("metrics reporter closed");
      }
    }
    const absl::Status status =
        client_
            ->ReportMetrics(request,
                            {absl::Now() + options_.rpc_timeout, &calls_})
            .status();
    const bool unreachable =
        status.code() == absl::StatusCode::kUnavailable ||
        status.code() == absl::StatusCode::kDeadlineExceeded;
    if (!unreachable || absl::Now() >= give_up) return status;
    absl::MutexLock lock(&mu_);
    if (abandon_) return status;
    if (!logged_outage_) {
      logged_outage_ = true;
      Log(absl::StrCat("job ", job_id_, ": the coordinator is unreachable (",
                       status.ToString(),
                       "); holding step metrics and retrying for up to ",
                       absl::FormatDuration(options_.outage_tolerance)));
    }
  }
}

void MetricsReporter::SendLoop() {
  absl::Time next_send = absl::InfinitePast();
  while (true) {
    ReportMetricsRequest request;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_ || !queue_.empty() || !lines_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      // What else arrives before next_send rides along, unless someone
      // waits for it.
      auto hurry = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_ || flushing_ > 0;
      };
      mu_.AwaitWithDeadline(absl::Condition(&hurry), next_send);
      if (queue_.empty() && lines_.empty()) return;  // stopping, nothing left
      request.set_worker_id(worker_id_);
      request.set_credential(options_.credential);
      request.set_job_id(job_id_);
      if (queue_.empty()) {
        // A report of log lines only (the coordinator takes them after the
        // job ended too).
        const size_t n =
            std::min(lines_.size(), static_cast<size_t>(kMaxLogLinesPerReport));
        for (size_t i = 0; i < n; ++i) {
          *request.add_log_lines() = std::move(lines_.front());
          lines_.pop_front();
        }
      }
      const size_t n = std::min(queue_.size(), options_.max_batch);
      for (size_t i = 0; i < n; ++i) {
        *request.add_metrics() = std::move(queue_.front());
        queue_.pop_front();
      }
    }
    next_send = absl::Now() + options_.min_interval;
    const absl::Status status = Send(request);
    if (request.log_lines_size() > 0) {
      // Lost lines are not worth a line of their own in the worker's log.
      absl::MutexLock lock(&mu_);
      lines_done_ += request.log_lines_size();
      continue;
    }
    const int64_t n = request.metrics_size();
    absl::MutexLock lock(&mu_);
    done_ += n;
    if (status.ok()) {
      sent_ += n;
      if (logged_outage_) {
        logged_outage_ = false;
        Log(absl::StrCat("job ", job_id_,
                         ": the coordinator is reachable again; the step "
                         "metrics held meanwhile are sent"));
      }
      continue;
    }
    dropped_ += n;
    if (!logged_drop_) {
      logged_drop_ = true;
      Log(absl::StrCat("job ", job_id_,
                       ": step metrics dropped, ReportMetrics "
                       "failed: ",
                       status.ToString(), " (later drops are only counted)"));
    }
  }
}

}  // namespace gradsync
