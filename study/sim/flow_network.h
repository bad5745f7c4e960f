// FlowNetwork: the discrete-event engine under the step simulator. It moves
// fluid flows over link directions with max-min fair sharing, adds a
// latency (alpha) before each flow's first byte, runs timers, and records
// a timeline and the bytes each link carried.
//
// Resources. A resource is one direction of a link (a node's NIC out, a
// server's NIC in), or a server's CPU expressed in bytes per second. It
// has `copies` identical members: "every worker node's NIC out" is one
// resource of M copies. Symmetric hosts are aggregated this way so that a
// step of 1,024 workers costs as many events as a step of 8.
//
// Flow groups. A group is a set of identical flows (same bytes, same
// start, same rate) that loads each resource it crosses with
// `flows_per_copy` of its flows on every copy (or on the busiest copy,
// where the copies are not loaded alike; the builders say which). All
// flows of a group move at one rate r, so a resource's copy carries
// sum(flows_per_copy * r) over the groups crossing it. A group starts,
// waits its latency, moves `bytes` per flow, and then calls its done
// callback.
//
// Sharing. Rates are max-min fair over the resources (progressive
// filling): every group's rate rises together until some resource is
// full; the groups crossing it are frozen at that rate; the rest go on
// rising over what is left. With one resource this is the equal share per
// active flow. Incast: a receiving resource whose copy has more than the
// threshold of flows at once runs at its capacity times the incast
// efficiency (calibration.h); with the penalty off, flows share the
// receiving NIC exactly.
//
// Events. The engine advances from event to event: a timer, a latency
// that ends, or the first group to finish at the current rates. Rates are
// recomputed whenever the set of moving groups changes. Callbacks run on
// the caller's thread inside Run() and may start groups and timers.
//
// Errors: Run() returns INTERNAL when moving flows can never finish (a
// resource of zero capacity carries them). Everything else is a
// precondition of the builders (resources that exist, non-negative bytes
// and latencies).
// Threading: thread-compatible; one simulation per FlowNetwork.
#ifndef GRADSYNC_STUDY_SIM_FLOW_NETWORK_H_
#define GRADSYNC_STUDY_SIM_FLOW_NETWORK_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace gradsync {
namespace sim {

struct IncastModel {
  double threshold_flows = 0;  // 0: off
  double efficiency = 1.0;     // (0, 1]; 1: off
};

struct ResourceSpec {
  std::string name;         // "worker node NIC out", "server CPU"
  double capacity_Bps = 0;  // each copy, bytes per second (> 0)
  int copies = 1;           // identical members
  bool receive = false;     // a receiving NIC direction: incast applies
};

struct FlowLoad {
  int resource = 0;           // an id from AddResource
  double flows_per_copy = 0;  // > 0
};

struct FlowGroup {
  std::string name;  // for the timeline: "bucket 3 ring"
  std::string lane;  // the timeline's row: "all-reduce", "server 2 push"
  double bytes = 0;  // per flow
  double latency_s = 0;
  std::vector<FlowLoad> loads;  // none: the bytes move locally, instantly
};

// A [start, end) span on the timeline, in seconds from the step's start.
struct TimelineEvent {
  std::string name;
  std::string lane;
  double start_s = 0;
  double end_s = 0;
};

// What one resource carried over the whole run.
struct ResourceUsage {
  std::string name;
  int copies = 1;
  double capacity_Bps = 0;
  double bytes_per_copy = 0;  // on its busiest copy
  // bytes_per_copy / capacity: how long the busiest copy was busy at full
  // rate.
  double busy_s() const {
    return capacity_Bps > 0 ? bytes_per_copy / capacity_Bps : 0;
  }
};

class FlowNetwork {
 public:
  using Callback = std::function<void()>;

  explicit FlowNetwork(IncastModel incast = {});
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  // A resource; returns its id for FlowLoad::resource.
  int AddResource(ResourceSpec spec);

  // Starts `group` now: its bytes begin to move after its latency; `done`
  // runs when every flow of it has finished.
  void Start(FlowGroup group, Callback done);

  // Runs `callback` at now() + delay_s (delay_s >= 0). Timers due at one
  // instant run in the order they were set.
  void After(double delay_s, Callback callback);

  // Whether groups leave spans on the timeline (default true); a sweep
  // that reads only the times turns it off.
  void set_record_timeline(bool record) { record_timeline_ = record; }

  // Runs until nothing is left to do. INTERNAL as described at the top.
  [[nodiscard]] absl::Status Run();

  double now() const { return now_; }
  // Loop iterations so far (events handled); for sizing sweeps.
  int64_t events() const { return events_; }
  // Every span, in the order they ended.
  const std::vector<TimelineEvent>& timeline() const { return timeline_; }
  // Every resource, in the order they were added.
  std::vector<ResourceUsage> Usage() const;

 private:
  struct Resource {
    ResourceSpec spec;
    double bytes_per_copy = 0;
  };
  struct Moving {
    FlowGroup group;
    Callback done;
    double started_s = 0;  // when Start was called (its latency included)
    double remaining = 0;  // bytes per flow still to move
    double rate = 0;       // bytes per second per flow
  };
  struct Timer {
    double time = 0;
    int64_t seq = 0;
    Callback callback;
  };
  struct TimerLater {
    bool operator()(const Timer& a, const Timer& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };

  // Puts a group whose latency has passed among the moving ones.
  void BeginMoving(FlowGroup group, Callback done, double started_s);
  // Max-min fair rates for the moving groups (the top).
  void ComputeRates();
  // Retires `moving_[i]`: its bytes, its span, then its callback.
  void Finish(size_t i);

  IncastModel incast_;
  std::vector<Resource> resources_;
  std::vector<Moving> moving_;
  std::vector<Timer> timers_;  // a heap under TimerLater: earliest first
  std::vector<TimelineEvent> timeline_;
  double now_ = 0;
  int64_t next_seq_ = 0;
  int64_t events_ = 0;
  bool rates_stale_ = true;
  bool record_timeline_ = true;
};

}  // namespace sim
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_SIM_FLOW_NETWORK_H_
