// A parameter server's Prometheus series (observability/prometheus.h), read at
// scrape time from the counters each shard already keeps
// (PsShard::Stats(), shard_types.h): one series per (job, shard) the
// server holds now; a released shard's series go with it.
//
//   gradsync_ps_shards                                         gauge
//   gradsync_ps_received_bytes_total{job,shard}                counter
//   gradsync_ps_sent_bytes_total{job,shard}                    counter
//   gradsync_ps_pushes_total{job,shard}                        counter
//   gradsync_ps_pulls_total{job,shard}                         counter
//   gradsync_ps_updates_total{job,shard}                       counter
//   gradsync_ps_wait_last_worker_seconds_total{job,shard}      counter
//   gradsync_ps_last_wait_last_worker_seconds{job,shard}       gauge
//   gradsync_ps_optimizer_seconds_total{job,shard}             counter
//   gradsync_ps_staleness_wait_seconds_total{job,shard}        counter
//   gradsync_ps_queue_depth{job,shard}                         gauge
//   gradsync_ps_max_queue_depth{job,shard}                     gauge
//   gradsync_ps_shard_version{job,shard}                       gauge
//
// Threading: takes each shard's own lock in turn (through Stats()).
#ifndef GRADSYNC_SERVER_PS_DAEMON_PS_METRICS_H_
#define GRADSYNC_SERVER_PS_DAEMON_PS_METRICS_H_

#include <vector>

#include "observability/prometheus.h"
#include "server/ps/daemon/ps_service.h"

namespace gradsync {

// Appends the series above for every shard `service` holds.
void CollectPsMetrics(const PsService& service, std::vector<MetricFamily>* out);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_DAEMON_PS_METRICS_H_
