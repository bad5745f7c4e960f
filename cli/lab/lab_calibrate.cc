#include "cli/lab/lab_calibrate.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "cli/framework/format.h"
#include "cli/lab/lab_config.h"
#include "cli/lab/lab_state.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "study/sim/json_reader.h"

namespace gradsync {
namespace lab {
namespace {

// "ps N=4 K=2 16M 1 Gbit/s" (and " grpc" for a gRPC PS).
std::string CellLabel(const SweepCell& cell, sim::PsTransport transport) {
  const bool ps = cell.layout() != "ring";
  return absl::StrCat(
      cell.layout(), " N=", cell.workers(),
      ps ? absl::StrCat(" K=", cell.shards()) : "",
      absl::StrFormat(" %gM ", cell.bytes() / 1048576.0),
      DescribeLinkRate(cell.rate_bps()),
      ps && transport == sim::PsTransport::kGrpc ? " grpc" : "");
}

// The cell's layout in the simulator, or why it has none.
[[nodiscard]] absl::StatusOr<sim::SimLayout> CellLayout(const SweepCell& cell) {
  if (cell.layout() == "ring") {
    return cell.bytes() <= kLabHalvingDoublingMaxBytes
               ? sim::SimLayout::kHalvingDoubling
               : sim::SimLayout::kRing;
  }
  if (cell.layout() == "ps") return sim::SimLayout::kPsSeparate;
  if (cell.layout() == "ps-colocated") return sim::SimLayout::kPsColocated;
  return absl::InvalidArgumentError(
      absl::StrCat("layout '", cell.layout(), "' is not one calibrate knows"));
}

std::string Millis(double seconds) {
  return absl::StrFormat("%.1f", 1e3 * seconds);
}

std::string SignedPercent(double share) {
  return absl::StrFormat("%+.1f%%", 100 * share);
}

// Markdown's table: a header, its rule, the rows ('|' in cells escaped).
std::string MarkdownTable(const std::vector<std::string>& header,
                          const std::vector<std::vector<std::string>>& rows) {
  auto line = [](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (const std::string& c : cells) {
      std::string safe;
      for (char ch : c) {
        if (ch == '|') safe += '\\';
        safe += ch;
      }
      absl::StrAppend(&out, " ", safe, " |");
    }
    return out + "\n";
  };
  std::string out = line(header);
  out += "|";
  for (size_t i = 0; i < header.size(); ++i) out += " --- |";
  out += "\n";
  for (const std::vector<std::string>& row : rows) out += line(row);
  return out;
}

std::string Table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows,
                  bool markdown) {
  return markdown ? MarkdownTable(header, rows)
                  : cli::FormatTable(header, rows);
}

std::vector<std::vector<std::string>> ErrorRows(
    const std::vector<sim::CellError>& rows, const sim::ErrorTargets& targets,
    bool markdown) {
  std::vector<std::vector<std::string>> out;
  for (const sim::CellError& r : rows) {
    const bool beyond = sim::BeyondLimit(r, targets);
    out.push_back(
        {r.label, Millis(r.measured_s), Millis(r.simulated_s),
         SignedPercent(r.error),
         beyond ? (markdown ? absl::StrFormat("**beyond %.0f%%**",
                                              100 * targets.max_cell_abs_error)
                            : "!")
                : "",
         r.note});
  }
  return out;
}

}  // namespace

absl::StatusOr<SweepFile> ParseSweepJson(const std::string& json,
                                         const std::string& source) {
  SweepFile file;
  file.source = source;
  RETURN_IF_ERROR(ParseLabJson(json, source, &file.results));
  const std::string& transport = file.results.lab().ps_transport();
  if (transport == "grpc") {
    file.transport = sim::PsTransport::kGrpc;
  } else if (transport.empty()) {
    // A sweep from before LabSpec.ps_transport: ps_tensor_plane false (or
    // absent) meant gRPC, then the default.
    absl::StatusOr<sim::JsonValue> doc = sim::ParseJson(json);
    const sim::JsonValue* lab = doc.ok() ? doc->Find("lab") : nullptr;
    const sim::JsonValue* plane =
        lab != nullptr ? lab->Find("ps_tensor_plane") : nullptr;
    if (plane != nullptr && plane->is_bool() && !plane->boolean()) {
      file.transport = sim::PsTransport::kGrpc;
    }
  } else if (transport != "plane") {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": lab.ps_transport is '", transport,
                     "'; calibrate knows plane and grpc"));
  }
  return file;
}

