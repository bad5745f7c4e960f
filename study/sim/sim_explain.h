// `gradsync explain` through the step simulator: the explanation of
// study/explain.h, with each mode's step predicted by the simulator
// (step_simulator.h) where the job allows it, so that the exposed
// communication (what backward does not hide of the buckets' collectives
// or the PS's partitions), not only the busy time of the bulk alpha-beta
// formula, is predicted.
//
//   ASSIGN_OR_RETURN(Explanation e, ExplainJobWithSimulator(job, links));
//   std::cout << FormatExplanation(e);
//
// A mode is simulated when
//   - the job's model has a layer profile (ExplainInput.profile: the
//     synthetic kind with --model-profile) and its emulated backward
//     time, which the simulator spreads over the layers by FLOP share as
//     the synthetic model does (workload.h);
//   - its layout is known: a link is in play (two hosts or more) and the
//     link facts give a rate; the ranks sit evenly on their hosts (G per
//     host); the ring (flat ring all-reduce) with one rank per host (the
//     rate between the ranks of one host is not measured); the PS with
//     every server's host known, either all on hosts of their own or each
//     on a different worker host (colocated).
// Otherwise the mode keeps the formula's prediction and says why.
//
// The simulated cluster is the link facts' and nothing else: each host's
// NIC at their B (payload: link efficiency 1), their alpha per message, no
// partition overhead, no server CPU cost and no incast (the formula's own
// assumptions), fp32 gradients, the spec's buckets (25 MiB if 0) and PS
// partitions, one worker per rank.
//
// Errors: those of ExplainJob (study/explain.h). A mode the simulator
// refuses keeps the formula's prediction, with the simulator's error as
// the reason; it is not an error of the explanation.
// Threading: pure function of its arguments; thread-safe.
#ifndef GRADSYNC_STUDY_SIM_SIM_EXPLAIN_H_
#define GRADSYNC_STUDY_SIM_SIM_EXPLAIN_H_

#include <string>

#include "absl/status/statusor.h"
#include "study/explain.h"
#include "study/sim/sim_config.h"
#include "study/sync_path.h"

namespace gradsync {
namespace sim {

// The simulator's config for `mode` of `job` on `links` (the top), or
// why there is none: FAILED_PRECONDITION with a sentence for people.
[[nodiscard]] absl::StatusOr<SimConfig> ExplainSimConfig(
    const study::ExplainInput& job, const study::LinkFacts& links,
    SyncPath mode);

[[nodiscard]] absl::StatusOr<study::Explanation> ExplainJobWithSimulator(
    const study::ExplainInput& job, const study::LinkFacts& links);

}  // namespace sim
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_SIM_SIM_EXPLAIN_H_
