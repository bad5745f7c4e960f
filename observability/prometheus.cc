#include "observability/prometheus.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace gradsync {
namespace {

bool IsNameStart(char c) { return absl::ascii_isalpha(c) || c == '_'; }
bool IsNameChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }

const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// HELP text escapes backslash and newline; label values also '"'.
std::string Escape(absl::string_view text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

// `{a="x",b="y"}`, with `extra` (the histogram's "le") last; empty when
// there are no labels at all.
std::string LabelText(const MetricLabels& labels,
                      const std::pair<std::string, std::string>* extra) {
  if (labels.empty() && extra == nullptr) return "";
  std::string out = "{";
  bool first = true;
  auto add = [&](const std::pair<std::string, std::string>& label) {
    if (!first) out += ",";
    first = false;
    absl::StrAppend(&out, label.first, "=\"", Escape(label.second, true), "\"");
  };
  for (const auto& label : labels) add(label);
  if (extra != nullptr) add(*extra);
  out += "}";
  return out;
}

void RenderSample(const std::string& name, const MetricSample& sample,
                  MetricType type, std::string* out) {
  if (type != MetricType::kHistogram) {
    absl::StrAppend(out, name, LabelText(sample.labels, nullptr), " ",
                    FormatMetricValue(sample.value), "\n");
    return;
  }
  const HistogramSnapshot& h = sample.histogram;
  for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
    const std::pair<std::string, std::string> le = {
        "le", FormatMetricValue(h.upper_bounds[i])};
    const uint64_t count = i < h.bucket_counts.size() ? h.bucket_counts[i] : 0;
    absl::StrAppend(out, name, "_bucket", LabelText(sample.labels, &le), " ",
                    count, "\n");
  }
  const std::pair<std::string, std::string> inf = {"le", "+Inf"};
  absl::StrAppend(out, name, "_bucket", LabelText(sample.labels, &inf), " ",
                  h.count, "\n");
  absl::StrAppend(out, name, "_sum", LabelText(sample.labels, nullptr), " ",
                  FormatMetricValue(h.sum), "\n");
  absl::StrAppend(out, name, "_count", LabelText(sample.labels, nullptr), " ",
                  h.count, "\n");
}

MetricLabels Zip(const std::vector<std::string>& names,
                 const std::vector<std::string>& values) {
  MetricLabels labels;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    labels.emplace_back(names[i], values[i]);
  }
  return labels;
}

template <typename Metric>
std::unique_ptr<Metric> NewMetric(const std::vector<double>&) {
  return std::make_unique<Metric>();
}
template <>
std::unique_ptr<Histogram> NewMetric<Histogram>(
    const std::vector<double>& bounds) {
  return std::make_unique<Histogram>(bounds);
}

void Fill(const Counter& c, MetricSample* s) { s->value = c.Value(); }
void Fill(const Gauge& g, MetricSample* s) { s->value = g.Value(); }
void Fill(const Histogram& h, MetricSample* s) { s->histogram = h.Snapshot(); }

}  // namespace

std::string FormatMetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::trunc(value) && std::fabs(value) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  // The shortest %g that reads back to the same double.
  char buffer[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

absl::Status CheckMetricName(absl::string_view name) {
  bool ok = !name.empty() && (IsNameStart(name[0]) || name[0] == ':');
  for (char c : name) ok = ok && (IsNameChar(c) || c == ':');
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("metric name '", name,
                   "' is not [a-zA-Z_:][a-zA-Z0-9_:]* as Prometheus needs"));
}

absl::Status CheckLabelName(absl::string_view name) {
  bool ok = !name.empty() && IsNameStart(name[0]) &&
            !absl::StartsWith(name, "__") && name != "le";
  for (char c : name) ok = ok && IsNameChar(c);
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "label name '", name,
      "' is not [a-zA-Z_][a-zA-Z0-9_]* (not starting __, not le)"));
}

std::string RenderMetrics(absl::Span<const MetricFamily> families) {
  std::string out;
  for (const MetricFamily& family : families) {
    absl::StrAppend(&out, "# HELP ", family.name, " ",
                    Escape(family.help, false), "\n", "# TYPE ", family.name,
                    " ", TypeName(family.type), "\n");
    for (const MetricSample& sample : family.samples) {
      RenderSample(family.name, sample, family.type, &out);
    }
  }
  return out;
}

void Counter::Increment(double by) {
  if (!(by > 0)) return;
  absl::MutexLock lock(&mu_);
  value_ += by;
}

double Counter::Value() const {
  absl::MutexLock lock(&mu_);
  return value_;
}

void Gauge::Set(double value) {
  absl::MutexLock lock(&mu_);
  value_ = value;
}

void Gauge::Add(double by) {
  absl::MutexLock lock(&mu_);
  value_ += by;
}

double Gauge::Value() const {
  absl::MutexLock lock(&mu_);
  return value_;
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)),
      counts_(upper_bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  // The first bucket whose bound is >= value; NaN lands in +Inf only.
  const size_t bucket =
      std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) -
      upper_bounds_.begin();
  absl::MutexLock lock(&mu_);
  ++counts_[bucket];
  sum_ += value;
}

