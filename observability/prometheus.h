// A small Prometheus metrics registry and its text exposition format
// (https://prometheus.io/docs/instrumenting/exposition_formats/, version
// 0.0.4), with no HTTP and no gRPC inside: daemons fill a MetricsRegistry
// and a thin adapter (observability/metrics_http.h) serves Render() on
// /metrics.
//
// Two ways to publish a series:
//   - owned metrics, for what nothing else counts yet: a Counter, Gauge or
//     Histogram per label set, from a family added to the registry;
//   - collectors, for what a service already keeps under its own lock: a
//     callback run at scrape time that reads that state and appends
//     MetricFamily values, so that nothing is counted twice.
//
//   MetricsRegistry registry;
//   ASSIGN_OR_RETURN(HistogramFamily* latency,
//                    registry.AddHistogram("gradsync_allreduce_seconds",
//                                          "All-reduce latency.", {"mode"},
//                                          {0.001, 0.01, 0.1, 1}));
//   ASSIGN_OR_RETURN(Histogram* ring, latency->WithLabels({"ring"}));
//   ring->Observe(0.004);
//   registry.AddCollector([&service](std::vector<MetricFamily>* out) {
//     service.CollectMetrics(out);  // appends MetricFamily values
//   });
//   std::string text = registry.Render();
//
// Names follow Prometheus's rules ([a-zA-Z_:][a-zA-Z0-9_:]*, labels
// without ':' and not starting "__"); Add* refuse others, and a name used
// twice, with INVALID_ARGUMENT / ALREADY_EXISTS. Collectors are trusted to
// produce valid names (their families are plain values).
//
// Threading: every class here is thread-safe. A collector runs on the
// scraping thread with the registry's lock released; it may take its
// service's locks but must not call back into the registry.
#ifndef GRADSYNC_OBSERVABILITY_PROMETHEUS_H_
#define GRADSYNC_OBSERVABILITY_PROMETHEUS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"

namespace gradsync {

enum class MetricType { kCounter, kGauge, kHistogram };

// Label name/value pairs, in the order they are rendered.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// A histogram's state: `bucket_counts[i]` observations were <=
// `upper_bounds[i]` (cumulative, as rendered), `count` in all (the +Inf
// bucket) and `sum` their total.
struct HistogramSnapshot {
  std::vector<double> upper_bounds;
  std::vector<uint64_t> bucket_counts;
  uint64_t count = 0;
  double sum = 0;
};

// One series of a family: its labels and its value (counter, gauge) or
// histogram.
struct MetricSample {
  MetricLabels labels;
  double value = 0;
  HistogramSnapshot histogram;  // kHistogram only
};

// What Render prints for one metric name: HELP, TYPE, then each sample.
struct MetricFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<MetricSample> samples;
};

// The text format of `families`, in order. Values print as the shortest
// decimal that reads back to the same double (integers without a point),
// +Inf, -Inf and NaN as Prometheus spells them; label values and help
// text are escaped.
std::string RenderMetrics(absl::Span<const MetricFamily> families);

// "le" values and sample values as RenderMetrics prints them.
std::string FormatMetricValue(double value);

// OK, or INVALID_ARGUMENT naming what is wrong with a metric or label name.
[[nodiscard]] absl::Status CheckMetricName(absl::string_view name);
[[nodiscard]] absl::Status CheckLabelName(absl::string_view name);

// A monotonically increasing value.
class Counter {
 public:
  // Adds `by` (negative amounts are ignored: a counter never goes down).
  void Increment(double by = 1);
  double Value() const;

 private:
  mutable absl::Mutex mu_;
  double value_ ABSL_GUARDED_BY(mu_) = 0;
};

class Gauge {
 public:
  void Set(double value);
  void Add(double by);
  double Value() const;

 private:
  mutable absl::Mutex mu_;
  double value_ ABSL_GUARDED_BY(mu_) = 0;
};

