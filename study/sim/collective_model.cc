#include "study/sim/collective_model.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gradsync {
namespace sim {
namespace {

// The busiest node's NIC messages, each way, and whether any message stays
// in a node, for one step whose messages go from rank .first to .second.
CollectiveStep CountStep(std::string name, double share,
                         const std::vector<std::pair<int, int>>& messages,
                         int gpus_per_node, int nodes) {
  std::vector<int> out(nodes, 0), in(nodes, 0);
  CollectiveStep step;
  step.name = std::move(name);
  step.share = share;
  for (const auto& [from, to] : messages) {
    const int a = from / gpus_per_node;
    const int b = to / gpus_per_node;
    if (a == b) {
      step.intra = true;
    } else {
      ++out[a];
      ++in[b];
    }
  }
  step.nic_out = nodes > 0 ? *std::max_element(out.begin(), out.end()) : 0;
  step.nic_in = nodes > 0 ? *std::max_element(in.begin(), in.end()) : 0;
  return step;
}

std::vector<CollectiveStep> RingSteps(int n, int g, int m) {
  CollectiveStep step;
  step.name = "ring";
  step.share = 1.0 / n;
  step.repeats = 2 * (n - 1);
  // Ranks in node order: one hop per node leaves it (when there are
  // several nodes), the other G-1 stay inside.
  step.nic_out = step.nic_in = m > 1 ? 1 : 0;
  step.intra = g > 1;
  return {step};
}

// collectives/algorithms/halving_doubling.cc, message by message.
std::vector<CollectiveStep> HalvingDoublingSteps(int n, int g, int m) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int extra = n - p;
  const auto real_rank = [extra](int v) {
    return v < extra ? 2 * v + 1 : v + extra;
  };
  std::vector<CollectiveStep> halving;
  std::vector<int> distances;
  double share = 1;
  for (int d = p / 2; d >= 1; d /= 2) {
    distances.push_back(d);
    share /= 2;
    std::vector<std::pair<int, int>> messages;
    for (int v = 0; v < p; ++v)
      messages.push_back({real_rank(v), real_rank(v ^ d)});
    halving.push_back(CountStep(absl::StrCat("halving at distance ", d), share,
                                messages, g, m));
  }
  std::vector<CollectiveStep> steps;
  std::vector<std::pair<int, int>> fold, unfold;
  for (int i = 0; i < extra; ++i) {
    fold.push_back({2 * i, 2 * i + 1});
    unfold.push_back({2 * i + 1, 2 * i});
  }
  if (extra > 0) steps.push_back(CountStep("fold", 1, fold, g, m));
  steps.insert(steps.end(), halving.begin(), halving.end());
  for (size_t i = halving.size(); i-- > 0;) {
    CollectiveStep back = halving[i];
    back.name = absl::StrCat("doubling at distance ", distances[i]);
    steps.push_back(std::move(back));
  }
  if (extra > 0) steps.push_back(CountStep("unfold", 1, unfold, g, m));
  return steps;
}

std::vector<CollectiveStep> HierarchicalSteps(int g, int m) {
  std::vector<CollectiveStep> steps;
  CollectiveStep in_node;
  in_node.share = 1.0 / g;
  in_node.repeats = g - 1;
  in_node.intra = true;
  if (g > 1) {
    in_node.name = "reduce-scatter in the node";
    steps.push_back(in_node);
  }
  if (m > 1) {
    CollectiveStep across;
    across.name = "rings across nodes";
    across.share = 1.0 / (static_cast<double>(g) * m);
    across.repeats = 2 * (m - 1);
    across.nic_out = across.nic_in = g;  // one ring per slice, at once
    steps.push_back(across);
  }
  if (g > 1) {
    in_node.name = "all-gather in the node";
    steps.push_back(in_node);
  }
  return steps;
}

}  // namespace

std::vector<CollectiveStep> AllReduceSteps(const SimConfig& config) {
  const int n = config.topology.workers;
  const int g = config.topology.gpus_per_node;
  const int m = config.topology.nodes();
  if (n < 2) return {};
  switch (config.layout) {
    case SimLayout::kHalvingDoubling:
      return HalvingDoublingSteps(n, g, m);
    case SimLayout::kHierarchical:
      return HierarchicalSteps(g, m);
    default:
      return RingSteps(n, g, m);
  }
}

AllReduceResources AddAllReduceResources(const SimConfig& config,
                                         FlowNetwork* network) {
  const SimTopology& t = config.topology;
  const double efficiency = config.calibration.link_efficiency;
  AllReduceResources r;
  if (t.nodes() > 1) {
    r.nic_out = network->AddResource(
        {"node NIC out", t.nic_Bps * efficiency, t.nodes(), false});
    r.nic_in = network->AddResource(
        {"node NIC in", t.nic_Bps * efficiency, t.nodes(), true});
  }
  if (t.gpus_per_node > 1) {
    r.intra_out = network->AddResource(
        {"GPU intra-node out", t.intra_Bps * efficiency, t.workers, false});
    r.intra_in = network->AddResource(
        {"GPU intra-node in", t.intra_Bps * efficiency, t.workers, true});
  }
  return r;
}

std::vector<FlowGroup> StepGroups(const CollectiveStep& step, double bytes,
                                  const SimConfig& config,
                                  const AllReduceResources& resources,
                                  const std::string& label) {
  std::vector<FlowGroup> groups;
  const double message = step.share * bytes;
  const std::string name = absl::StrCat(label, " ", step.name);
  if ((step.nic_out > 0 || step.nic_in > 0) && resources.nic_out >= 0) {
    FlowGroup across;
    across.name = name;
    across.lane = "all-reduce";
    across.bytes = message * step.repeats;
    across.latency_s = config.calibration.alpha_s * step.repeats;
    if (step.nic_out > 0)
      across.loads.push_back({resources.nic_out, step.nic_out});
    if (step.nic_in > 0)
      across.loads.push_back({resources.nic_in, step.nic_in});
    groups.push_back(std::move(across));
  }
  if (step.intra && resources.intra_out >= 0) {
    FlowGroup inside;
    inside.name = absl::StrCat(name, " (in node)");
    inside.lane = "all-reduce in node";
    inside.bytes = message * step.repeats;
    inside.latency_s = config.calibration.intra_alpha_s * step.repeats;
    inside.loads = {{resources.intra_out, 1}, {resources.intra_in, 1}};
    groups.push_back(std::move(inside));
  }
  return groups;
}

}  // namespace sim
}  // namespace gradsync
