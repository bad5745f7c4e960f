// The coordinator's Prometheus series (observability/prometheus.h), read at
// scrape time from the state it already keeps under CoordinatorState::mu: no
// counter here is kept twice. CoordinatorService::CollectMetrics takes the
// lock and calls CollectCoordinatorMetricsLocked; the daemon registers
// that as a collector of its MetricsRegistry.
//
// Series (docs/monitoring.md lists them with their meaning):
//   gradsync_coordinator_jobs{state}                       gauge
//   gradsync_coordinator_workers{state}                    gauge
//   gradsync_coordinator_parameter_servers{state}          gauge
//   gradsync_coordinator_heartbeat_age_seconds{daemon,kind,host}  gauge
//   per job in RENDEZVOUS or RUNNING, from its rank 0's step metrics:
//   gradsync_job_step{job}                                 gauge
//   gradsync_job_loss{job}                                 gauge
//   gradsync_job_samples_per_second{job}                   gauge
//   gradsync_job_step_seconds{job}                         gauge
//   gradsync_job_step_phase_seconds{job,phase}             gauge
//   gradsync_job_busbw_bytes_per_second{job,mode}          gauge
//   gradsync_job_info{job,mode,model}                      gauge (1)
//
// The per-job figures are means over the last kJobMetricsWindow steps of
// rank 0 (as `gradsync watch` shows them); busbw is the latest step of each
// mode among the job's last kBusbwLookback reports.
#ifndef GRADSYNC_SERVER_COORDINATOR_COORDINATOR_METRICS_H_
#define GRADSYNC_SERVER_COORDINATOR_COORDINATOR_METRICS_H_

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "observability/prometheus.h"
#include "server/coordinator/coordinator_state.h"

namespace gradsync {

inline constexpr int kJobMetricsWindow = 10;
inline constexpr int kBusbwLookback = 4096;

// Appends the series above, as of `now` (heartbeat ages).
void CollectCoordinatorMetricsLocked(const CoordinatorState& state,
                                     absl::Time now,
                                     std::vector<MetricFamily>* out)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(state.mu);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_COORDINATOR_METRICS_H_
