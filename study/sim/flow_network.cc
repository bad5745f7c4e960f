#include "study/sim/flow_network.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gradsync {
namespace sim {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// A group is done when less than this share of its bytes is left: the
// rounding of remaining -= rate * dt over many events, never a real byte.
constexpr double kFinishedShare = 1e-12;

}  // namespace

FlowNetwork::FlowNetwork(IncastModel incast) : incast_(incast) {}

int FlowNetwork::AddResource(ResourceSpec spec) {
  resources_.push_back({std::move(spec), 0});
  return static_cast<int>(resources_.size()) - 1;
}

void FlowNetwork::Start(FlowGroup group, Callback done) {
  const double started = now_;
  if (group.latency_s > 0) {
    const double latency = group.latency_s;
    // The group is copied into the timer; it starts moving when it fires.
    After(latency,
          [this, g = std::move(group), d = std::move(done), started]() mutable {
            BeginMoving(std::move(g), std::move(d), started);
          });
    return;
  }
  BeginMoving(std::move(group), std::move(done), started);
}

void FlowNetwork::After(double delay_s, Callback callback) {
  timers_.push_back(
      {now_ + std::max(0.0, delay_s), next_seq_++, std::move(callback)});
  std::push_heap(timers_.begin(), timers_.end(), TimerLater());
}

void FlowNetwork::BeginMoving(FlowGroup group, Callback done,
                              double started_s) {
  if (group.bytes <= 0 || group.loads.empty()) {
    // Nothing crosses a link: done now, but from the loop (never inside
    // the caller's Start), so callbacks never nest.
    After(0, [this, g = std::move(group), d = std::move(done), started_s] {
      if (record_timeline_)
        timeline_.push_back({g.name, g.lane, started_s, now_});
      if (d) d();
    });
    return;
  }
  Moving m;
  m.remaining = group.bytes;
  m.group = std::move(group);
  m.done = std::move(done);
  m.started_s = started_s;
  moving_.push_back(std::move(m));
  rates_stale_ = true;
}

void FlowNetwork::ComputeRates() {
  rates_stale_ = false;
  const size_t n = moving_.size();
  const size_t r_count = resources_.size();
  std::vector<double> left(r_count, 0);  // capacity not yet handed out
  std::vector<double> load(r_count, 0);  // flows per copy not yet frozen
  std::vector<std::vector<size_t>> crossing(r_count);
  for (size_t g = 0; g < n; ++g) {
    for (const FlowLoad& l : moving_[g].group.loads) {
      load[l.resource] += l.flows_per_copy;
      crossing[l.resource].push_back(g);
    }
  }
  for (size_t r = 0; r < r_count; ++r) {
    const ResourceSpec& spec = resources_[r].spec;
    left[r] = spec.capacity_Bps;
    if (spec.receive && incast_.threshold_flows > 0 && incast_.efficiency < 1 &&
        load[r] > incast_.threshold_flows) {
      left[r] *= incast_.efficiency;
    }
  }
  std::vector<bool> frozen(n, false);
  size_t unfrozen = n;
  while (unfrozen > 0) {
    // The resource that fills first as every unfrozen rate rises together.
    double level = kInfinity;
    size_t bottleneck = r_count;
    for (size_t r = 0; r < r_count; ++r) {
      if (load[r] <= 0) continue;
      const double at = std::max(0.0, left[r]) / load[r];
      if (at < level) {
        level = at;
        bottleneck = r;
      }
    }
    if (bottleneck == r_count) break;  // only groups with no loads remain
    for (size_t g : crossing[bottleneck]) {
      if (frozen[g]) continue;
      frozen[g] = true;
      --unfrozen;
      moving_[g].rate = level;
      for (const FlowLoad& l : moving_[g].group.loads) {
        left[l.resource] -= level * l.flows_per_copy;
        load[l.resource] -= l.flows_per_copy;
      }
    }
    load[bottleneck] = 0;  // full: rounding must not leave a sliver
  }
}

void FlowNetwork::Finish(size_t i) {
  Moving m = std::move(moving_[i]);
  moving_.erase(moving_.begin() + static_cast<std::ptrdiff_t>(i));
  rates_stale_ = true;
  for (const FlowLoad& l : m.group.loads) {
    resources_[l.resource].bytes_per_copy += l.flows_per_copy * m.group.bytes;
  }
  if (record_timeline_) {
    timeline_.push_back({m.group.name, m.group.lane, m.started_s, now_});
  }
  if (m.done) m.done();
}

absl::Status FlowNetwork::Run() {
  while (!moving_.empty() || !timers_.empty()) {
    ++events_;
    if (rates_stale_) ComputeRates();
    double next = kInfinity;
    size_t first = moving_.size();
    for (size_t i = 0; i < moving_.size(); ++i) {
      if (moving_[i].rate <= 0) continue;
      const double t = now_ + moving_[i].remaining / moving_[i].rate;
      if (t < next) {
        next = t;
        first = i;
      }
    }
    const bool timer_first = !timers_.empty() && timers_.front().time <= next;
    if (!timer_first && first == moving_.size()) {
      std::string names;
      for (const Resource& r : resources_) {
        if (r.spec.capacity_Bps > 0) continue;
        absl::StrAppend(&names, names.empty() ? "" : ", ", r.spec.name);
      }
      return absl::InternalError(absl::StrCat(
          moving_.size(), " flow group(s) can never finish at t = ", now_,
          " s (resources without capacity: ", names.empty() ? "none" : names,
          ")"));
    }
    const double to = timer_first ? timers_.front().time : next;
    const double dt = std::max(0.0, to - now_);
    for (Moving& m : moving_) m.remaining -= m.rate * dt;
    now_ = std::max(now_, to);
    if (timer_first) {
      // One timer at a time: its callback may set others for this instant.
      std::pop_heap(timers_.begin(), timers_.end(), TimerLater());
      Callback callback = std::move(timers_.back().callback);
      timers_.pop_back();
      if (callback) callback();
      continue;
    }
    moving_[first].remaining = 0;
    // Every group done by now, in the order they were started.
    for (size_t i = 0; i < moving_.size();) {
      if (moving_[i].remaining <= kFinishedShare * moving_[i].group.bytes) {
        Finish(i);  // may append to moving_; nothing before i moves
      } else {
        ++i;
      }
    }
  }
  return absl::OkStatus();
}

std::vector<ResourceUsage> FlowNetwork::Usage() const {
  std::vector<ResourceUsage> usage;
  usage.reserve(resources_.size());
  for (const Resource& r : resources_) {
    usage.push_back(
        {r.spec.name, r.spec.copies, r.spec.capacity_Bps, r.bytes_per_copy});
  }
  return usage;
}

}  // namespace sim
}  // namespace gradsync