SplitCells SplitSweepCells(const std::vector<SweepFile>& sweeps,
                           const CellSplit& split) {
  SplitCells out;
  for (const SweepFile& sweep : sweeps) {
    const int per_host = std::max(1, sweep.results.lab().workers_per_host());
    for (const SweepCell& cell : sweep.results.cells()) {
      const std::string label = CellLabel(cell, sweep.transport);
      auto skip = [&](const std::string& why) {
        out.skipped.push_back(absl::StrCat(label, ": ", why));
      };
      const absl::StatusOr<sim::SimLayout> layout = CellLayout(cell);
      if (!layout.ok()) {
        skip(std::string(layout.status().message()));
        continue;
      }
      if (!cell.error().empty()) {
        skip(absl::StrCat("the job failed (", cell.error(), ")"));
        continue;
      }
      if (!(cell.sync_s() > 0) || cell.bytes() < 4 || cell.rate_bps() <= 0) {
        skip("no timing, size or link rate recorded");
        continue;
      }
      if (!cell.profile().empty()) {
        skip(absl::StrCat("a ", cell.profile(),
                          " cell: its sync overlaps compute, which a bulk "
                          "cell does not model"));
        continue;
      }
      if (per_host > 1) {
        skip(absl::StrCat("the lab ran ", per_host,
                          " workers per host; calibrate models one"));
        continue;
      }
      sim::MeasuredCell m;
      m.label = label;
      m.layout = *layout;
      m.workers = cell.workers();
      m.servers = sim::IsPsLayout(*layout) ? cell.shards() : 0;
      m.bytes = static_cast<double>(cell.bytes());
      m.nic_Bps = static_cast<double>(cell.rate_bps()) / 8;
      m.partition_bytes = static_cast<double>(cell.partition_bytes());
      m.ps_pipelined = true;
      m.transport = sweep.transport;
      m.server_cores = split.server_cores;
      m.measured_s = cell.sync_s();
      std::vector<std::string> notes;
      if (cell.cpu_bound()) {
        notes.push_back(
            absl::StrFormat("CPUs %.0f%% busy", 100 * cell.cpu_busy()));
      }
      if (!cell.link_ok()) notes.push_back("links unverified");
      m.note = absl::StrJoin(notes, ", ");
      if (m.workers > split.max_workers) {
        out.held_out.push_back(std::move(m));
      } else if (!cell.link_ok() && !split.unverified_links) {
        skip(
            "its link probe failed, so its rate is unknown (fit it anyway "
            "with --unverified-links)");
      } else {
        out.fit.push_back(std::move(m));
      }
    }
  }
  return out;
}

void DescribeSource(const std::vector<SweepFile>& sweeps,
                    const std::string& hostname, int cores,
                    double fallback_time, sim::SimCalibration* calibration) {
  std::set<std::string> machines, commits;
  double newest = 0;
  for (const SweepFile& s : sweeps) {
    if (!s.results.machine().empty()) machines.insert(s.results.machine());
    if (!s.results.commit().empty()) commits.insert(s.results.commit());
    newest = std::max(newest, s.results.time());
  }
  calibration->machine = absl::StrCat("lab on ", hostname, ", ", cores,
                                      cores == 1 ? " core" : " cores");
  if (!machines.empty()) {
    absl::StrAppend(&calibration->machine, " (", absl::StrJoin(machines, "; "),
                    ")");
  }
  const double when = newest > 0 ? newest : fallback_time;
  calibration->date = absl::FormatTime(
      "%Y-%m-%d", absl::FromUnixSeconds(0) + absl::Seconds(when),
      absl::UTCTimeZone());
  calibration->commit =
      commits.empty() ? "unknown" : absl::StrJoin(commits, ",");
}

std::string FormatFit(const sim::CalibrationFit& fit, bool markdown) {
  std::vector<std::vector<std::string>> params;
  for (const sim::FittedParameter& p : fit.parameters) {
    params.push_back({p.name, JsonNumber(p.value, 4), p.note});
  }
  std::string out = Table({"MEMBER", "VALUE", "HOW"}, params, markdown);
  absl::StrAppend(
      &out, "\n", markdown ? "" : "the fitted cells:\n",
      Table({"CELL", "MEASURED ms", "SIMULATED ms", "ERROR", "", "NOTE"},
            ErrorRows(fit.cells, sim::ErrorTargets(), markdown), markdown),
      markdown ? "\n" : "",
      absl::StrFormat("fit: mean |error| %.1f%% over %d cells, "
                      "worst %s (%s); %d simulations\n",
                      100 * fit.summary.mean_abs_error, fit.summary.cells,
                      SignedPercent(fit.summary.worst_error),
                      fit.summary.worst_label, fit.simulations));
  return out;
}

std::string FormatSummary(const sim::ErrorSummary& s,
                          const sim::ErrorTargets& targets) {
  if (s.cells == 0) return "no held-out cells: nothing validated: MISS";
  return absl::StrFormat(
      "mean |error| %.1f%% over %d cells (target <= %.0f%%), worst %s (%s), "
      "%d beyond %.0f%%: %s",
      100 * s.mean_abs_error, s.cells, 100 * targets.max_mean_abs_error,
      SignedPercent(s.worst_error), s.worst_label, s.beyond_cell_limit,
      100 * targets.max_cell_abs_error, s.meets_target ? "PASS" : "MISS");
}

std::string FormatErrorTable(const std::vector<sim::CellError>& rows,
                             const sim::ErrorTargets& targets, bool markdown) {
  std::string out =
      Table({"CELL", "MEASURED ms", "SIMULATED ms", "ERROR", "", "NOTE"},
            ErrorRows(rows, targets, markdown), markdown);
  const sim::ErrorSummary s = sim::SummariseErrors(rows, targets);
  absl::StrAppend(&out, markdown ? "\n" : "", FormatSummary(s, targets), "\n");
  if (!markdown && s.beyond_cell_limit > 0) {
    absl::StrAppend(&out, "(! marks a cell beyond ",
                    absl::StrFormat("%.0f%%", 100 * targets.max_cell_abs_error),
                    ")\n");
  }
  return out;
}

}  // namespace lab
}  // namespace gradsync
