// `gradsync plan`'s sweep: the simulator run over worker counts, layouts
// and server counts, with the best layout, the K* crossover and the
// bottleneck of each worker count.
//
//   PlanRequest request;
//   request.workers = PowersOfTwo(8, 1024);
//   request.base = config;  // topology rates, widths, calibration
//   request.workload = workload;
//   ASSIGN_OR_RETURN(std::vector<PlanRow> rows, RunPlan(request));
//
// For each N: the all-reduce layouts once each; each PS layout at every
// server count of ServerCounts(min, max) (colocated: at most one server
// per node). K* is the fewest separate servers whose step is no slower
// than the ring's, found exactly by bisection between the swept counts
// (assuming, as the alpha-beta model has it, that more servers are never
// slower). The best cell is the fastest; ties go to the layout listed
// first and then to fewer servers.
//
// Errors: INVALID_ARGUMENT for no worker count, no layout, a server range
// that is empty (or leaves some N with no cell: colocated servers only,
// above its node count), or a config that ValidateSimConfig refuses at
// some N; errors of SimulateStep.
// Threading: pure function of its arguments; thread-safe.
#ifndef GRADSYNC_STUDY_SIM_PLAN_SWEEP_H_
#define GRADSYNC_STUDY_SIM_PLAN_SWEEP_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "study/sim/plan_uncertainty.h"
#include "study/sim/sim_config.h"
#include "study/sim/step_simulator.h"
#include "study/sim/workload.h"

namespace gradsync {
namespace sim {

struct PlanRequest {
  std::vector<int> workers;  // the N to sweep
  // Everything but layout, workers and servers, which the sweep sets.
  SimConfig base;
  std::vector<SimLayout> layouts = AllSimLayouts();
  int min_servers = 1;
  int max_servers = 0;  // 0: N (separate), the node count (colocated)
  SimWorkload workload;
};

struct PlanCell {
  SimLayout layout = SimLayout::kRing;
  int servers = 0;  // 0 for the all-reduce layouts
  double step_s = 0;
  double exposed_comm_s = 0;
  std::string bottleneck;  // FindBottleneck (step_simulator.h)
  // Why its figure may be off (plan_uncertainty.h); empty: no known reason.
  std::vector<Uncertainty> uncertain;
};

struct PlanRow {
  int workers = 0;
  std::vector<PlanCell> cells;  // layouts in request order, K ascending
  size_t best = 0;              // index into cells
  double ring_s = -1;           // -1: not swept
  double hierarchical_s = -1;
  // Fewest separate servers as fast as the ring; 0: none in the range (or
  // the ring or the separate PS was not swept).
  int k_star = 0;
};

[[nodiscard]] absl::StatusOr<std::vector<PlanRow>> RunPlan(
    const PlanRequest& request);

// The powers of two in [lo, hi] (lo >= 1).
std::vector<int> PowersOfTwo(int lo, int hi);
// The powers of two in [lo, hi], and hi itself when it is not one.
std::vector<int> ServerCounts(int lo, int hi);

}  // namespace sim
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_SIM_PLAN_SWEEP_H_
