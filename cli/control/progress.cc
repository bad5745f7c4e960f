#include "cli/control/progress.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/control/job_format.h"
#include "cli/framework/format.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

// Clears the terminal line the cursor is on.
constexpr char kClearLine[] = "\r\x1b[K";

void Accumulate(const StepMetrics& m, StepBreakdown* row) {
  ++row->steps;
  row->compute_s += m.compute_s();
  row->comm_s += m.comm_s();
  row->idle_s += m.idle_s();
  row->step_s += m.step_s();
  row->bytes_sent += static_cast<double>(m.bytes_sent());
  row->bytes_received += static_cast<double>(m.bytes_received());
  if (m.sync_busy_s() > 0) {
    row->sync_bytes += static_cast<double>(m.sync_bytes());
    row->bus_bytes += m.busbw_gbps() * 1e9 * m.sync_busy_s();
    row->busy_s += m.sync_busy_s();
  }
}

void Average(StepBreakdown* row) {
  if (row->steps == 0) return;
  const double n = static_cast<double>(row->steps);
  row->compute_s /= n;
  row->comm_s /= n;
  row->idle_s /= n;
  row->step_s /= n;
  row->bytes_sent /= n;
  row->bytes_received /= n;
  if (row->busy_s > 0) {
    row->algbw_gbps = row->sync_bytes / row->busy_s / 1e9;
    row->busbw_gbps = row->bus_bytes / row->busy_s / 1e9;
  }
}

// GB/s with two decimals; "-" for none.
std::string FormatGbps(double gbps) {
  return gbps > 0 ? absl::StrFormat("%.2f", gbps) : std::string("-");
}

double Share(double part, double whole) {
  return whole > 0 ? part / whole : std::nan("");
}

}  // namespace

namespace {

// How much of the line to show: each level drops one more part, so that
// the line fits a narrow terminal (FitProgressLine).
enum class Detail { kFull, kNoBusbw, kNoThroughput, kNoComm, kStepOnly };

std::string ProgressLine(const ProgressSnapshot& s, int bar_width,
                         Detail detail) {
  std::string line;
  if (bar_width > 0 && s.total_steps > 0) {
    const double done = std::clamp(
        static_cast<double>(s.steps_done) / static_cast<double>(s.total_steps),
        0.0, 1.0);
    const int filled = static_cast<int>(std::floor(done * bar_width));
    absl::StrAppend(&line, "[", std::string(filled, '#'),
                    std::string(bar_width - filled, '-'), "] ");
  }
  absl::StrAppend(&line, "step ", s.has_metrics ? s.steps_done : 0);
  if (s.total_steps > 0) absl::StrAppend(&line, "/", s.total_steps);
  absl::StrAppend(&line, "  ");
  if (s.has_metrics && detail != Detail::kStepOnly) {
    absl::StrAppendFormat(&line, "loss %.4f  ", s.loss);
    if (detail < Detail::kNoThroughput) {
      absl::StrAppendFormat(&line, "%.0f samples/s  ", s.samples_per_s);
    }
    if (detail < Detail::kNoComm) {
      absl::StrAppend(&line, "comm ", FormatPercent(s.comm_share), "  ");
    }
    if (detail < Detail::kNoBusbw && s.busbw_gbps > 0) {
      absl::StrAppendFormat(&line, "busbw %.2f GB/s  ", s.busbw_gbps);
    }
    if (detail < Detail::kNoComm) {
      absl::StrAppend(&line, SyncModeName(s.mode), "  ");
    }
  }
  absl::StrAppend(&line, JobStateName(s.state));
  return line;
}

}  // namespace

std::string FormatProgressLine(const ProgressSnapshot& s, int bar_width) {
  return ProgressLine(s, bar_width, Detail::kFull);
}

std::string FitProgressLine(const ProgressSnapshot& s, int bar_width,
                            int width) {
  if (width <= 0) return FormatProgressLine(s, bar_width);
  // The last column stays free: a line that fills it wraps on some
  // terminals, and \r then redraws only its last row.
  const size_t fits = static_cast<size_t>(std::max(width - 1, 1));
  std::string line = ProgressLine(s, bar_width, Detail::kFull);
  if (line.size() <= fits) return line;
  // A shorter bar, down to 10 cells.
  const size_t text = ProgressLine(s, 0, Detail::kFull).size();
  constexpr int kMinBar = 10;
  if (bar_width > kMinBar && s.total_steps > 0 && text + kMinBar + 3 <= fits) {
    return ProgressLine(s, static_cast<int>(fits - text - 3), Detail::kFull);
  }
  for (Detail detail : {Detail::kFull, Detail::kNoBusbw, Detail::kNoThroughput,
                        Detail::kNoComm, Detail::kStepOnly}) {
    line = ProgressLine(s, 0, detail);
    if (line.size() <= fits) return line;
  }
  line.resize(fits);
  return line;
}

ProgressTracker::ProgressTracker(ProgressOptions options, std::ostream* out)
    : options_(options), out_(out) {}

