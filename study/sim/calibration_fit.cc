#include "study/sim/calibration_fit.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "study/sim/least_squares.h"

namespace gradsync {
namespace sim {
namespace {

// A calibration member the fit may move: its file name, its field, and its
// scale and box for the solver.
struct Knob {
  const char* name;
  double SimCalibration::*field;
  double scale;
  double lower;
  double upper;
};

constexpr Knob kAlpha{"alphaS", &SimCalibration::alpha_s, 1e-4, 0, 1};
constexpr Knob kEfficiency{"linkEfficiency", &SimCalibration::link_efficiency,
                           1, 0.05, 1};
constexpr Knob kOverhead{"partitionOverheadS",
                         &SimCalibration::partition_overhead_s, 1e-4, 0, 1};
constexpr Knob kPlaneCpu{"planeCpuSPerByte",
                         &SimCalibration::plane_cpu_s_per_byte, 1e-9, 0, 1e-6};
constexpr Knob kGrpcCpu{"grpcCpuSPerByte", &SimCalibration::grpc_cpu_s_per_byte,
                        1e-9, 0, 1e-6};
constexpr Knob kIncast{"incastEfficiency", &SimCalibration::incast_efficiency,
                       1, 0.05, 1};

// Starting points of a CPU cost: none, the start's, and shares of the
// smallest and the median cost at which a server's CPU alone would take a
// cell's whole measured time.
constexpr double kCpuStartShares[] = {0.5, 0.9};
// LM runs from the best screened starting points.
constexpr int kRefinedStarts = 3;
// Where the incast fit starts its efficiency.
constexpr double kIncastStart = 0.8;
// A fit whose cost is below this per cell (an rms error of 1e-8) fits
// exactly already: incast cannot improve it.
constexpr double kExactCostPerCell = 1e-16;

struct Run {
  SimCalibration calibration;
  double cost = 0;
  std::vector<const Knob*> knobs;
  std::vector<bool> determined;  // per knob
};

class Fitter {
 public:
  explicit Fitter(const std::vector<MeasuredCell>& cells) : cells_(cells) {}

  [[nodiscard]] absl::StatusOr<std::vector<double>> Residuals(
      const SimCalibration& c) {
    std::vector<double> r;
    r.reserve(cells_.size());
    for (const MeasuredCell& cell : cells_) {
      ++simulations_;
      ASSIGN_OR_RETURN(const double simulated, SimulateCell(cell, c));
      r.push_back(simulated / cell.measured_s - 1);
    }
    return r;
  }

  [[nodiscard]] absl::StatusOr<double> Cost(const SimCalibration& c) {
    ASSIGN_OR_RETURN(const std::vector<double> r, Residuals(c));
    return SumOfSquares(r);
  }

  // One Levenberg-Marquardt run over `knobs` from `start`.
  [[nodiscard]] absl::StatusOr<Run> Fit(const SimCalibration& start,
                                        const std::vector<const Knob*>& knobs,
                                        int max_iterations) {
    LsqProblem problem;
    problem.max_iterations = max_iterations;
    for (const Knob* k : knobs) {
      problem.params.push_back(
          {k->name, k->scale, k->lower, k->upper,
           std::clamp(start.*(k->field), k->lower, k->upper)});
    }
    auto apply = [&](const std::vector<double>& x) {
      SimCalibration c = start;
      for (size_t i = 0; i < knobs.size(); ++i) c.*(knobs[i]->field) = x[i];
      return c;
    };
    problem.residuals = [&](const std::vector<double>& x) {
      return Residuals(apply(x));
    };
    ASSIGN_OR_RETURN(const LsqResult result, SolveLeastSquares(problem));
    return Run{apply(result.x), result.cost, knobs, result.determined};
  }

  int simulations() const { return simulations_; }

