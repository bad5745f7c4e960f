// The step-level simulator: one data-parallel training step of a workload
// (workload.h) on a cluster and layout (sim_config.h), as a discrete-event
// simulation of flows on links (flow_network.h). It answers how long the
// step takes, how much of the synchronisation backward hides, and which
// link carries the most.
//
//   ASSIGN_OR_RETURN(std::vector<ProfileTensor> tensors,
//                    ModelProfile("bert-large"));
//   ASSIGN_OR_RETURN(SimWorkload work, WorkloadFromProfile(tensors, compute));
//   ASSIGN_OR_RETURN(SimResult r, SimulateStep(config, work));
//   std::cout << r.step_s << " s, " << r.exposed_comm_s << " s exposed\n";
//
// The step: the forward, then backward layer by layer from the last; as
// gradients become final they are synchronised, overlapping the rest of
// backward:
//   all-reduce layouts  buckets (sim_config.h) in launch order, one
//                       collective at a time (a worker's collectives run in
//                       issue order), each starting when its bucket is
//                       ready and the previous one has ended
//                       (collective_model.h);
//   PS layouts          every server's partitions pushed and pulled as
//                       they become ready (ps_model.h).
// The step ends when backward and the last synchronisation have both
// ended. The optimizer step and the next forward are not simulated (the
// PS runs the optimizer on the servers; see docs/simulator.md, "Limits").
//
// Every worker computes alike, so the simulated worker stands for all.
//
// Errors: INVALID_ARGUMENT from ValidateSimConfig, or for a workload with
// no gradient; INTERNAL from the engine (flow_network.h).
// Threading: pure function of its arguments; thread-safe.
#ifndef GRADSYNC_STUDY_SIM_STEP_SIMULATOR_H_
#define GRADSYNC_STUDY_SIM_STEP_SIMULATOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "study/sim/flow_network.h"
#include "study/sim/sim_config.h"
#include "study/sim/workload.h"

namespace gradsync {
namespace sim {

struct SimResult {
  double step_s = 0;  // forward start to the end of the last sync
  double forward_s = 0;
  double backward_s = 0;
  // step - forward - backward: the synchronisation backward did not hide.
  double exposed_comm_s = 0;
  double gradient_bytes = 0;            // one worker's, on the wire
  std::vector<ResourceUsage> links;     // every resource, CPUs included
  std::vector<TimelineEvent> timeline;  // empty unless record_timeline
  int64_t events = 0;                   // the engine's loop iterations

  // The resource whose busiest copy was busy longest (bytes / capacity);
  // nullptr when no byte crossed a link.
  const ResourceUsage* Busiest() const;
};

[[nodiscard]] absl::StatusOr<SimResult> SimulateStep(
    const SimConfig& config, const SimWorkload& workload);

// What bounds `result`, the step of `config` on `workload`, for people:
//   "compute"          the synchronisation is hidden: at most 5 % of the
//                      step is exposed;
//   "latency (alpha)"  the same step without any latency (alpha, intra
//                      alpha and the per-partition overhead all 0, one
//                      more simulation) exposes less than half as much:
//                      messages' count, not their bytes, sets the pace;
//   otherwise the busiest resource's name ("server 0 NIC in").
// Errors: those of SimulateStep.
[[nodiscard]] absl::StatusOr<std::string> FindBottleneck(
    const SimConfig& config, const SimWorkload& workload,
    const SimResult& result);

}  // namespace sim
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_SIM_STEP_SIMULATOR_H_
