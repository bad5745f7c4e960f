#include "cli/lab/lab_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/framework/format.h"
#include "cli/lab/lab_probe.h"
#include "common/json.h"
#include "common/status_macros.h"
#include "study/alpha_beta/layout_fit.h"
#include "study/sweep_findings.h"

namespace gradsync {
namespace lab {
namespace {

std::string Mib(int64_t bytes) {
  return absl::StrFormat("%g MiB", bytes / 1048576.0);
}

std::string Ms(double seconds) {
  return absl::StrFormat("%.1f", 1e3 * seconds);
}

std::string CellName(const SweepCell& c) {
  return absl::StrCat(c.layout(), " N=", c.workers(),
                      c.shards() > 0 ? absl::StrCat(" K=", c.shards()) : "",
                      " S=", Mib(c.bytes()));
}

// What the study's findings read of a cell.
study::SweepPoint SweepPointOf(const SweepCell& c) {
  study::SweepPoint p;
  p.layout = c.layout();
  p.workers = c.workers();
  p.shards = c.shards();
  p.bytes = c.bytes();
  p.rate_bps = c.rate_bps();
  p.partition_bytes = c.partition_bytes();
  p.sync_s = c.sync_s();
  p.predicted_s = c.predicted_s();
  return p;
}

}  // namespace

absl::StatusOr<SyncCase> CellCase(const SweepCell& cell,
                                  const ReportOptions& options) {
  ASSIGN_OR_RETURN(SyncLayout layout, ParseSyncLayout(cell.layout()));
  SyncCase c;
  c.layout = layout;
  c.workers = cell.workers();
  c.shards = layout == SyncLayout::kRing ? 1 : cell.shards();
  c.bytes = static_cast<double>(cell.bytes());
  c.pipelined = options.pipelined_ps;
  c.partition_bytes = static_cast<double>(cell.partition_bytes());
  RETURN_IF_ERROR(ValidateSyncCase(c));
  return c;
}

bool Trusted(const SweepCell& cell) {
  return cell.error().empty() && cell.link_ok() && !cell.cpu_bound() &&
         cell.sync_s() > 0;
}

absl::Status AnalyseSweep(SweepResults* results, const ReportOptions& options) {
  // With several link rates, one fit: B is a share of each cell's rate
  // (bytes are scaled to the fastest rate, and B fitted there).
  double reference_bps = 0;
  for (const SweepCell& cell : results->cells()) {
    reference_bps =
        std::max(reference_bps, static_cast<double>(cell.rate_bps()));
  }
  auto scale = [&](const SweepCell& cell) {
    return cell.rate_bps() > 0 ? reference_bps / cell.rate_bps() : 1.0;
  };
  std::vector<SyncObservation> observations;
  std::map<std::string, std::vector<SyncObservation>> by_layout;
  for (SweepCell& cell : *results->mutable_cells()) {
    ASSIGN_OR_RETURN(SyncCase c, CellCase(cell, options));
    const SyncCost cost = ModelCost(c);
    cell.set_latency_terms(cost.latency_terms);
    cell.set_link_bytes(cost.link_bytes);
    cell.set_pipelined(options.pipelined_ps);
    if (Trusted(cell)) {
      observations.push_back(
          {SyncCost{cost.latency_terms, cost.link_bytes * scale(cell)},
           cell.sync_s()});
      by_layout[cell.layout()].push_back(observations.back());
    }
  }
  if (observations.empty()) {
    return absl::InvalidArgumentError(
        "no cell can be trusted (each failed, ran on unverified links or "
        "was CPU-bound); nothing to fit");
  }
  // Nothing moves faster than the links' payload rate: a fit above it has
  // traded B against alpha (the cells do not tell them apart).
  ASSIGN_OR_RETURN(const study::LinkFit fit,
                   study::FitWithinLinks(
                       observations, LabPayloadBytesPerSecond(reference_bps)));
  const LinkModel& model = fit.model;
  std::string held;
  if (fit.unconstrained) {
    held = absl::StrFormat(
        " (held at the links' payload rate: alone, these cells put B at %.0f "
        "Mbit/s with alpha = %.0f us, above what the links carry; they do "
        "not separate alpha from B)",
        fit.unconstrained->bandwidth_Bps * 8 / 1e6,
        fit.unconstrained->alpha_s * 1e6);
  }
  results->set_alpha_s(model.alpha_s);
  results->set_bandwidth_bps(model.bandwidth_Bps);
  results->set_fitted_cells(static_cast<int>(observations.size()));
  double sum = 0, worst = 0;
  const SweepCell* worst_cell = nullptr;
  std::vector<std::string> notes;
  for (SweepCell& cell : *results->mutable_cells()) {
    if (cell.sync_s() <= 0) continue;
    const double predicted = PredictSeconds(
        SyncCost{cell.latency_terms(), cell.link_bytes() * scale(cell)}, model);
    cell.set_predicted_s(predicted);
    cell.set_relative_error(RelativeError(predicted, cell.sync_s()));
    const double miss = std::abs(cell.relative_error());
    if (Trusted(cell)) {
      sum += miss;
      if (miss >= worst) {
        worst = miss;
        worst_cell = &cell;
      }
    }
    if (miss > options.max_cell_error) {
      std::vector<std::string> why;
      if (cell.cpu_bound()) {
        why.push_back(absl::StrFormat("CPU-bound: the CPUs were %.0f%% busy",
                                      100 * cell.cpu_busy()));
      }
      if (!cell.link_ok()) why.push_back("its links failed the probe");
      if (cell.measured_steps() < 3)
        why.push_back("fewer than 3 measured steps");
      if (why.empty()) {
        why.push_back(absl::StrFormat(
            "link-bound by the probe and CPUs %.0f%% busy; the model misses "
            "it",
            100 * cell.cpu_busy()));
      }
      notes.push_back(absl::StrFormat(
          "note: %s is off by %+.0f%%: %s", CellName(cell),
          100 * cell.relative_error(), absl::StrJoin(why, "; ")));
    }
  }
  const double mean = sum / observations.size();
  results->set_mean_abs_error(mean);
  results->set_max_abs_error(worst);
  results->clear_findings();
  auto add = [&](std::string line) { results->add_findings(std::move(line)); };
  const bool fidelity =
      mean <= options.max_mean_error && worst <= options.max_cell_error;
  add(absl::StrFormat(
      "%s fidelity: mean |error| %.1f%% over %d trusted cells (target <= "
      "%.0f%%), largest %.1f%% (%s; target <= %.0f%%)",
      fidelity ? "PASS" : "MISS", 100 * mean,
      static_cast<int>(observations.size()), 100 * options.max_mean_error,
      100 * worst, worst_cell ? CellName(*worst_cell) : "-",
      100 * options.max_cell_error));
  add(absl::StrFormat(
      "fit: B = %.1f MB/s (%.0f Mbit/s, %.1f%% of the %g Mbit/s links; "
      "TCP/IP headers leave %.1f%%)%s, alpha = %.0f us; the PS model is %s",
      model.bandwidth_Bps / 1e6, model.bandwidth_Bps * 8 / 1e6,
      reference_bps > 0 ? 100 * model.bandwidth_Bps * 8 / reference_bps : 0,
      reference_bps / 1e6, 100 * ExpectedGoodput(1, kLabMss, kLabMtu), held,
      model.alpha_s * 1e6,
      options.pipelined_ps ? "pipelined (pull overlaps push)"
                           : "unpipelined (pull after every push)"));
  if (std::string line = study::PerLayoutFits(
          by_layout, reference_bps, LabPayloadBytesPerSecond(reference_bps));
      !line.empty()) {
    add(std::move(line));
  }
  int excluded = 0;
  for (const SweepCell& cell : results->cells()) excluded += !Trusted(cell);
  if (excluded > 0) {
    std::vector<std::string> names;
    for (const SweepCell& cell : results->cells()) {
      if (Trusted(cell)) continue;
      names.push_back(absl::StrCat(
          CellName(cell), " (",
          !cell.error().empty() ? "failed"
          : cell.cpu_bound()
              ? absl::StrFormat("CPU-bound, %.0f%% busy", 100 * cell.cpu_busy())
          : !cell.link_ok() ? "links unverified"
                            : "no timing",
          ")"));
    }
    add(absl::StrCat("left out of the fit: ", absl::StrJoin(names, ", ")));
  }
  std::vector<study::SweepPoint> trusted;
  for (const SweepCell& c : results->cells()) {
    if (Trusted(c)) trusted.push_back(SweepPointOf(c));
  }
  for (std::string& line :
       study::SweepFindings(trusted, model, reference_bps, options)) {
    add(std::move(line));
  }
  for (std::string& note : notes) add(std::move(note));
  return absl::OkStatus();
}

std::string FormatSweepReport(const SweepResults& results) {
  std::vector<std::vector<std::string>> rows;
  for (const SweepCell& c : results.cells()) {
    rows.push_back({c.layout(), absl::StrCat(c.workers()),
                    c.shards() > 0 ? absl::StrCat(c.shards()) : "-",
                    Mib(c.bytes()), absl::StrFormat("%g", c.rate_bps() / 1e6),
                    c.error().empty() ? Ms(c.sync_s()) : "failed",
                    c.predicted_s() > 0 ? Ms(c.predicted_s()) : "-",
                    c.predicted_s() > 0
                        ? absl::StrFormat("%+.1f%%", 100 * c.relative_error())
                        : "-",
                    absl::StrFormat("%.0f%%", 100 * c.cpu_busy()),
                    !c.error().empty() ? c.error().substr(0, 60)
                    : c.cpu_bound()    ? "CPU-bound"
                    : !c.link_ok()     ? "links unverified"
                                       : ""});
  }
  std::string text =
      cli::FormatTable({"LAYOUT", "N", "K", "S", "Mbit/s", "MEASURED ms",
                        "MODEL ms", "ERROR", "CPU", "NOTE"},
                       rows);
  for (const std::string& line : results.findings()) {
    absl::StrAppend(&text, line, "\n");
  }
  return text;
}

std::string SweepCsv(const SweepResults& results) {
  std::string csv =
      "layout,workers,shards,bytes,rate_bps,job_id,steps,sync_s,step_s,"
      "predicted_s,relative_error,latency_terms,link_bytes,cpu_busy,"
      "cpu_bound,link_ok,pipelined,error\n";
  for (const SweepCell& c : results.cells()) {
    absl::StrAppend(
        &csv,
        absl::StrJoin(
            std::vector<std::string>{
                c.layout(), absl::StrCat(c.workers()), absl::StrCat(c.shards()),
                absl::StrCat(c.bytes()), absl::StrCat(c.rate_bps()), c.job_id(),
                absl::StrCat(c.measured_steps()),
                absl::StrFormat("%.6f", c.sync_s()),
                absl::StrFormat("%.6f", c.step_s()),
                absl::StrFormat("%.6f", c.predicted_s()),
                absl::StrFormat("%.4f", c.relative_error()),
                absl::StrFormat("%g", c.latency_terms()),
                absl::StrFormat("%.0f", c.link_bytes()),
                absl::StrFormat("%.3f", c.cpu_busy()),
                c.cpu_bound() ? "1" : "0", c.link_ok() ? "1" : "0",
                c.pipelined() ? "1" : "0", JsonQuote(c.error())},
            ","),
        "\n");
  }
  return csv;
}

}  // namespace lab
}  // namespace gradsync