 private:
  const std::vector<MeasuredCell>& cells_;
  int simulations_ = 0;
};

bool HasPs(const std::vector<MeasuredCell>& cells,
           std::optional<PsTransport> transport) {
  for (const MeasuredCell& c : cells) {
    if (IsPsLayout(c.layout) &&
        (!transport.has_value() || c.transport == *transport)) {
      return true;
    }
  }
  return false;
}

// The CPU costs to start from for `transport` (see kCpuStartShares).
std::vector<double> CpuStarts(const std::vector<MeasuredCell>& cells,
                              PsTransport transport, double start) {
  std::vector<double> whole;  // per cell: the cost the CPU alone would take
  for (const MeasuredCell& c : cells) {
    if (!IsPsLayout(c.layout) || c.transport != transport) continue;
    // Every byte into and out of a server crosses its CPU: N S / K each
    // way.
    const double bytes = 2.0 * c.workers * c.bytes / std::max(1, c.servers);
    whole.push_back(c.measured_s * c.server_cores / bytes);
  }
  std::vector<double> starts = {start, 0};
  if (whole.empty()) return starts;
  std::sort(whole.begin(), whole.end());
  for (double share : kCpuStartShares) {
    starts.push_back(share * whole.front());
    starts.push_back(share * whole[whole.size() / 2]);
  }
  return starts;
}

// The most flows one NIC receives at once in `c`'s synchronisation:
// separate servers receive every worker's push (N) and a worker node every
// server's pull to each of its G workers (K G); a colocated server's node
// both the pushes from the other nodes' workers (N - G) and its own
// workers' pulls from the other servers (G (K - 1)). The ring sends one
// message per node at a time.
int FlowsIn(const MeasuredCell& c) {
  const int g = std::max(1, c.gpus_per_node);
  switch (c.layout) {
    case SimLayout::kPsSeparate:
      return std::max(c.workers, c.servers * g);
    case SimLayout::kPsColocated:
      return std::max(c.workers - g + g * (c.servers - 1), c.servers * g);
    default:
      return 1;
  }
}

std::string Percent(double share) {
  return absl::StrFormat("%.1f%%", 100 * share);
}

// Every numeric member of `c` with how the fit found it.
std::vector<FittedParameter> Describe(
    const SimCalibration& c, const Run& run,
    const std::map<std::string, std::string>& held) {
  std::vector<FittedParameter> out;
  for (const auto& [name, field] : CalibrationNumbers()) {
    FittedParameter p{name, c.*field, false, ""};
    for (size_t i = 0; i < run.knobs.size(); ++i) {
      if (run.knobs[i]->name != std::string(name)) continue;
      p.fitted = run.determined[i];
      p.note = p.fitted ? (p.value <= run.knobs[i]->lower
                               ? "fitted, at its lower bound"
                               : "fitted")
                        : "no fitted cell depends on it";
    }
    if (auto it = held.find(name); it != held.end()) p.note = it->second;
    if (name == std::string("incastThresholdFlows") &&
        held.count("incastEfficiency") == 0 && c.incast_threshold_flows > 0) {
      p.fitted = true;
      p.note = "fitted (the best of the thresholds tried)";
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

absl::StatusOr<CalibrationFit> FitCalibration(
    const std::vector<MeasuredCell>& cells, const FitOptions& options) {
  if (cells.empty()) {
    return absl::InvalidArgumentError("no cells to fit the calibration to");
  }
  RETURN_IF_ERROR(ValidateCalibration(options.start));
  for (const MeasuredCell& cell : cells) {
    if (!(cell.measured_s > 0) || !std::isfinite(cell.measured_s)) {
      return absl::InvalidArgumentError(
          absl::StrCat("cell ", cell.label, " measured ", cell.measured_s,
                       " s; a measurement must be > 0"));
    }
  }
  Fitter fitter(cells);
  SimCalibration base = options.start;
  if (options.fit_incast) {
    base.incast_threshold_flows = 0;
    base.incast_efficiency = 1;
  }
  // What to fit, and why the rest keeps its start value.
  std::map<std::string, std::string> held;
  held["intraAlphaS"] = "not fitted: no cell sends between workers of a host";
  std::vector<const Knob*> knobs = {&kAlpha};
  if (options.fit_link_efficiency) {
    knobs.push_back(&kEfficiency);
  } else {
    held["linkEfficiency"] = "held at the start value (not fitted)";
  }
  if (HasPs(cells, std::nullopt)) {
    knobs.push_back(&kOverhead);
  } else {
    held["partitionOverheadS"] = "no PS cell: kept at the start value";
  }
  const bool plane = HasPs(cells, PsTransport::kPlane);
  const bool grpc = HasPs(cells, PsTransport::kGrpc);
  if (plane) knobs.push_back(&kPlaneCpu);
  if (!plane) held["planeCpuSPerByte"] = "no PS cell on the tensor plane";
  if (grpc) knobs.push_back(&kGrpcCpu);
  if (!grpc) held["grpcCpuSPerByte"] = "no PS cell on gRPC";

  // Screen the CPU costs' starting points, then refine the best few.
  std::vector<SimCalibration> starts = {base};
  for (const auto& [on, knob, transport] :
       {std::make_tuple(plane, &kPlaneCpu, PsTransport::kPlane),
        std::make_tuple(grpc, &kGrpcCpu, PsTransport::kGrpc)}) {
    if (!on) continue;
    std::vector<SimCalibration> next;
    for (const SimCalibration& s : starts) {
      for (double v : CpuStarts(cells, transport, base.*(knob->field))) {
        SimCalibration c = s;
        c.*(knob->field) = std::min(v, knob->upper);
        next.push_back(c);
      }
    }
    starts = std::move(next);
  }
  std::vector<std::pair<double, size_t>> screened;
  for (size_t i = 0; i < starts.size(); ++i) {
    ASSIGN_OR_RETURN(const double cost, fitter.Cost(starts[i]));
    screened.push_back({cost, i});
  }
  std::sort(screened.begin(), screened.end());
  std::optional<Run> best;
  for (size_t i = 0; i < screened.size() && i < kRefinedStarts; ++i) {
    ASSIGN_OR_RETURN(Run run, fitter.Fit(starts[screened[i].second], knobs,
                                         options.max_iterations));
    if (!best.has_value() || run.cost < best->cost) best = std::move(run);
  }

  // Incast: the fit again at each threshold, kept if clearly better.
  if (options.fit_incast && HasPs(cells, std::nullopt)) {
    int most_flows = 1;
    for (const MeasuredCell& c : cells) {
      most_flows = std::max(most_flows, FlowsIn(c));
    }
    std::optional<Run> incast;
    for (int t = 1; t < most_flows; ++t) {
      SimCalibration start = best->calibration;
      start.incast_threshold_flows = t;
      start.incast_efficiency = kIncastStart;
      std::vector<const Knob*> with = knobs;
      with.push_back(&kIncast);
      ASSIGN_OR_RETURN(Run run,
                       fitter.Fit(start, with, options.max_iterations));
      if (!incast.has_value() || run.cost < incast->cost) {
        incast = std::move(run);
      }
    }
    const bool exact =
        best->cost <= kExactCostPerCell * static_cast<double>(cells.size());
    const bool better =
        incast.has_value() && !exact &&
        incast->cost < (1 - options.incast_min_gain) * best->cost &&
        incast->determined.back();
    if (better) {
      best = std::move(incast);
    } else {
      std::string why = "off: no PS cell has two flows into one NIC";
      if (exact) {
        why = "off: the fit without it is exact";
      } else if (incast.has_value()) {
        why = absl::StrCat("off: an incast factor lowered the cost by ",
                           Percent(1 - incast->cost / best->cost),
                           ", less than the ", Percent(options.incast_min_gain),
                           " required");
      }
      held["incastThresholdFlows"] = why;
      held["incastEfficiency"] = why;
    }
  } else {
    // Fitting incast with no PS cell: the base fit ran with it off.
    const std::string why = options.fit_incast
                                ? "off: no PS cell to show it"
                                : "held at the start value (not fitted)";
    held["incastThresholdFlows"] = why;
    held["incastEfficiency"] = why;
  }

  // A CPU cost no cell depends on is an upper bound at most.
  for (size_t i = 0; i < best->knobs.size(); ++i) {
    const Knob* k = best->knobs[i];
    if (best->determined[i] || (k != &kPlaneCpu && k != &kGrpcCpu)) continue;
    double& value = best->calibration.*(k->field);
    value = std::min(value, options.start.*(k->field));
    held[k->name] =
        "the servers' CPU bounds no fitted cell: it is at most the cost "
        "where it would; kept the smaller of the start and the fit";
  }

  CalibrationFit fit;
  fit.calibration = best->calibration;
  fit.parameters = Describe(fit.calibration, *best, held);
  ASSIGN_OR_RETURN(fit.cells, PredictCells(cells, fit.calibration));
  fit.summary = SummariseErrors(fit.cells, ErrorTargets());
  fit.simulations = fitter.simulations() + static_cast<int>(cells.size());
  return fit;
}

}  // namespace sim
}  // namespace gradsync
