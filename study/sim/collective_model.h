// The all-reduce layouts as steps of flows on a FlowNetwork: the flat ring,
// recursive halving-doubling and the hierarchical all-reduce
// (docs/simulator.md has the equations).
//
// A collective is a list of steps. Each step moves one message per rank
// pair it involves, a fixed share of the bucket's S bytes, over the
// nodes' NICs (pairs on two nodes) or over the GPUs' intra-node links
// (pairs on one node); a step ends when its slowest message has arrived,
// and the next step starts then (each rank waits for what it receives).
//
//   ring          2(N-1) steps of S/N; the ranks are in node order, so in
//                 each step one message per node crosses its NIC each way
//                 and the others stay in the node (NCCL's ring).
//   hd            (N not a power of two: a fold of S to a partner first
//                 and an unfold after) log2 P halving steps of S/2, S/4,
//                 ..., S/P at distances P/2, ..., 1, then the same in
//                 reverse, as collectives/algorithms/halving_doubling.cc does;
//                 the NIC carries as many messages as the node's ranks
//                 have partners on other nodes.
//   hierarchical  a reduce-scatter in each node (G-1 steps of S/G on the
//                 intra links), G rings across the M nodes at once, one
//                 per slice (2(M-1) steps of S/(G M), G messages per NIC),
//                 an all-gather in each node (G-1 steps of S/G), as
//                 collectives/algorithms/hierarchical_communicator.h does.
//
// Aggregation: identical consecutive steps (the ring's 2(N-1), each ring
// of the hierarchical one) are one flow group whose latency is the sum of
// the steps' alphas and whose bytes are the sum of their bytes. While
// nothing else moves on the links, which holds since a worker runs one
// collective at a time, that is exact: each step takes alpha + bytes/rate
// at a constant rate. It keeps a 1,024-rank ring at one event per phase.
//
// Threading: pure functions; thread-safe.
#ifndef GRADSYNC_STUDY_SIM_COLLECTIVE_MODEL_H_
#define GRADSYNC_STUDY_SIM_COLLECTIVE_MODEL_H_

#include <string>
#include <vector>

#include "study/sim/flow_network.h"
#include "study/sim/sim_config.h"

namespace gradsync {
namespace sim {

// One kind of step, `repeats` times in a row.
struct CollectiveStep {
  std::string name;  // "reduce-scatter", "ring across nodes"
  double share = 0;  // bytes of each message / S
  int repeats = 1;
  // Messages per node crossing its NIC on the busiest node, each way
  // (0: the step stays inside the nodes).
  double nic_out = 0;
  double nic_in = 0;
  // Whether some messages stay inside a node (on the intra-node links,
  // at most one per GPU each way).
  bool intra = false;
};

// The steps of an all-reduce of `config.layout` (one of the all-reduce
// layouts); none for a single worker. `config` must be valid.
std::vector<CollectiveStep> AllReduceSteps(const SimConfig& config);

// The resources the all-reduce layouts use: every node's NIC out and in
// (M copies), every GPU's intra-node link out and in (N copies, when G >
// 1); -1 for those the topology lacks. Rates are the line rates times the
// calibration's link efficiency.
struct AllReduceResources {
  int nic_out = -1;
  int nic_in = -1;
  int intra_out = -1;
  int intra_in = -1;
};
AllReduceResources AddAllReduceResources(const SimConfig& config,
                                         FlowNetwork* network);

// The flow groups of one step for a bucket of `bytes`: one group for the
// NIC messages, one for the intra-node ones (either may be absent),
// named "<label> <step name>". They start together; the step ends when
// both have.
std::vector<FlowGroup> StepGroups(const CollectiveStep& step, double bytes,
                                  const SimConfig& config,
                                  const AllReduceResources& resources,
                                  const std::string& label);

}  // namespace sim
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_SIM_COLLECTIVE_MODEL_H_
