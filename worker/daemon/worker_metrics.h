// WorkerMetrics: a worker daemon's Prometheus series
// (observability/prometheus.h): how busy its devices are, what its ranks' steps
// cost, and how long its all-reduce calls take. The job runner feeds it
// (RankStarted/RankEnded around each rank, AddStep with each step's metrics,
// and a TimedCommunicator, timed_communicator.h, around each rank's ring);
// device time is read at scrape time, so a long rank counts while it runs.
//
//   gradsync_worker_device_ranks{device}                       gauge
//   gradsync_worker_device_busy_seconds_total{device}          counter
//   gradsync_worker_steps_total{mode}                          counter
//   gradsync_worker_step_phase_seconds_total{mode,phase}       counter
//   gradsync_worker_step_seconds{mode}                         histogram
//   gradsync_worker_sync_seconds{mode}                         histogram
//   gradsync_worker_sent_bytes_total{mode}                     counter
//   gradsync_worker_received_bytes_total{mode}                 counter
//   gradsync_worker_allreduce_seconds                          histogram
//
// Threading: thread-safe (every rank thread reports here).
#ifndef GRADSYNC_WORKER_DAEMON_WORKER_METRICS_H_
#define GRADSYNC_WORKER_DAEMON_WORKER_METRICS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "observability/prometheus.h"
#include "proto/coordinator.pb.h"

namespace gradsync {

// Bucket bounds, in seconds.
std::vector<double> StepSecondsBuckets();
std::vector<double> AllReduceSecondsBuckets();

class WorkerMetrics {
 public:
  // Adds the families above to `registry`, which must outlive the result;
  // `devices` ("cpu:0", "cuda:1") get their series at once, at 0.
  // Errors: the registry's (ALREADY_EXISTS when called twice on one).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<WorkerMetrics>> Create(
      MetricsRegistry* registry, const std::vector<std::string>& devices);
  // Removes its collector from the registry.
  ~WorkerMetrics();
  WorkerMetrics(const WorkerMetrics&) = delete;
  WorkerMetrics& operator=(const WorkerMetrics&) = delete;

  // A rank started or ended on `device`; the device is busy while it runs
  // at least one.
  void RankStarted(const std::string& device);
  void RankEnded(const std::string& device);
  // One step of a local rank.
  void AddStep(const StepMetrics& step);
  // One all-reduce call's own duration (Work::Elapsed).
  void ObserveAllReduce(absl::Duration elapsed);

 private:
  struct Owned {
    CounterFamily* steps;
    CounterFamily* phase;
    HistogramFamily* step_seconds;
    HistogramFamily* sync_seconds;
    CounterFamily* sent;
    CounterFamily* received;
    Histogram* allreduce;
  };
  struct DeviceUse {
    int ranks = 0;
    absl::Time since;     // when ranks went from 0 to 1
    absl::Duration busy;  // closed busy periods
  };

  WorkerMetrics(MetricsRegistry* registry, Owned owned,
                const std::vector<std::string>& devices);
  void Collect(std::vector<MetricFamily>* out) const;

  MetricsRegistry* const registry_;
  const Owned owned_;
  int collector_id_ = 0;
  mutable absl::Mutex mu_;
  std::map<std::string, DeviceUse> devices_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_DAEMON_WORKER_METRICS_H_