// Observations counted in fixed buckets (upper bounds, increasing; +Inf is
// implicit).
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double value);
  HistogramSnapshot Snapshot() const;

 private:
  const std::vector<double> upper_bounds_;
  mutable absl::Mutex mu_;
  // Per bucket, not cumulative; the last one is +Inf.
  std::vector<uint64_t> counts_ ABSL_GUARDED_BY(mu_);
  double sum_ ABSL_GUARDED_BY(mu_) = 0;
};

// The metrics of one name, one per label set. WithLabels creates a series
// the first time it sees its values and returns the same one afterwards;
// the series live as long as the registry.
template <typename Metric>
class MetricFamilyOf {
 public:
  // INVALID_ARGUMENT when the number of values is not the number of label
  // names.
  [[nodiscard]] absl::StatusOr<Metric*> WithLabels(
      const std::vector<std::string>& values);

  // The family's current values, series in label order.
  MetricFamily Collect() const;

 private:
  friend class MetricsRegistry;
  MetricFamilyOf(std::string name, std::string help, MetricType type,
                 std::vector<std::string> label_names,
                 std::vector<double> upper_bounds)
      : name_(std::move(name)),
        help_(std::move(help)),
        type_(type),
        label_names_(std::move(label_names)),
        upper_bounds_(std::move(upper_bounds)) {}

  const std::string name_;
  const std::string help_;
  const MetricType type_;
  const std::vector<std::string> label_names_;
  const std::vector<double> upper_bounds_;  // histograms only
  mutable absl::Mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Metric>> series_
      ABSL_GUARDED_BY(mu_);
};

using CounterFamily = MetricFamilyOf<Counter>;
using GaugeFamily = MetricFamilyOf<Gauge>;
using HistogramFamily = MetricFamilyOf<Histogram>;

// Appends the families a service publishes at scrape time.
using MetricsCollector = std::function<void(std::vector<MetricFamily>* out)>;

class MetricsRegistry {
 public:
  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // INVALID_ARGUMENT: a bad metric or label name, histogram bounds that
  // are empty or not increasing. ALREADY_EXISTS: the name is taken.
  [[nodiscard]] absl::StatusOr<CounterFamily*> AddCounter(
      const std::string& name, const std::string& help,
      std::vector<std::string> label_names = {});
  [[nodiscard]] absl::StatusOr<GaugeFamily*> AddGauge(
      const std::string& name, const std::string& help,
      std::vector<std::string> label_names = {});
  [[nodiscard]] absl::StatusOr<HistogramFamily*> AddHistogram(
      const std::string& name, const std::string& help,
      std::vector<std::string> label_names, std::vector<double> upper_bounds);

  // Runs `collector` at every Collect, after the owned families, in the
  // order collectors were added. Returns an id for RemoveCollector.
  int AddCollector(MetricsCollector collector);
  // Stops calling the collector (call it before what the collector reads
  // goes away). Returns once no Collect is running it.
  void RemoveCollector(int id);

  // Every owned family, then what the collectors append.
  std::vector<MetricFamily> Collect() const;
  // RenderMetrics(Collect()).
  std::string Render() const;

 private:
  [[nodiscard]] absl::Status CheckNewLocked(
      const std::string& name, const std::vector<std::string>& label_names)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::vector<std::string> names_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<CounterFamily>> counters_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<GaugeFamily>> gauges_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<HistogramFamily>> histograms_
      ABSL_GUARDED_BY(mu_);
  // Owned families in the order they were added: (kind, index).
  std::vector<std::pair<MetricType, size_t>> order_ ABSL_GUARDED_BY(mu_);

  // Collectors have their own lock, held while they run, so that
  // RemoveCollector waits for a scrape in progress and Add* never waits
  // for one.
  mutable absl::Mutex collectors_mu_;
  int next_collector_id_ ABSL_GUARDED_BY(collectors_mu_) = 1;
  std::map<int, MetricsCollector> collectors_ ABSL_GUARDED_BY(collectors_mu_);
};

}  // namespace gradsync

#endif  // GRADSYNC_OBSERVABILITY_PROMETHEUS_H_
