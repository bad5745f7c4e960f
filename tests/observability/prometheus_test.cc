// The registry and the text exposition format (observability/prometheus.h):
// exact expected text for known values, escaping, number formats, cumulative
// histogram buckets, label handling and the registry's refusals.
#include "observability/prometheus.h"

#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

using ::testing::HasSubstr;

TEST(RenderMetricsTest, CounterGaugeAndHistogram_ExactText) {
  MetricsRegistry registry;
  absl::StatusOr<CounterFamily*> bytes =
      registry.AddCounter("gradsync_ps_received_bytes_total",
                          "Gradient bytes received.", {"job", "shard"});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<GaugeFamily*> jobs =
      registry.AddGauge("gradsync_jobs", "Jobs by state.", {"state"});
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  absl::StatusOr<HistogramFamily*> latency =
      registry.AddHistogram("gradsync_allreduce_seconds", "All-reduce time.",
                            {"mode"}, {0.001, 0.01, 0.1});
  ASSERT_TRUE(latency.ok()) << latency.status();

  (*(*bytes)->WithLabels({"job-2", "1"}))->Increment(4096);
  (*(*bytes)->WithLabels({"job-1", "0"}))->Increment(1024);
  (*(*bytes)->WithLabels({"job-1", "0"}))->Increment(1024);
  (*(*jobs)->WithLabels({"RUNNING"}))->Set(2);
  (*(*jobs)->WithLabels({"PENDING"}))->Set(0);
  Histogram* ring = *(*latency)->WithLabels({"ring"});
  ring->Observe(0.0005);
  ring->Observe(0.001);  // on a bound: counted in that bucket
  ring->Observe(0.05);
  ring->Observe(3);

  const std::string expected =
      "# HELP gradsync_ps_received_bytes_total Gradient bytes received.\n"
      "# TYPE gradsync_ps_received_bytes_total counter\n"
      "gradsync_ps_received_bytes_total{job=\"job-1\",shard=\"0\"} 2048\n"
      "gradsync_ps_received_bytes_total{job=\"job-2\",shard=\"1\"} 4096\n"
      "# HELP gradsync_jobs Jobs by state.\n"
      "# TYPE gradsync_jobs gauge\n"
      "gradsync_jobs{state=\"PENDING\"} 0\n"
      "gradsync_jobs{state=\"RUNNING\"} 2\n"
      "# HELP gradsync_allreduce_seconds All-reduce time.\n"
      "# TYPE gradsync_allreduce_seconds histogram\n"
      "gradsync_allreduce_seconds_bucket{mode=\"ring\",le=\"0.001\"} 2\n"
      "gradsync_allreduce_seconds_bucket{mode=\"ring\",le=\"0.01\"} 2\n"
      "gradsync_allreduce_seconds_bucket{mode=\"ring\",le=\"0.1\"} 3\n"
      "gradsync_allreduce_seconds_bucket{mode=\"ring\",le=\"+Inf\"} 4\n"
      "gradsync_allreduce_seconds_sum{mode=\"ring\"} 3.0515\n"
      "gradsync_allreduce_seconds_count{mode=\"ring\"} 4\n";
  EXPECT_EQ(expected, registry.Render());
}

TEST(RenderMetricsTest, NoLabels_NoBraces_EmptyFamilyKeepsHelpAndType) {
  MetricsRegistry registry;
  ASSERT_TRUE(registry.AddGauge("gradsync_up", "One.").ok());
  ASSERT_TRUE(registry.AddCounter("gradsync_none_total", "Nothing yet.").ok());
  (*(*registry.AddGauge("gradsync_ranks", "Ranks."))->WithLabels({}))->Set(3);
  EXPECT_EQ(
      "# HELP gradsync_up One.\n"
      "# TYPE gradsync_up gauge\n"
      "# HELP gradsync_none_total Nothing yet.\n"
      "# TYPE gradsync_none_total counter\n"
      "# HELP gradsync_ranks Ranks.\n"
      "# TYPE gradsync_ranks gauge\n"
      "gradsync_ranks 3\n",
      registry.Render());
}

TEST(RenderMetricsTest, EscapesLabelValuesAndHelp) {
  MetricFamily family{"gradsync_x", "a \\ b\nc \"q\"", MetricType::kGauge, {}};
  family.samples.push_back({{{"path", "C:\\d \"e\"\nf"}}, 1, {}});
  EXPECT_EQ(
      "# HELP gradsync_x a \\\\ b\\nc \"q\"\n"
      "# TYPE gradsync_x gauge\n"
      "gradsync_x{path=\"C:\\\\d \\\"e\\\"\\nf\"} 1\n",
      RenderMetrics({family}));
}

