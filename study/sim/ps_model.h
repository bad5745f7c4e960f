// The parameter-server layouts on a FlowNetwork: K servers, every worker
// pushing its share of each server's partitions and pulling the result
// back, partition by partition (docs/simulator.md has the equations).
//
// Placement (SimConfig::ps_placement). Contiguous (gradsync's own PS):
// server k owns a balanced share of the E gradient elements (the first
// E mod K servers one element more). Its slice is cut into partitions of
// at most partition_bytes from the slice's end toward its start, the order
// backward finishes them (server/ps's streams send their ranges that way);
// a partition is ready when its lowest element is. Spread (BytePS's):
// every layer is cut from its start into partitions of at most
// partition_bytes, and the partitions, the last layer's first, are dealt
// round-robin over the servers: server k gets partitions k, k + K, ...;
// each is ready when its layer is. So the last layers to finish backward
// no longer all land on one server.
//
// One server's stream, per worker (as the trainer's PS client runs it):
//   push j   starts when partition j is ready and push j-1 has ended
//            (one stream per worker and server: pushes go in order);
//            moves the partition from every worker to the server;
//   server   once push j is in from every worker, partition_overhead_s;
//   pull j   starts then, once pull j-1 has ended (pipelined), or once
//            every push of this server is in (unpipelined); moves the
//            partition from the server to every worker.
// So the pull of one partition overlaps the push of the next on the
// full-duplex links. Each message costs alpha before its first byte.
//
// Reduction in the node (ps_node_reduce, G > 1; BytePS's design). Before
// push j, the node's G workers reduce partition j of size P onto one of
// them: a reduce-scatter (G-1 steps of P/G) and a gather of the G-1 other
// slices, 2(G-1)/G * P into the gathering GPU (the busiest intra-node
// link; simulated as that much on every GPU's link, each way), after G
// intra alphas. Only that worker pushes: one flow per node to each
// server, M = N/G into each server's NIC. After pull j, it broadcasts the
// result in the node (a scatter and an all-gather, the same bytes and
// alphas). Reductions run one after another, as do broadcasts, each
// overlapping the pushes and pulls of other partitions; the step ends
// with the last broadcast. In the limit of infinitely fast intra-node
// links that is the PS of M workers, one per node.
//
// Links. Separate: each server host has its own NIC; the workers' nodes
// theirs. Colocated: server k runs on node k and shares that node's NIC
// with its G workers; their pushes to it and its pulls to them stay in the
// node. A server's CPU is a resource of server_cores / (seconds per byte)
// bytes/s that every byte into or out of it crosses (the transport's cost,
// calibration.h), so a CPU-bound server slows its flows as a slow NIC
// would.
//
// Aggregation. The workers are symmetric, so every node (or every node
// without a server, colocated) is one resource of M copies. Servers are
// not (their slices are ready at different times), so each server is
// simulated on its own while K <= max_server_classes. Above that, the K
// servers form max_server_classes classes of neighbouring shards, each
// simulated as its members moving in lockstep: a class's partition j is
// ready when its last member's is, and moves the members' mean bytes. That
// is exact when the members' partitions are ready together (no compute,
// or a layer spanning the class) and otherwise late by at most the
// backward time of one class's range (contiguous) or of the class's count
// of consecutive partitions (spread).
//
// Threading: thread-compatible; one PsStep per simulation.
#ifndef GRADSYNC_STUDY_SIM_PS_MODEL_H_
#define GRADSYNC_STUDY_SIM_PS_MODEL_H_

#include <functional>
#include <string>
#include <vector>

#include "study/sim/flow_network.h"
#include "study/sim/sim_config.h"
#include "study/sim/workload.h"

namespace gradsync {
namespace sim {

// Servers [first, first + count) simulated as one (the top).
struct ServerClass {
  int first = 0;
  int count = 1;
  std::vector<double> partition_bytes;  // per partition, on the wire
  std::vector<double> ready_s;          // per partition
  double bytes() const;                 // one member's slice
};

// The classes of `config`'s servers for `timeline`'s gradient (the top).
// `config` must be a valid PS config.
std::vector<ServerClass> ServerClasses(const SimConfig& config,
                                       const GradientTimeline& timeline);

// The pushes and pulls of one step on `network`.
class PsStep {
 public:
  // Adds the layout's resources to `network` (which must outlive this).
  PsStep(const SimConfig& config, std::vector<ServerClass> classes,
         FlowNetwork* network);
  PsStep(const PsStep&) = delete;
  PsStep& operator=(const PsStep&) = delete;

  // Issues the step's flows from now on; `done` runs once every pull has
  // ended (at once, from the loop, when there is nothing to move).
  void Start(std::function<void()> done);

 private:
  // Per class: the resources and loads of its pushes and pulls.
  struct ClassFlows {
    std::vector<FlowLoad> push;
    std::vector<FlowLoad> pull;
    std::vector<FlowLoad> intra;  // node reduce and broadcast; none: off
    std::string lane;             // "server 3", "servers 16-31"
  };
  struct ClassState {
    size_t next_reduce = 0;
    size_t reduced = 0;  // partitions reduced in the node (all: no reduce)
    size_t next_push = 0;
    bool pushing = false;
    size_t pull_ready = 0;  // partitions whose pull may start
    size_t next_pull = 0;
    bool pulling = false;
    size_t pulled = 0;  // partitions whose broadcast may start
    size_t next_broadcast = 0;
    bool broadcasting = false;
  };

  void AddResources();
  bool NodeReduce() const;
  // The reduce and broadcast in the node of one of class m's partitions.
  FlowGroup IntraGroup(size_t m, size_t j, const char* what) const;
  void ScheduleReduce(size_t m);
  void TryPush(size_t m);
  void TryPull(size_t m);
  void TryBroadcast(size_t m);
  void ClassDone();

  SimConfig config_;
  std::vector<ServerClass> classes_;
  FlowNetwork* network_;
  std::vector<ClassFlows> flows_;
  std::vector<ClassState> state_;
  size_t classes_left_ = 0;
  std::function<void()> done_;
};

}  // namespace sim
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_SIM_PS_MODEL_H_