void ProgressTracker::OnEvent(const JobEvent& event) {
  const bool state_changed =
      !has_status_ || event.status().state() != status_.state();
  status_ = event.status();
  has_status_ = true;
  for (const StepMetrics& metric : event.steps()) AddMetric(metric);
  if (out_ == nullptr) return;
  if (state_changed) {
    std::string line = absl::StrCat("job ", status_.job_id(), ": ",
                                    JobStateName(status_.state()));
    if (status_.state() == JOB_STATE_RUNNING && !status_.ranks().empty()) {
      absl::StrAppend(&line, " on ", status_.ranks_size(), " ranks");
    }
    if (!status_.message().empty() && !IsTerminal(status_.state())) {
      absl::StrAppend(&line, " (", status_.message(), ")");
    }
    PrintLine(line);
  }
  for (; switches_printed_ < status_.switches_size(); ++switches_printed_) {
    const SwitchRecord& s = status_.switches(switches_printed_);
    PrintLine(absl::StrCat(
        "job ", status_.job_id(), ": switched ", SyncModeName(s.from_mode()),
        " -> ", SyncModeName(s.to_mode()), " at step ", s.step(),
        s.epoch() > 0 ? absl::StrCat(" (request ", s.epoch())
                      : std::string(" (scripted"),
        s.move_s() > 0 ? absl::StrCat("; state moved in ",
                                      FormatMillis(s.move_s()), " ms)")
                       : std::string(")")));
  }
  PrintProgress();
}

void ProgressTracker::AddMetric(const StepMetrics& metric) {
  metrics_.push_back(metric);
  if (lead_rank_ < 0 || metric.rank() < lead_rank_) {
    lead_rank_ = metric.rank();
    window_.clear();
  }
  if (metric.rank() != lead_rank_) return;
  window_.push_back(metric);
  while (static_cast<int>(window_.size()) > std::max(1, options_.window)) {
    window_.pop_front();
  }
}

ProgressSnapshot ProgressTracker::Snapshot() const {
  ProgressSnapshot s;
  s.state = status_.state();
  s.total_steps = std::max<int64_t>(0, status_.spec().steps());
  if (window_.empty()) return s;
  s.has_metrics = true;
  s.steps_done = window_.back().step() + 1;
  s.loss = window_.back().loss();
  s.mode = window_.back().mode();
  double samples = 0;
  StepBreakdown sums;
  for (const StepMetrics& m : window_) {
    samples += static_cast<double>(m.samples());
    Accumulate(m, &sums);
  }
  const int world = status_.ranks_size() > 0 ? status_.ranks_size()
                                             : status_.spec().num_workers();
  s.samples_per_s =
      sums.step_s > 0 ? samples * std::max(1, world) / sums.step_s : 0;
  s.comm_share = Share(sums.comm_s, sums.step_s);
  Average(&sums);
  s.busbw_gbps = sums.busbw_gbps;
  return s;
}

void ProgressTracker::PrintLine(const std::string& line) {
  if (bar_open_) {
    *out_ << kClearLine;
    bar_open_ = false;
  }
  *out_ << line << "\n" << std::flush;
}

void ProgressTracker::PrintProgress() {
  const ProgressSnapshot snapshot = Snapshot();
  if (options_.tty) {
    // A line as wide as the terminal wraps, and \r then redraws only its
    // last row: fit it to the terminal as it is now (it may be resized).
    const int width =
        options_.current_width ? options_.current_width() : options_.width;
    const std::string line =
        FitProgressLine(snapshot, options_.bar_width, width);
    const absl::Time now = absl::Now();
    if (bar_open_ && line == drawn_line_) return;
    if (bar_open_ && !IsTerminal(snapshot.state) &&
        now - drawn_at_ < options_.redraw_interval) {
      return;
    }
    *out_ << kClearLine << line << std::flush;
    bar_open_ = true;
    drawn_line_ = line;
    drawn_at_ = now;
    return;
  }
  if (!snapshot.has_metrics || snapshot.steps_done == printed_steps_) return;
  int64_t every = options_.every_steps;
  if (every <= 0) {
    every = snapshot.total_steps > 0
                ? std::max<int64_t>(1, snapshot.total_steps / 20)
                : 10;
  }
  const bool due = printed_steps_ < 0
                       ? snapshot.steps_done >= every
                       : snapshot.steps_done >= printed_steps_ + every;
  const bool last =
      IsTerminal(snapshot.state) ||
      (snapshot.total_steps > 0 && snapshot.steps_done >= snapshot.total_steps);
  if (!due && !last) return;
  printed_steps_ = snapshot.steps_done;
  *out_ << FormatProgressLine(snapshot, /*bar_width=*/0) << "\n" << std::flush;
}

void ProgressTracker::Finish() {
  if (out_ != nullptr && bar_open_) {
    *out_ << "\n" << std::flush;
    bar_open_ = false;
  }
}

