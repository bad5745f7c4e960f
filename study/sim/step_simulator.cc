#include "study/sim/step_simulator.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "study/sim/collective_model.h"
#include "study/sim/ps_model.h"

namespace gradsync {
namespace sim {
namespace {

// Runs the buckets' collectives one after another: bucket b's steps start
// when it is ready and bucket b-1's last step has ended; a step's groups
// start together and the next step starts when all of them have ended.
class AllReduceDriver {
 public:
  AllReduceDriver(const SimConfig& config, std::vector<GradRange> buckets,
                  FlowNetwork* network)
      : config_(config),
        buckets_(std::move(buckets)),
        steps_(AllReduceSteps(config)),
        network_(network),
        resources_(AddAllReduceResources(config, network)) {}

  // Issues the collectives from now on; `done` runs after the last.
  void Start(std::function<void()> done) {
    done_ = std::move(done);
    if (steps_.empty()) buckets_.clear();  // a single worker: nothing to do
    NextBucket();
  }

 private:
  void NextBucket() {
    if (bucket_ == buckets_.size()) {
      network_->After(0, [this] {
        if (done_) done_();
      });
      return;
    }
    step_ = 0;
    const double wait = buckets_[bucket_].ready_s - network_->now();
    network_->After(std::max(0.0, wait), [this] { NextStep(); });
  }

  void NextStep() {
    while (step_ < steps_.size()) {
      const GradRange& b = buckets_[bucket_];
      std::vector<FlowGroup> groups = StepGroups(
          steps_[step_++],
          static_cast<double>(b.size()) * config_.grad_bytes_per_element,
          config_, resources_, absl::StrCat("bucket ", bucket_));
      if (groups.empty()) continue;
      pending_ = groups.size();
      for (FlowGroup& g : groups) {
        network_->Start(std::move(g), [this] {
          if (--pending_ == 0) NextStep();
        });
      }
      return;
    }
    ++bucket_;
    NextBucket();
  }

  const SimConfig& config_;
  std::vector<GradRange> buckets_;
  std::vector<CollectiveStep> steps_;
  FlowNetwork* network_;
  AllReduceResources resources_;
  std::function<void()> done_;
  size_t bucket_ = 0;
  size_t step_ = 0;
  size_t pending_ = 0;
};

// Elements of at most `bytes` bytes of `width`, at least one.
int64_t ElementsOf(double bytes, int width) {
  return std::max<int64_t>(1, static_cast<int64_t>(bytes / width));
}

}  // namespace

const ResourceUsage* SimResult::Busiest() const {
  const ResourceUsage* busiest = nullptr;
  for (const ResourceUsage& u : links) {
    if (u.bytes_per_copy <= 0) continue;
    if (busiest == nullptr || u.busy_s() > busiest->busy_s()) busiest = &u;
  }
  return busiest;
}

absl::StatusOr<SimResult> SimulateStep(const SimConfig& config,
                                       const SimWorkload& workload) {
  RETURN_IF_ERROR(ValidateSimConfig(config));
  const GradientTimeline timeline(workload);
  if (timeline.elements() <= 0) {
    return absl::InvalidArgumentError(
        "the workload has no gradient to synchronise");
  }
  FlowNetwork network({config.calibration.incast_threshold_flows,
                       config.calibration.incast_efficiency});
  network.set_record_timeline(config.record_timeline);
  double sync_end = 0;
  auto finished = [&network, &sync_end] { sync_end = network.now(); };

  // Both drivers keep pointers into the network; they outlive Run().
  std::unique_ptr<AllReduceDriver> all_reduce;
  std::unique_ptr<PsStep> ps;
  if (IsPsLayout(config.layout)) {
    ps = std::make_unique<PsStep>(config, ServerClasses(config, timeline),
                                  &network);
    ps->Start(finished);
  } else {
    const int width = config.grad_bytes_per_element;
    all_reduce = std::make_unique<AllReduceDriver>(
        config,
        CutBuckets(timeline, ElementsOf(config.bucket_bytes, width),
                   config.first_bucket_bytes > 0
                       ? ElementsOf(config.first_bucket_bytes, width)
                       : 0),
        &network);
    all_reduce->Start(finished);
  }
  RETURN_IF_ERROR(network.Run());

  SimResult result;
  result.forward_s = timeline.forward_s();
  result.backward_s = timeline.backward_end_s() - timeline.forward_s();
  result.step_s = std::max(timeline.backward_end_s(), sync_end);
  result.exposed_comm_s = result.step_s - timeline.backward_end_s();
  result.gradient_bytes =
      static_cast<double>(timeline.elements()) * config.grad_bytes_per_element;
  result.links = network.Usage();
  result.events = network.events();
  if (config.record_timeline) {
    if (timeline.forward_s() > 0) {
      result.timeline.push_back(
          {"forward", "compute", 0, timeline.forward_s()});
    }
    for (size_t i = 0; i < workload.layers.size(); ++i) {
      const GradientTimeline::Span& s = timeline.layer_spans()[i];
      if (s.end_s <= s.start_s) continue;  // a bias: no time of its own
      result.timeline.push_back(
          {absl::StrCat("backward ", workload.layers[i].name), "compute",
           s.start_s, s.end_s});
    }
    const std::vector<TimelineEvent>& flows = network.timeline();
    result.timeline.insert(result.timeline.end(), flows.begin(), flows.end());
    std::stable_sort(result.timeline.begin(), result.timeline.end(),
                     [](const TimelineEvent& a, const TimelineEvent& b) {
                       return a.start_s < b.start_s;
                     });
  }
  return result;
}

absl::StatusOr<std::string> FindBottleneck(const SimConfig& config,
                                           const SimWorkload& workload,
                                           const SimResult& result) {
  if (result.exposed_comm_s <= 0.05 * result.step_s) return "compute";
  SimConfig no_latency = config;
  no_latency.calibration.alpha_s = 0;
  no_latency.calibration.intra_alpha_s = 0;
  no_latency.calibration.partition_overhead_s = 0;
  no_latency.record_timeline = false;
  ASSIGN_OR_RETURN(const SimResult bytes_only,
                   SimulateStep(no_latency, workload));
  const ResourceUsage* busiest = result.Busiest();
  if (busiest == nullptr ||
      bytes_only.exposed_comm_s < 0.5 * result.exposed_comm_s) {
    return std::string("latency (alpha)");
  }
  return busiest->name;
}

}  // namespace sim
}  // namespace gradsync
