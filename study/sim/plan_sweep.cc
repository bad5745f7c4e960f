#include "study/sim/plan_sweep.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gradsync {
namespace sim {
namespace {

// One cell: the step of `layout` with `servers` at N = `workers`, and
// what bounds it when `bottleneck` (the K* search needs only the time).
[[nodiscard]] absl::StatusOr<PlanCell> Simulate(const PlanRequest& request,
                                                int workers, SimLayout layout,
                                                int servers,
                                                bool bottleneck = true) {
  SimConfig config = request.base;
  config.layout = layout;
  config.topology.workers = workers;
  config.servers = std::max(1, servers);
  config.record_timeline = false;
  const std::string where =
      absl::StrCat("N = ", workers, ", ", SimLayoutName(layout),
                   servers > 0 ? absl::StrCat(" K = ", servers) : "");
  absl::StatusOr<SimResult> r = SimulateStep(config, request.workload);
  if (!r.ok()) return Annotate(r.status(), where);
  PlanCell cell;
  cell.layout = layout;
  cell.servers = IsPsLayout(layout) ? servers : 0;
  cell.step_s = r->step_s;
  cell.exposed_comm_s = r->exposed_comm_s;
  if (bottleneck) {
    absl::StatusOr<std::string> b =
        FindBottleneck(config, request.workload, *r);
    if (!b.ok()) return Annotate(b.status(), where);
    cell.bottleneck = *std::move(b);
    cell.uncertain = UncertainRegimes(config, cell.bottleneck);
  }
  return cell;
}

// The fewest separate servers in (lo, hi] whose step is <= ring_s, given
// that hi's is and lo's is not.
[[nodiscard]] absl::StatusOr<int> BisectKStar(const PlanRequest& request,
                                              int workers, int lo, int hi,
                                              double ring_s) {
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    ASSIGN_OR_RETURN(const PlanCell cell,
                     Simulate(request, workers, SimLayout::kPsSeparate, mid,
                              /*bottleneck=*/false));
    (cell.step_s <= ring_s ? hi : lo) = mid;
  }
  return hi;
}

[[nodiscard]] absl::StatusOr<PlanRow> SweepWorkers(const PlanRequest& request,
                                                   int workers) {
  PlanRow row;
  row.workers = workers;
  const int nodes = workers / std::max(1, request.base.topology.gpus_per_node);
  for (SimLayout layout : request.layouts) {
    if (!IsPsLayout(layout)) {
      ASSIGN_OR_RETURN(PlanCell cell, Simulate(request, workers, layout, 0));
      if (layout == SimLayout::kRing) row.ring_s = cell.step_s;
      if (layout == SimLayout::kHierarchical) row.hierarchical_s = cell.step_s;
      row.cells.push_back(std::move(cell));
      continue;
    }
    int hi = request.max_servers > 0 ? request.max_servers : workers;
    if (layout == SimLayout::kPsColocated) hi = std::min(hi, nodes);
    for (int k : ServerCounts(std::max(1, request.min_servers), hi)) {
      ASSIGN_OR_RETURN(PlanCell cell, Simulate(request, workers, layout, k));
      row.cells.push_back(std::move(cell));
    }
  }
  if (row.cells.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "nothing to simulate at N = ", workers, ": the server range starts at ",
        request.min_servers, ", above the ", nodes,
        " nodes that colocated servers can use"));
  }
  for (size_t i = 1; i < row.cells.size(); ++i) {
    if (row.cells[i].step_s < row.cells[row.best].step_s) row.best = i;
  }
  if (row.ring_s >= 0) {
    // The largest swept K slower than the ring (below the range: none).
    int below = std::max(0, request.min_servers - 1);
    for (const PlanCell& c : row.cells) {
      if (c.layout != SimLayout::kPsSeparate) continue;
      if (c.step_s <= row.ring_s) {
        ASSIGN_OR_RETURN(row.k_star, BisectKStar(request, workers, below,
                                                 c.servers, row.ring_s));
        break;
      }
      below = c.servers;
    }
  }
  return row;
}

}  // namespace

absl::StatusOr<std::vector<PlanRow>> RunPlan(const PlanRequest& request) {
  if (request.workers.empty()) {
    return absl::InvalidArgumentError("no worker count to plan for");
  }
  if (request.layouts.empty()) {
    return absl::InvalidArgumentError("no layout to plan with");
  }
  if (request.max_servers > 0 &&
      request.max_servers < std::max(1, request.min_servers)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the server range ", request.min_servers, "..",
                     request.max_servers, " is empty"));
  }
  std::vector<PlanRow> rows;
  for (int n : request.workers) {
    ASSIGN_OR_RETURN(PlanRow row, SweepWorkers(request, n));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<int> PowersOfTwo(int lo, int hi) {
  std::vector<int> out;
  for (int64_t p = 1; p <= hi; p *= 2) {
    if (p >= lo) out.push_back(static_cast<int>(p));
  }
  return out;
}

std::vector<int> ServerCounts(int lo, int hi) {
  std::vector<int> out = PowersOfTwo(lo, hi);
  if (hi >= lo && (out.empty() || out.back() != hi)) out.push_back(hi);
  return out;
}

}  // namespace sim
}  // namespace gradsync
