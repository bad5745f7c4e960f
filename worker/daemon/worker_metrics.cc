#include "worker/daemon/worker_metrics.h"

#include <utility>

#include "common/status_macros.h"
#include "jobspec/sync_mode_name.h"

namespace gradsync {
namespace {

// Series of a family that the registry made: WithLabels only fails on a
// wrong number of values, which the calls below never pass.
template <typename Metric>
Metric* Series(MetricFamilyOf<Metric>* family,
               const std::vector<std::string>& values) {
  absl::StatusOr<Metric*> metric = family->WithLabels(values);
  return metric.ok() ? *metric : nullptr;
}

}  // namespace

std::vector<double> StepSecondsBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
          0.25,  0.5,    1,     2.5,  5,     10,   30};
}

std::vector<double> AllReduceSecondsBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
          0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
}

absl::StatusOr<std::unique_ptr<WorkerMetrics>> WorkerMetrics::Create(
    MetricsRegistry* registry, const std::vector<std::string>& devices) {
  Owned owned;
  ASSIGN_OR_RETURN(
      owned.steps,
      registry->AddCounter("gradsync_worker_steps_total",
                           "Steps this worker's ranks ran.", {"mode"}));
  ASSIGN_OR_RETURN(
      owned.phase,
      registry->AddCounter(
          "gradsync_worker_step_phase_seconds_total",
          "Step time of this worker's ranks by phase: compute, exposed "
          "communication (not hidden behind compute) and idle.",
          {"mode", "phase"}));
  ASSIGN_OR_RETURN(owned.step_seconds,
                   registry->AddHistogram("gradsync_worker_step_seconds",
                                          "Step times of this worker's ranks.",
                                          {"mode"}, StepSecondsBuckets()));
  ASSIGN_OR_RETURN(
      owned.sync_seconds,
      registry->AddHistogram(
          "gradsync_worker_sync_seconds",
          "Per step, how long the gradient sync was busy (ring: the "
          "buckets' collectives; PS: the shard streams).",
          {"mode"}, StepSecondsBuckets()));
  ASSIGN_OR_RETURN(
      owned.sent, registry->AddCounter("gradsync_worker_sent_bytes_total",
                                       "Bytes this worker's ranks sent to sync "
                                       "gradients and parameters.",
                                       {"mode"}));
  ASSIGN_OR_RETURN(owned.received,
                   registry->AddCounter(
                       "gradsync_worker_received_bytes_total",
                       "Bytes this worker's ranks received to sync gradients "
                       "and parameters.",
                       {"mode"}));
  ASSIGN_OR_RETURN(HistogramFamily * allreduce,
                   registry->AddHistogram(
                       "gradsync_worker_allreduce_seconds",
                       "Duration of each all-reduce call of the ranks' TCP "
                       "ring (from its start to its end, queueing excluded).",
                       {}, AllReduceSecondsBuckets()));
  owned.allreduce = Series(allreduce, {});
  // Both modes' series exist from the start, at 0.
  for (const SyncMode sync : {SYNC_MODE_RING, SYNC_MODE_PS}) {
    const std::string mode = SyncModeName(sync);
    Series(owned.steps, {mode});
    Series(owned.sent, {mode});
    Series(owned.received, {mode});
    for (const char* phase : {"compute", "communication", "idle"}) {
      Series(owned.phase, {mode, phase});
    }
  }
  std::unique_ptr<WorkerMetrics> metrics(
      new WorkerMetrics(registry, owned, devices));
  WorkerMetrics* self = metrics.get();
  metrics->collector_id_ = registry->AddCollector(
      [self](std::vector<MetricFamily>* out) { self->Collect(out); });
  return metrics;
}

WorkerMetrics::WorkerMetrics(MetricsRegistry* registry, Owned owned,
                             const std::vector<std::string>& devices)
    : registry_(registry), owned_(owned) {
  absl::MutexLock lock(&mu_);
  for (const std::string& device : devices) devices_[device];
}

WorkerMetrics::~WorkerMetrics() { registry_->RemoveCollector(collector_id_); }

void WorkerMetrics::RankStarted(const std::string& device) {
  absl::MutexLock lock(&mu_);
  DeviceUse& use = devices_[device];
  if (use.ranks++ == 0) use.since = absl::Now();
}

void WorkerMetrics::RankEnded(const std::string& device) {
  absl::MutexLock lock(&mu_);
  DeviceUse& use = devices_[device];
  if (use.ranks == 0) return;
  if (--use.ranks == 0) use.busy += absl::Now() - use.since;
}

void WorkerMetrics::AddStep(const StepMetrics& step) {
  const std::string mode = SyncModeName(step.mode());
  if (Counter* c = Series(owned_.steps, {mode})) c->Increment();
  if (Counter* c = Series(owned_.phase, {mode, "compute"})) {
    c->Increment(step.compute_s());
  }
  if (Counter* c = Series(owned_.phase, {mode, "communication"})) {
    c->Increment(step.comm_s());
  }
  if (Counter* c = Series(owned_.phase, {mode, "idle"})) {
    c->Increment(step.idle_s());
  }
  if (Histogram* h = Series(owned_.step_seconds, {mode})) {
    h->Observe(step.step_s());
  }
  // 0: the collectives' durations could not be read (StepMetrics).
  if (step.sync_busy_s() > 0) {
    if (Histogram* h = Series(owned_.sync_seconds, {mode})) {
      h->Observe(step.sync_busy_s());
    }
  }
  if (Counter* c = Series(owned_.sent, {mode})) {
    c->Increment(static_cast<double>(step.bytes_sent()));
  }
  if (Counter* c = Series(owned_.received, {mode})) {
    c->Increment(static_cast<double>(step.bytes_received()));
  }
}

void WorkerMetrics::ObserveAllReduce(absl::Duration elapsed) {
  if (owned_.allreduce != nullptr) {
    owned_.allreduce->Observe(absl::ToDoubleSeconds(elapsed));
  }
}

void WorkerMetrics::Collect(std::vector<MetricFamily>* out) const {
  MetricFamily ranks{"gradsync_worker_device_ranks",
                     "Ranks running on each device of this worker now.",
                     MetricType::kGauge,
                     {}};
  MetricFamily busy{"gradsync_worker_device_busy_seconds_total",
                    "Time each device of this worker had a rank running.",
                    MetricType::kCounter,
                    {}};
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  for (const auto& [device, use] : devices_) {
    const MetricLabels labels = {{"device", device}};
    ranks.samples.push_back({labels, static_cast<double>(use.ranks), {}});
    const absl::Duration open =
        use.ranks > 0 ? now - use.since : absl::ZeroDuration();
    busy.samples.push_back(
        {labels, absl::ToDoubleSeconds(use.busy + open), {}});
  }
  out->push_back(std::move(ranks));
  out->push_back(std::move(busy));
}

}  // namespace gradsync
