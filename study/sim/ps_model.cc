#include "study/sim/ps_model.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gradsync {
namespace sim {
namespace {

// The first element of server k's slice of `elements` over `servers`
// (k == servers: one past the end).
int64_t SliceBegin(int64_t elements, int servers, int k) {
  return k * (elements / servers) + std::min<int64_t>(k, elements % servers);
}

std::string ClassName(const ServerClass& c) {
  return c.count == 1
             ? absl::StrCat("server ", c.first)
             : absl::StrCat("servers ", c.first, "-", c.first + c.count - 1);
}

// One server's partition: its elements and when they are all final.
struct Partition {
  int64_t elements = 0;
  double ready_s = 0;
};

// Contiguous placement: server k's slice cut into partitions of at most q
// elements (0: the whole slice) from its end toward its start; each is
// ready when its lowest element is.
std::vector<std::vector<Partition>> ContiguousPartitions(
    const GradientTimeline& timeline, int servers, int64_t q) {
  const int64_t elements = timeline.elements();
  std::vector<std::vector<Partition>> out(servers);
  for (int k = 0; k < servers; ++k) {
    const int64_t begin = SliceBegin(elements, servers, k);
    const int64_t end = SliceBegin(elements, servers, k + 1);
    if (end <= begin) continue;
    const int64_t size = end - begin;
    const int64_t parts = q > 0 ? (size + q - 1) / q : 1;
    out[k].reserve(parts);
    for (int64_t j = 0; j < parts; ++j) {
      const int64_t hi = q > 0 ? end - j * q : end;
      const int64_t lo = q > 0 ? std::max(begin, hi - q) : begin;
      out[k].push_back({hi - lo, timeline.ReadyAt(lo)});
    }
  }
  return out;
}

// Spread placement (BytePS's): the layers from the last to the first (the
// order backward finishes them), each cut from its start into partitions
// of at most q elements (0: the whole layer), dealt round-robin over the
// servers; each is ready when its layer is.
std::vector<std::vector<Partition>> SpreadPartitions(
    const GradientTimeline& timeline, int servers, int64_t q) {
  const std::vector<int64_t>& begins = timeline.layer_begins();
  std::vector<std::vector<Partition>> out(servers);
  int64_t next = 0;  // partitions dealt so far
  for (size_t i = begins.size(); i-- > 0;) {
    const int64_t begin = begins[i];
    const int64_t end =
        i + 1 < begins.size() ? begins[i + 1] : timeline.elements();
    if (end <= begin) continue;
    const double ready = timeline.ReadyAt(begin);
    const int64_t step = q > 0 ? q : end - begin;
    for (int64_t lo = begin; lo < end; lo += step) {
      const int64_t hi = std::min(end, lo + step);
      out[next++ % servers].push_back({hi - lo, ready});
    }
  }
  return out;
}

}  // namespace

double ServerClass::bytes() const {
  double total = 0;
  for (double b : partition_bytes) total += b;
  return total;
}

std::vector<ServerClass> ServerClasses(const SimConfig& config,
                                       const GradientTimeline& timeline) {
  const int servers = config.servers;
  const int classes = std::min(servers, config.max_server_classes);
  const int width = config.grad_bytes_per_element;
  const int64_t q =
      config.partition_bytes > 0
          ? std::max<int64_t>(
                1, static_cast<int64_t>(config.partition_bytes / width))
          : 0;
  const std::vector<std::vector<Partition>> placed =
      config.ps_placement == PsPlacement::kSpread
          ? SpreadPartitions(timeline, servers, q)
          : ContiguousPartitions(timeline, servers, q);
  std::vector<ServerClass> out;
  out.reserve(classes);
  for (int m = 0; m < classes; ++m) {
    ServerClass c;
    c.first = static_cast<int>(static_cast<int64_t>(m) * servers / classes);
    c.count =
        static_cast<int>(static_cast<int64_t>(m + 1) * servers / classes) -
        c.first;
    for (int k = c.first; k < c.first + c.count; ++k) {
      const std::vector<Partition>& parts = placed[k];
      if (c.partition_bytes.size() < parts.size()) {
        c.partition_bytes.resize(parts.size(), 0);
        c.ready_s.resize(parts.size(), 0);
      }
      for (size_t j = 0; j < parts.size(); ++j) {
        c.partition_bytes[j] += static_cast<double>(parts[j].elements) * width;
        c.ready_s[j] = std::max(c.ready_s[j], parts[j].ready_s);
      }
    }
    for (double& b : c.partition_bytes) b /= c.count;  // the members' mean
    out.push_back(std::move(c));
  }
  return out;
}

PsStep::PsStep(const SimConfig& config, std::vector<ServerClass> classes,
               FlowNetwork* network)
    : config_(config), classes_(std::move(classes)), network_(network) {
  AddResources();
  state_.resize(classes_.size());
}

bool PsStep::NodeReduce() const {
  return config_.ps_node_reduce && config_.topology.gpus_per_node > 1;
}

void PsStep::AddResources() {
  const SimTopology& t = config_.topology;
  const bool reduce = NodeReduce();
  // Pushers per node, and pushers in all, into each server.
  const double g = reduce ? 1 : t.gpus_per_node;
  const double n = reduce ? t.nodes() : t.workers;
  const bool colocated = config_.layout == SimLayout::kPsColocated;
  const int plain = colocated ? t.nodes() - config_.servers : t.nodes();
  const double rate = t.nic_Bps * config_.calibration.link_efficiency;
  const double cpu_per_byte = ServerCpuSecondsPerByte(config_);

  int plain_out = -1, plain_in = -1;
  if (plain > 0) {
    const std::string what =
        colocated ? "node NIC (no server)" : "worker node NIC";
    plain_out = network_->AddResource({what + " out", rate, plain, false});
    plain_in = network_->AddResource({what + " in", rate, plain, true});
  }
  int intra_out = -1, intra_in = -1;
  if (reduce) {
    const double intra = t.intra_Bps * config_.calibration.link_efficiency;
    intra_out =
        network_->AddResource({"GPU intra-node out", intra, t.workers, false});
    intra_in =
        network_->AddResource({"GPU intra-node in", intra, t.workers, false});
  }
  const size_t count = classes_.size();
  std::vector<int> host_out(count), host_in(count), cpu(count, -1);
  flows_.resize(count);
  for (size_t m = 0; m < count; ++m) {
    const ServerClass& c = classes_[m];
    flows_[m].lane = ClassName(c);
    const std::string host =
        colocated ? absl::StrCat("node of ", flows_[m].lane) : flows_[m].lane;
    host_out[m] =
        network_->AddResource({host + " NIC out", rate, c.count, false});
    host_in[m] = network_->AddResource({host + " NIC in", rate, c.count, true});
    if (cpu_per_byte > 0) {
      cpu[m] = network_->AddResource({flows_[m].lane + " CPU",
                                      config_.server_cores / cpu_per_byte,
                                      c.count, false});
    }
  }
  // Loads: flows of one class's push (pull) on the busiest copy of each
  // resource. A node's g pushers each push to every server of the class.
  auto add = [](std::vector<FlowLoad>* loads, int resource, double flows) {
    if (resource >= 0 && flows > 0) loads->push_back({resource, flows});
  };
  for (size_t m = 0; m < count; ++m) {
    const double members = classes_[m].count;
    ClassFlows& f = flows_[m];
    if (!colocated) {
      add(&f.push, plain_out, g * members);
      add(&f.push, host_in[m], n);
      add(&f.pull, host_out[m], n);
      add(&f.pull, plain_in, g * members);
    } else {
      // A server's own node's pushers reach it inside the node.
      add(&f.push, plain_out, g * members);
      add(&f.pull, plain_in, g * members);
      for (size_t o = 0; o < count; ++o) {
        const double remote = o == m ? g * (members - 1) : g * members;
        add(&f.push, host_out[o], remote);
        add(&f.pull, host_in[o], remote);
      }
      add(&f.push, host_in[m], n - g);
      add(&f.pull, host_out[m], n - g);
    }
    add(&f.push, cpu[m], n);
    add(&f.pull, cpu[m], n);
    // Each GPU takes part in the reduce of every member's partition.
    add(&f.intra, intra_out, members);
    add(&f.intra, intra_in, members);
  }
}

void PsStep::Start(std::function<void()> done) {
  done_ = std::move(done);
  classes_left_ = 0;
  for (const ServerClass& c : classes_) {
    if (!c.partition_bytes.empty()) ++classes_left_;
  }
  if (classes_left_ == 0) {
    network_->After(0, [this] {
      if (done_) done_();
    });
    return;
  }
  for (size_t m = 0; m < classes_.size(); ++m) ScheduleReduce(m);
}

FlowGroup PsStep::IntraGroup(size_t m, size_t j, const char* what) const {
  const double g = config_.topology.gpus_per_node;
  FlowGroup group;
  group.name = absl::StrCat(what, " ", j);
  group.lane = absl::StrCat(flows_[m].lane, " node ", what);
  group.bytes = 2 * (g - 1) / g * classes_[m].partition_bytes[j];
  group.latency_s = g * config_.calibration.intra_alpha_s;
  group.loads = flows_[m].intra;
  return group;
}

void PsStep::ScheduleReduce(size_t m) {
  const ServerClass& c = classes_[m];
  ClassState& s = state_[m];
  while (s.next_reduce < c.partition_bytes.size()) {
    const double wait = c.ready_s[s.next_reduce] - network_->now();
    if (wait > 0) {
      network_->After(wait, [this, m] { ScheduleReduce(m); });
      return;
    }
    const size_t j = s.next_reduce++;
    if (NodeReduce()) {
      network_->Start(IntraGroup(m, j, "reduce"), [this, m] {
        ++state_[m].reduced;
        TryPush(m);
        ScheduleReduce(m);
      });
      return;
    }
    ++s.reduced;
    TryPush(m);
  }
}

void PsStep::TryPush(size_t m) {
  ClassState& s = state_[m];
  if (s.pushing || s.next_push >= s.reduced) return;
  const size_t j = s.next_push++;
  s.pushing = true;
  FlowGroup push;
  push.name = absl::StrCat("push ", j);
  push.lane = absl::StrCat(flows_[m].lane, " push");
  push.bytes = classes_[m].partition_bytes[j];
  push.latency_s = config_.calibration.alpha_s;
  push.loads = flows_[m].push;
  network_->Start(std::move(push), [this, m] {
    state_[m].pushing = false;
    TryPush(m);
    network_->After(config_.calibration.partition_overhead_s, [this, m] {
      ++state_[m].pull_ready;
      TryPull(m);
    });
  });
}

void PsStep::TryPull(size_t m) {
  ClassState& s = state_[m];
  const size_t parts = classes_[m].partition_bytes.size();
  if (s.pulling || s.next_pull >= s.pull_ready) return;
  if (!config_.ps_pipelined && s.pull_ready < parts) return;
  const size_t j = s.next_pull++;
  s.pulling = true;
  FlowGroup pull;
  pull.name = absl::StrCat("pull ", j);
  pull.lane = absl::StrCat(flows_[m].lane, " pull");
  pull.bytes = classes_[m].partition_bytes[j];
  pull.latency_s = config_.calibration.alpha_s;
  pull.loads = flows_[m].pull;
  network_->Start(std::move(pull), [this, m] {
    ClassState& state = state_[m];
    state.pulling = false;
    ++state.pulled;
    TryBroadcast(m);
    TryPull(m);
  });
}

void PsStep::TryBroadcast(size_t m) {
  ClassState& s = state_[m];
  const size_t parts = classes_[m].partition_bytes.size();
  if (!NodeReduce()) {
    s.next_broadcast = s.pulled;
    if (s.next_broadcast == parts) ClassDone();
    return;
  }
  if (s.broadcasting || s.next_broadcast >= s.pulled) return;
  const size_t j = s.next_broadcast++;
  s.broadcasting = true;
  network_->Start(IntraGroup(m, j, "broadcast"), [this, m, parts] {
    ClassState& state = state_[m];
    state.broadcasting = false;
    if (state.next_broadcast == parts) {
      ClassDone();
      return;
    }
    TryBroadcast(m);
  });
}

void PsStep::ClassDone() {
  if (--classes_left_ == 0 && done_) done_();
}

}  // namespace sim
}  // namespace gradsync
