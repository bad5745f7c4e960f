#include "server/ps/daemon/ps_metrics.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace gradsync {
namespace {

struct Series {
  const char* name;
  const char* help;
  MetricType type;
  double (*value)(const PsShardStats&);
};

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

constexpr Series kSeries[] = {
    {"gradsync_ps_received_bytes_total",
     "Gradient bytes the shard received (failed pushes too).",
     MetricType::kCounter,
     [](const PsShardStats& s) { return static_cast<double>(s.bytes_in); }},
    {"gradsync_ps_sent_bytes_total",
     "Parameter and optimizer-state bytes the shard handed out.",
     MetricType::kCounter,
     [](const PsShardStats& s) { return static_cast<double>(s.bytes_out); }},
    {"gradsync_ps_pushes_total", "Gradients the shard committed.",
     MetricType::kCounter,
     [](const PsShardStats& s) { return static_cast<double>(s.pushes); }},
    {"gradsync_ps_pulls_total", "Parameter views the shard handed out.",
     MetricType::kCounter,
     [](const PsShardStats& s) { return static_cast<double>(s.pulls); }},
    {"gradsync_ps_updates_total", "Optimizer steps the shard applied.",
     MetricType::kCounter,
     [](const PsShardStats& s) { return static_cast<double>(s.updates); }},
    {"gradsync_ps_wait_last_worker_seconds_total",
     "Synchronous steps: time from the first worker's gradient to the "
     "last one's, summed over steps.",
     MetricType::kCounter,
     [](const PsShardStats& s) { return Seconds(s.wait_last_worker); }},
    {"gradsync_ps_last_wait_last_worker_seconds",
     "The same wait, of the last applied step.", MetricType::kGauge,
     [](const PsShardStats& s) { return Seconds(s.last_wait_last_worker); }},
    {"gradsync_ps_optimizer_seconds_total",
     "Time applying updates: the gradients' mean and the optimizer step.",
     MetricType::kCounter,
     [](const PsShardStats& s) { return Seconds(s.apply_time); }},
    {"gradsync_ps_staleness_wait_seconds_total",
     "Stale-synchronous pushes held back by the staleness bound.",
     MetricType::kCounter,
     [](const PsShardStats& s) { return Seconds(s.staleness_wait); }},
    {"gradsync_ps_queue_depth", "Gradients committed and not applied yet.",
     MetricType::kGauge,
     [](const PsShardStats& s) { return static_cast<double>(s.queue_depth); }},
    {"gradsync_ps_max_queue_depth", "The most queue_depth has been.",
     MetricType::kGauge,
     [](const PsShardStats& s) {
       return static_cast<double>(s.max_queue_depth);
     }},
    {"gradsync_ps_shard_version",
     "The shard's parameter version (steps applied, or the imported step).",
     MetricType::kGauge,
     [](const PsShardStats& s) { return static_cast<double>(s.version); }},
};

}  // namespace

void CollectPsMetrics(const PsService& service,
                      std::vector<MetricFamily>* out) {
  const std::vector<std::shared_ptr<PsShard>> shards = service.AllShards();
  MetricFamily count{"gradsync_ps_shards",
                     "Shards this server holds.",
                     MetricType::kGauge,
                     {}};
  count.samples.push_back({{}, static_cast<double>(shards.size()), {}});
  out->push_back(std::move(count));

  std::vector<MetricFamily> families;
  for (const Series& series : kSeries) {
    families.push_back(MetricFamily{series.name, series.help, series.type, {}});
  }
  for (const std::shared_ptr<PsShard>& shard : shards) {
    const PsShardStats stats = shard->Stats();
    const MetricLabels labels = {
        {"job", shard->config().job_id},
        {"shard", absl::StrCat(shard->config().shard)}};
    for (size_t i = 0; i < families.size(); ++i) {
      families[i].samples.push_back({labels, kSeries[i].value(stats), {}});
    }
  }
  for (MetricFamily& family : families) out->push_back(std::move(family));
}

}  // namespace gradsync