std::vector<StepBreakdown> ComputeBreakdown(
    const std::vector<StepMetrics>& metrics) {
  std::map<int, StepBreakdown> by_rank;
  StepBreakdown all;
  all.label = "all";
  for (const StepMetrics& m : metrics) {
    StepBreakdown& row = by_rank[m.rank()];
    row.label = absl::StrCat(m.rank());
    Accumulate(m, &row);
    Accumulate(m, &all);
  }
  std::vector<StepBreakdown> rows;
  if (by_rank.empty()) return rows;
  for (auto& [rank, row] : by_rank) {
    Average(&row);
    rows.push_back(row);
  }
  Average(&all);
  rows.push_back(all);
  return rows;
}

std::vector<StepBreakdown> ComputeModeBreakdown(
    const std::vector<StepMetrics>& metrics) {
  std::map<std::string, StepBreakdown> by_mode;
  for (const StepMetrics& m : metrics) {
    const std::string mode = SyncModeName(m.mode());
    StepBreakdown& row = by_mode[mode];
    row.label = mode;
    Accumulate(m, &row);
  }
  std::vector<StepBreakdown> rows;
  for (auto& [mode, row] : by_mode) {
    Average(&row);
    rows.push_back(row);
  }
  return rows;
}

std::string FormatBreakdownTable(const std::vector<StepBreakdown>& rows,
                                 const std::string& key, double ideal_busbw) {
  std::vector<std::vector<std::string>> cells;
  for (const StepBreakdown& row : rows) {
    cells.push_back(
        {row.label, absl::StrCat(row.steps), FormatMillis(row.compute_s),
         FormatMillis(row.comm_s), FormatMillis(row.idle_s),
         FormatMillis(row.step_s), FormatPercent(Share(row.comm_s, row.step_s)),
         FormatBytes(row.bytes_sent), FormatBytes(row.bytes_received),
         FormatGbps(row.algbw_gbps), FormatGbps(row.busbw_gbps)});
    if (ideal_busbw > 0) {
      cells.back().push_back(row.busbw_gbps > 0
                                 ? FormatPercent(row.busbw_gbps / ideal_busbw)
                                 : std::string("-"));
    }
  }
  std::vector<std::string> header = {
      key,    "STEPS",     "COMPUTE_MS", "COMM_MS", "IDLE_MS", "STEP_MS",
      "COMM", "SENT/STEP", "RECV/STEP",  "ALGBW",   "BUSBW"};
  if (ideal_busbw > 0) header.push_back("OF_IDEAL");
  return FormatTable(header, cells);
}

std::string BreakdownToJson(const std::vector<StepBreakdown>& rows) {
  std::vector<std::string> items;
  for (const StepBreakdown& row : rows) {
    items.push_back(absl::StrCat(
        "{\"rank\":", JsonQuote(row.label), ",\"steps\":", row.steps,
        ",\"computeS\":", JsonNumber(row.compute_s), ",\"commS\":",
        JsonNumber(row.comm_s), ",\"idleS\":", JsonNumber(row.idle_s),
        ",\"stepS\":", JsonNumber(row.step_s),
        ",\"bytesSent\":", JsonNumber(row.bytes_sent),
        ",\"bytesReceived\":", JsonNumber(row.bytes_received),
        ",\"algbwGbps\":", JsonNumber(row.algbw_gbps),
        ",\"busbwGbps\":", JsonNumber(row.busbw_gbps), "}"));
  }
  return absl::StrCat("[", absl::StrJoin(items, ","), "]");
}

std::string FormatFinalReport(const JobStatus& status,
                              const std::vector<StepMetrics>& metrics) {
  std::string out =
      absl::StrCat("job ", status.job_id(), " ", JobStateName(status.state()));
  int64_t steps = 0;
  for (const StepMetrics& m : metrics) steps = std::max(steps, m.step() + 1);
  if (status.state() == JOB_STATE_SUCCEEDED) {
    absl::StrAppend(&out, " after ", steps, " steps");
    if (status.start_time() > 0 && status.end_time() >= status.start_time()) {
      absl::StrAppend(&out, " in ",
                      FormatElapsed(status.end_time() - status.start_time()));
    }
    if (status.spec().model().kind() == "entrypoint") {
      // The user's program evaluates itself: its output says how.
      absl::StrAppend(&out, " (its output: gradsync logs ", status.job_id(),
                      ")\n");
    } else {
      absl::StrAppendFormat(&out, ": test accuracy %.4f (loss %.4f)\n",
                            status.test_accuracy(), status.test_loss());
    }
  } else {
    absl::StrAppend(&out, status.message().empty() ? "" : ": ",
                    status.message(), "\n");
  }
  const std::vector<StepBreakdown> rows = ComputeBreakdown(metrics);
  if (!rows.empty()) {
    absl::StrAppend(&out, "\nper-step breakdown (means):\n",
                    FormatBreakdownTable(rows));
  }
  const std::vector<StepBreakdown> modes = ComputeModeBreakdown(metrics);
  if (modes.size() > 1 || (modes.size() == 1 && modes[0].label == "ps")) {
    // Side by side: what each path cost the same job (steps of all ranks).
    absl::StrAppend(&out, "\nper-step breakdown by sync mode (means):\n",
                    FormatBreakdownTable(modes, "MODE"));
  }
  return out;
}

}  // namespace control
}  // namespace cli
}  // namespace gradsync