HistogramSnapshot Histogram::Snapshot() const {
  HistogramSnapshot snapshot;
  snapshot.upper_bounds = upper_bounds_;
  absl::MutexLock lock(&mu_);
  uint64_t running = 0;
  for (size_t i = 0; i < upper_bounds_.size(); ++i) {
    running += counts_[i];
    snapshot.bucket_counts.push_back(running);
  }
  snapshot.count = running + counts_.back();
  snapshot.sum = sum_;
  return snapshot;
}

template <typename Metric>
absl::StatusOr<Metric*> MetricFamilyOf<Metric>::WithLabels(
    const std::vector<std::string>& values) {
  if (values.size() != label_names_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, " has ", label_names_.size(), " labels, got ",
                     values.size(), " values"));
  }
  absl::MutexLock lock(&mu_);
  std::unique_ptr<Metric>& metric = series_[values];
  if (metric == nullptr) metric = NewMetric<Metric>(upper_bounds_);
  return metric.get();
}

template <typename Metric>
MetricFamily MetricFamilyOf<Metric>::Collect() const {
  MetricFamily family{name_, help_, type_, {}};
  absl::MutexLock lock(&mu_);
  for (const auto& [values, metric] : series_) {
    MetricSample sample;
    sample.labels = Zip(label_names_, values);
    Fill(*metric, &sample);
    family.samples.push_back(std::move(sample));
  }
  return family;
}

template class MetricFamilyOf<Counter>;
template class MetricFamilyOf<Gauge>;
template class MetricFamilyOf<Histogram>;

absl::Status MetricsRegistry::CheckNewLocked(
    const std::string& name, const std::vector<std::string>& label_names) {
  if (absl::Status s = CheckMetricName(name); !s.ok()) return s;
  for (const std::string& label : label_names) {
    if (absl::Status s = CheckLabelName(label); !s.ok()) return s;
  }
  if (std::find(names_.begin(), names_.end(), name) != names_.end()) {
    return absl::AlreadyExistsError(
        absl::StrCat("metric ", name, " is already registered"));
  }
  names_.push_back(name);
  return absl::OkStatus();
}

absl::StatusOr<CounterFamily*> MetricsRegistry::AddCounter(
    const std::string& name, const std::string& help,
    std::vector<std::string> label_names) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = CheckNewLocked(name, label_names); !s.ok()) return s;
  counters_.push_back(std::unique_ptr<CounterFamily>(new CounterFamily(
      name, help, MetricType::kCounter, std::move(label_names), {})));
  order_.emplace_back(MetricType::kCounter, counters_.size() - 1);
  return counters_.back().get();
}

absl::StatusOr<GaugeFamily*> MetricsRegistry::AddGauge(
    const std::string& name, const std::string& help,
    std::vector<std::string> label_names) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = CheckNewLocked(name, label_names); !s.ok()) return s;
  gauges_.push_back(std::unique_ptr<GaugeFamily>(new GaugeFamily(
      name, help, MetricType::kGauge, std::move(label_names), {})));
  order_.emplace_back(MetricType::kGauge, gauges_.size() - 1);
  return gauges_.back().get();
}

absl::StatusOr<HistogramFamily*> MetricsRegistry::AddHistogram(
    const std::string& name, const std::string& help,
    std::vector<std::string> label_names, std::vector<double> upper_bounds) {
  if (upper_bounds.empty() ||
      !std::is_sorted(upper_bounds.begin(), upper_bounds.end(),
                      std::less_equal<double>()) ||
      std::isinf(upper_bounds.back()) || std::isnan(upper_bounds.back())) {
    return absl::InvalidArgumentError(
        absl::StrCat("histogram ", name,
                     " needs finite, strictly increasing bucket bounds"));
  }
  absl::MutexLock lock(&mu_);
  if (absl::Status s = CheckNewLocked(name, label_names); !s.ok()) return s;
  histograms_.push_back(std::unique_ptr<HistogramFamily>(
      new HistogramFamily(name, help, MetricType::kHistogram,
                          std::move(label_names), std::move(upper_bounds))));
  order_.emplace_back(MetricType::kHistogram, histograms_.size() - 1);
  return histograms_.back().get();
}

int MetricsRegistry::AddCollector(MetricsCollector collector) {
  absl::MutexLock lock(&collectors_mu_);
  const int id = next_collector_id_++;
  collectors_[id] = std::move(collector);
  return id;
}

void MetricsRegistry::RemoveCollector(int id) {
  absl::MutexLock lock(&collectors_mu_);
  collectors_.erase(id);
}

std::vector<MetricFamily> MetricsRegistry::Collect() const {
  std::vector<MetricFamily> families;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [type, index] : order_) {
      switch (type) {
        case MetricType::kCounter:
          families.push_back(counters_[index]->Collect());
          break;
        case MetricType::kGauge:
          families.push_back(gauges_[index]->Collect());
          break;
        case MetricType::kHistogram:
          families.push_back(histograms_[index]->Collect());
          break;
      }
    }
  }
  absl::MutexLock lock(&collectors_mu_);
  for (const auto& [id, collector] : collectors_) collector(&families);
  return families;
}

std::string MetricsRegistry::Render() const { return RenderMetrics(Collect()); }

}  // namespace gradsync
