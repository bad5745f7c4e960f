#include "cli/lab/lab_report.h"

#include <algorithm>
#include <cmath>
#include <functional>
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
#include "cli/lab/layout_fit.h"
#include "common/json.h"
#include "common/status_macros.h"

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

// The cells of one (bytes, rate) group.
using Group = std::vector<const SweepCell*>;
std::map<std::pair<int64_t, int64_t>, Group> Groups(const SweepResults& r) {
  std::map<std::pair<int64_t, int64_t>, Group> groups;
  for (const SweepCell& c : r.cells()) {
    if (Trusted(c)) groups[{c.bytes(), c.rate_bps()}].push_back(&c);
  }
  return groups;
}

const SweepCell* Find(const Group& group, absl::string_view layout, int n,
                      int k) {
  for (const SweepCell* c : group) {
    if (c->layout() == layout && c->workers() == n && c->shards() == k) {
      return c;
    }
  }
  return nullptr;
}

std::string GroupName(const std::pair<int64_t, int64_t>& key) {
  return absl::StrCat("S=", Mib(key.first), " at ",
                      absl::StrFormat("%g Mbit/s", key.second / 1e6));
}

// (a): PS with K = 1 against N, linear.
void FindingA(const std::pair<int64_t, int64_t>& key, const Group& group,
              const LinkModel& model, const ReportOptions& options,
              std::vector<std::string>* out) {
  std::vector<const SweepCell*> ps;
  for (const SweepCell* c : group) {
    if (c->layout() == "ps" && c->shards() == 1) ps.push_back(c);
  }
  std::sort(ps.begin(), ps.end(), [](const SweepCell* a, const SweepCell* b) {
    return a->workers() < b->workers();
  });
  if (ps.size() < 3) return;
  // Least squares t = a + b N, and R^2.
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double m = static_cast<double>(ps.size());
  for (const SweepCell* c : ps) {
    sx += c->workers();
    sy += c->sync_s();
    sxx += static_cast<double>(c->workers()) * c->workers();
    sxy += c->workers() * c->sync_s();
  }
  const double slope = (m * sxy - sx * sy) / (m * sxx - sx * sx);
  const double intercept = (sy - slope * sx) / m;
  double ss_res = 0, ss_tot = 0;
  for (const SweepCell* c : ps) {
    const double fit = intercept + slope * c->workers();
    ss_res += (c->sync_s() - fit) * (c->sync_s() - fit);
    ss_tot += (c->sync_s() - sy / m) * (c->sync_s() - sy / m);
  }
  const double r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 0;
  const double measured = ps.back()->sync_s() / ps.front()->sync_s();
  const double predicted = ps.back()->predicted_s() / ps.front()->predicted_s();
  const bool pass =
      slope > 0 && r2 >= 0.95 &&
      std::abs(measured / predicted - 1) <= options.max_cell_error;
  std::vector<std::string> times;
  for (const SweepCell* c : ps) times.push_back(Ms(c->sync_s()));
  out->push_back(absl::StrFormat(
      "%s (a) %s: PS with one shard grows linearly with N: %s ms for N = "
      "%d..%d (R^2 %.3f; x%.2f from the first N to the last, model x%.2f)",
      pass ? "PASS" : "MISS", GroupName(key), absl::StrJoin(times, ", "),
      ps.front()->workers(), ps.back()->workers(), r2, measured, predicted));
  (void)model;
}

// (b): the ring against N.
void FindingB(const std::pair<int64_t, int64_t>& key, const Group& group,
              const ReportOptions& options, std::vector<std::string>* out) {
  std::vector<const SweepCell*> ring, ps1;
  for (const SweepCell* c : group) {
    if (c->layout() == "ring") ring.push_back(c);
    if (c->layout() == "ps" && c->shards() == 1) ps1.push_back(c);
  }
  auto by_n = [](const SweepCell* a, const SweepCell* b) {
    return a->workers() < b->workers();
  };
  std::sort(ring.begin(), ring.end(), by_n);
  std::sort(ps1.begin(), ps1.end(), by_n);
  if (ring.size() < 2) return;
  const double measured = ring.back()->sync_s() / ring.front()->sync_s();
  const double predicted =
      ring.back()->predicted_s() / ring.front()->predicted_s();
  const bool pass =
      measured < 2 * (1 + options.max_cell_error) &&
      std::abs(measured / predicted - 1) <= options.max_cell_error;
  std::vector<std::string> times;
  for (const SweepCell* c : ring) times.push_back(Ms(c->sync_s()));
  std::string versus;
  if (ps1.size() >= 2 && ps1.front()->workers() == ring.front()->workers() &&
      ps1.back()->workers() == ring.back()->workers()) {
    versus = absl::StrFormat(", against x%.2f for PS with one shard",
                             ps1.back()->sync_s() / ps1.front()->sync_s());
  }
  out->push_back(absl::StrFormat(
      "%s (b) %s: the ring stays nearly flat in N: %s ms for N = %d..%d "
      "(x%.2f; model x%.2f, bounded by 2(N-1)/N < 2%s)",
      pass ? "PASS" : "MISS", GroupName(key), absl::StrJoin(times, ", "),
      ring.front()->workers(), ring.back()->workers(), measured, predicted,
      versus));
}