TEST(FormatMetricValueTest, ShortestRoundTrip) {
  EXPECT_EQ("0", FormatMetricValue(0));
  EXPECT_EQ("-3", FormatMetricValue(-3));
  EXPECT_EQ("1234567890123", FormatMetricValue(1234567890123.0));
  EXPECT_EQ("0.1", FormatMetricValue(0.1));
  EXPECT_EQ("2.5e-07", FormatMetricValue(2.5e-7));
  EXPECT_EQ("0.30000000000000004", FormatMetricValue(0.1 + 0.2));
  EXPECT_EQ("1e+20", FormatMetricValue(1e20));
  EXPECT_EQ("+Inf", FormatMetricValue(std::numeric_limits<double>::infinity()));
  EXPECT_EQ("-Inf",
            FormatMetricValue(-std::numeric_limits<double>::infinity()));
  EXPECT_EQ("NaN", FormatMetricValue(std::numeric_limits<double>::quiet_NaN()));
}

TEST(MetricsRegistryTest, CollectorsRunAfterOwnedFamilies_UntilRemoved) {
  MetricsRegistry registry;
  ASSERT_TRUE(registry.AddGauge("gradsync_a", "A.").ok());
  double value = 7;
  const int id =
      registry.AddCollector([&value](std::vector<MetricFamily>* out) {
        MetricFamily family{"gradsync_b", "B.", MetricType::kGauge, {}};
        family.samples.push_back({{{"k", "v"}}, value, {}});
        out->push_back(family);
      });
  value = 8;  // read at scrape time, not at registration
  EXPECT_EQ(
      "# HELP gradsync_a A.\n# TYPE gradsync_a gauge\n"
      "# HELP gradsync_b B.\n# TYPE gradsync_b gauge\n"
      "gradsync_b{k=\"v\"} 8\n",
      registry.Render());
  registry.RemoveCollector(id);
  EXPECT_EQ("# HELP gradsync_a A.\n# TYPE gradsync_a gauge\n",
            registry.Render());
}

TEST(MetricsRegistryTest, CounterIgnoresNegativeIncrements) {
  Counter counter;
  counter.Increment(2);
  counter.Increment(-5);
  EXPECT_EQ(2, counter.Value());
}

TEST(MetricsRegistryTest, WithLabels_SameValues_SameSeries) {
  MetricsRegistry registry;
  GaugeFamily* family = *registry.AddGauge("gradsync_g", "G.", {"a"});
  EXPECT_EQ(*family->WithLabels({"x"}), *family->WithLabels({"x"}));
  EXPECT_NE(*family->WithLabels({"x"}), *family->WithLabels({"y"}));
}

TEST(MetricsRegistryTest, WithLabels_WrongCount_ReturnsInvalidArgument) {
  MetricsRegistry registry;
  GaugeFamily* family = *registry.AddGauge("gradsync_g", "G.", {"a", "b"});
  absl::StatusOr<Gauge*> gauge = family->WithLabels({"x"});
  ASSERT_FALSE(gauge.ok());
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, gauge.status().code());
  EXPECT_THAT(gauge.status().message(), HasSubstr("has 2 labels, got 1"));
}

TEST(MetricsRegistryTest, AddTwice_ReturnsAlreadyExists) {
  MetricsRegistry registry;
  ASSERT_TRUE(registry.AddGauge("gradsync_g", "G.").ok());
  EXPECT_EQ(absl::StatusCode::kAlreadyExists,
            registry.AddCounter("gradsync_g", "again").status().code());
}

TEST(MetricsRegistryTest, BadNames_ReturnInvalidArgument) {
  MetricsRegistry registry;
  for (const char* name : {"", "9lives", "has-dash", "a b"}) {
    EXPECT_EQ(absl::StatusCode::kInvalidArgument,
              registry.AddGauge(name, "x").status().code())
        << "name '" << name << "'";
  }
  for (const char* label : {"__reserved", "le", "with:colon", "1st"}) {
    EXPECT_EQ(absl::StatusCode::kInvalidArgument,
              registry.AddGauge("gradsync_ok", "x", {label}).status().code())
        << "label '" << label << "'";
  }
  EXPECT_TRUE(CheckMetricName("gradsync:rule_total").ok());
}

TEST(MetricsRegistryTest, HistogramBounds_MustIncrease) {
  MetricsRegistry registry;
  EXPECT_EQ(absl::StatusCode::kInvalidArgument,
            registry.AddHistogram("gradsync_h", "H.", {}, {}).status().code());
  EXPECT_EQ(
      absl::StatusCode::kInvalidArgument,
      registry.AddHistogram("gradsync_h", "H.", {}, {1, 1}).status().code());
  EXPECT_EQ(
      absl::StatusCode::kInvalidArgument,
      registry.AddHistogram("gradsync_h", "H.", {}, {2, 1}).status().code());
  EXPECT_TRUE(registry.AddHistogram("gradsync_h", "H.", {}, {1, 2}).ok());
}

}  // namespace
}  // namespace gradsync
