// Following a job: the progress line of `gradsync submit --follow` and
// `gradsync watch`, and the per-step time breakdown printed at the end.
//
// ProgressTracker consumes the JobEvents of the WatchJob stream. On a
// terminal it redraws one line in place (\r) with a bar; otherwise it
// prints one line every `every_steps` steps, so that logs stay short.
// State changes (PENDING -> RENDEZVOUS -> RUNNING -> ...) get a line of
// their own in both cases.
//
// The line reads the lead rank (the lowest rank reporting, normally 0)
// over its last few steps:
//   [######------------] step 37/100  loss 0.4312  5120 samples/s
//   comm 23.1%  ps  RUNNING
// where samples/s is the global throughput (the lead rank's samples times
// the world size, over its step time), comm is the share of the step
// spent in exposed communication (comm_s / step_s) and ring/ps the mode of
// the lead rank's latest step. Each switch the ranks make (a new entry in
// JobStatus.switches) gets a line of its own: "job j-1: switched ring ->
// ps at step 120 (request 1)".
//
// Threading: one thread at a time.
#ifndef GRADSYNC_CLI_CONTROL_PROGRESS_H_
#define GRADSYNC_CLI_CONTROL_PROGRESS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "proto/coordinator.pb.h"

namespace gradsync {
namespace cli {
namespace control {

// What the progress line shows.
struct ProgressSnapshot {
  JobState state = JOB_STATE_UNSPECIFIED;
  int64_t steps_done = 0;   // lead rank's last step + 1
  int64_t total_steps = 0;  // 0: unknown (the job runs by epochs)
  bool has_metrics = false;
  double loss = 0;
  double samples_per_s = 0;
  double comm_share = 0;
  double busbw_gbps = 0;  // time-weighted over the window; 0: untimed
  SyncMode mode = SYNC_MODE_UNSPECIFIED;  // the lead rank's (unset: ring)
};

// The line, without \r or newline; with a bar of `bar_width` cells when
// bar_width > 0 and the total is known.
std::string FormatProgressLine(const ProgressSnapshot& snapshot, int bar_width);

// The line for a terminal `width` columns wide, at most width - 1 long
// (so that the \r redraw never wraps): the whole line; else with a bar
// shortened to fit (at least 10 cells); else without the bar, then without
// busbw, samples/s, comm and mode, and loss in turn; else cut. width <= 0:
// FormatProgressLine. Pure.
std::string FitProgressLine(const ProgressSnapshot& snapshot, int bar_width,
                            int width);

struct ProgressOptions {
  bool tty = false;
  // Not a terminal: a line every this many steps; 0 picks total/20 (at
  // least 1), or 10 when the total is unknown.
  int64_t every_steps = 0;
  int bar_width = 24;
  // On a terminal, its width in columns: the line fits in it
  // (FitProgressLine), so that the \r redraw never wraps. 0: no limit.
  int width = 0;
  // When set, the terminal's width at each redraw (it may be resized while
  // the job runs), used instead of `width`.
  std::function<int()> current_width;
  // On a terminal, the line is redrawn at most this often (and only when
  // it changed); events arrive once per rank and step.
  absl::Duration redraw_interval = absl::Milliseconds(100);
  // Lead-rank steps averaged for samples/s, comm share and busbw.
  int window = 10;
};

class ProgressTracker {
 public:
  // `out` receives the progress lines; nullptr: collect only (--json).
  ProgressTracker(ProgressOptions options, std::ostream* out);

  // Records the event's status and metrics, and prints what changed.
  void OnEvent(const JobEvent& event);
  // Ends the in-place line on a terminal (prints the newline it owes).
  void Finish();

  ProgressSnapshot Snapshot() const;
  const JobStatus& status() const { return status_; }
  bool has_status() const { return has_status_; }
  // Every metric received, in arrival order.
  const std::vector<StepMetrics>& metrics() const { return metrics_; }

 private:
  void AddMetric(const StepMetrics& metric);
  void PrintLine(const std::string& line);
  void PrintProgress();

  ProgressOptions options_;
  std::ostream* out_;
  JobStatus status_;
  bool has_status_ = false;
  int switches_printed_ = 0;  // entries of status_.switches given a line
  std::vector<StepMetrics> metrics_;
  int lead_rank_ = -1;
  std::deque<StepMetrics> window_;  // the lead rank's last steps
  int64_t printed_steps_ = -1;      // steps_done of the last line printed
  bool bar_open_ = false;           // a \r line is on the terminal
  std::string drawn_line_;          // what the \r line shows
  absl::Time drawn_at_ = absl::InfinitePast();
};

// Mean time and traffic per step, for one rank or for all.
struct StepBreakdown {
  std::string label;  // the rank, or "all"
  int64_t steps = 0;
  double compute_s = 0;
  double comm_s = 0;
  double idle_s = 0;
  double step_s = 0;
  double bytes_sent = 0;
  double bytes_received = 0;
  // Over the steps whose synchronisation was timed (sync_busy_s > 0):
  // their S over their busy time, and likewise the bus bytes (busbw * busy
  // per step), in GB/s; 0 when no step was timed. So each is a
  // time-weighted mean of the steps' algbw / busbw.
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  // Accumulated before the means are taken.
  double sync_bytes = 0;
  double bus_bytes = 0;
  double busy_s = 0;
};

// One row per rank (ascending), then "all" over every rank's steps; empty
// without metrics.
std::vector<StepBreakdown> ComputeBreakdown(
    const std::vector<StepMetrics>& metrics);

// One row per sync mode the job ran in ("ps", "ring"), over every rank's
// steps in that mode; empty without metrics.
std::vector<StepBreakdown> ComputeModeBreakdown(
    const std::vector<StepMetrics>& metrics);

// RANK STEPS COMPUTE_MS COMM_MS IDLE_MS STEP_MS COMM SENT/STEP RECV/STEP
// ALGBW BUSBW (GB/s); `key` names the first column. With `ideal_busbw` > 0
// (GB/s, IdealBusBandwidth) a last column OF_IDEAL gives busbw / ideal.
std::string FormatBreakdownTable(const std::vector<StepBreakdown>& rows,
                                 const std::string& key = "RANK",
                                 double ideal_busbw = 0);
// [{"rank":"0","steps":100,"computeS":...,...},...]
std::string BreakdownToJson(const std::vector<StepBreakdown>& rows);

// The closing lines: "job j-1 SUCCEEDED after 100 steps in 12.3 s: test
// accuracy 0.8421 (loss 0.4312)" or "job j-1 FAILED: <message>", then the
// breakdown table when there are metrics.
std::string FormatFinalReport(const JobStatus& status,
                              const std::vector<StepMetrics>& metrics);

}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_PROGRESS_H_