// (c): PS with K = N server hosts against the ring, per N.
void FindingC(const std::pair<int64_t, int64_t>& key, const Group& group,
              const ReportOptions& options, std::vector<std::string>* out) {
  std::vector<std::string> parts;
  bool pass = true;
  for (const SweepCell* ring : group) {
    if (ring->layout() != "ring" || ring->workers() < 2) continue;
    const int n = ring->workers();
    const SweepCell* ps = Find(group, "ps", n, n);
    if (ps == nullptr) continue;
    const double measured = ring->sync_s() / ps->sync_s();
    const double predicted = ring->predicted_s() / ps->predicted_s();
    pass = pass && std::abs(measured / predicted - 1) <= options.max_cell_error;
    parts.push_back(absl::StrFormat("N=%d ring/PS x%.2f (model x%.2f)", n,
                                    measured, predicted));
  }
  if (parts.empty()) return;
  out->push_back(absl::StrFormat(
      "%s (c) %s: PS with K = N server hosts against the ring: %s; the "
      "alpha-beta ratio is 2(N-1)/N when push and pull overlap, (N-1)/N "
      "when the pull waits for every push",
      pass ? "PASS" : "MISS", GroupName(key), absl::StrJoin(parts, ", ")));
}

// Where t(K) of PS with K separate servers meets `target`, K continuous;
// -1 if it does not within [k_lo, k_hi].
double Crossing(const std::function<double(double)>& t, double target,
                double k_lo, double k_hi) {
  double lo = k_lo, hi = k_hi;
  if ((t(lo) - target) * (t(hi) - target) > 0) return -1;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    if ((t(lo) - target) * (t(mid) - target) <= 0) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return (lo + hi) / 2;
}

// (d): the crossover shard count, per N with enough K measured.
void FindingD(const std::pair<int64_t, int64_t>& key, const Group& group,
              const LinkModel& model, const ReportOptions& options,
              std::vector<std::string>* out) {
  for (const SweepCell* ring : group) {
    if (ring->layout() != "ring" || ring->workers() < 2) continue;
    const int n = ring->workers();
    std::vector<const SweepCell*> ps;
    for (const SweepCell* c : group) {
      if (c->layout() == "ps" && c->workers() == n) ps.push_back(c);
    }
    std::sort(ps.begin(), ps.end(), [](const SweepCell* a, const SweepCell* b) {
      return a->shards() < b->shards();
    });
    if (ps.size() < 3) continue;
    // The model's t(K), K continuous, as ModelCost has it: with P =
    // ceil(S/(K q)) partitions per server, (P + 1) alpha + max(S, N S/K)
    // (1 + 1/P) / B pipelined; unpipelined 2 alpha and 2 for 1 + 1/P.
    const double s_bytes = static_cast<double>(ring->bytes());
    const double q = static_cast<double>(ps.front()->partition_bytes());
    auto predicted_t = [&](double k) {
      double fill = 1, latency_terms = 2;
      if (options.pipelined_ps && q > 0) {
        const double partitions = std::ceil(s_bytes / k / q);
        fill = 1 / partitions;
        latency_terms = partitions + 1;
      } else if (options.pipelined_ps) {
        fill = 0;
      }
      return latency_terms * model.alpha_s +
             std::max(1.0, n / k) * s_bytes * (1 + fill) / model.bandwidth_Bps;
    };
    const double k_model =
        Crossing(predicted_t,
                 PredictSeconds(SyncCase{SyncLayout::kRing, n, 0,
                                         static_cast<double>(ring->bytes())},
                                model),
                 1, n);
    // Observed: between the measured K where PS goes below the ring,
    // interpolating t = a + b/K.
    double k_seen = -1;
    for (size_t i = 0; i + 1 < ps.size(); ++i) {
      const double t0 = ps[i]->sync_s(), t1 = ps[i + 1]->sync_s();
      const double k0 = ps[i]->shards(), k1 = ps[i + 1]->shards();
      const double r = ring->sync_s();
      if ((t0 - r) * (t1 - r) > 0) continue;
      const double b = (t0 - t1) / (1 / k0 - 1 / k1);
      const double a = t0 - b / k0;
      k_seen = b / (r - a);
      break;
    }
    const double k_closed = CrossoverShards(n, options.pipelined_ps);
    std::string line;
    if (k_seen < 0 && k_model < 0) {
      line = absl::StrFormat(
          "PASS (d) %s, N=%d: PS with K <= %d never reaches the ring, as "
          "the model says (K* = %.2f > N)",
          GroupName(key), n, ps.back()->shards(), k_closed);
    } else if (k_seen < 0 || k_model < 0) {
      line = absl::StrFormat(
          "MISS (d) %s, N=%d: crossover K* observed %s, model %s "
          "(closed form %.2f)",
          GroupName(key), n,
          k_seen < 0 ? "none" : absl::StrFormat("%.2f", k_seen),
          k_model < 0 ? "none" : absl::StrFormat("%.2f", k_model), k_closed);
    } else {
      const bool pass = std::abs(k_seen - k_model) <= 1;
      line = absl::StrFormat(
          "%s (d) %s, N=%d: crossover K* observed %.2f, model %.2f (closed "
          "form N^2/(%s(N-1)) = %.2f)",
          pass ? "PASS" : "MISS", GroupName(key), n, k_seen, k_model,
          options.pipelined_ps ? "2" : "", k_closed);
    }
    out->push_back(line);
  }
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
  ASSIGN_OR_RETURN(
      const LinkFit fit,
      FitWithinLinks(observations, LabPayloadBytesPerSecond(reference_bps)));
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
  if (std::string line = PerLayoutFits(by_layout, reference_bps);
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
  for (const auto& [key, group] : Groups(*results)) {
    std::vector<std::string> lines;
    // B at this group's rate.
    const LinkModel at_rate{
        model.alpha_s, reference_bps > 0
                           ? model.bandwidth_Bps * key.second / reference_bps
                           : model.bandwidth_Bps};
    FindingA(key, group, at_rate, options, &lines);
    FindingB(key, group, options, &lines);
    FindingC(key, group, options, &lines);
    FindingD(key, group, at_rate, options, &lines);
    for (std::string& line : lines) add(std::move(line));
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
