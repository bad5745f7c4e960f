// gradsync metrics --format trace: the Chrome trace of a job's steps is
// valid JSON (read back with protobuf's JSON parser), with one process per
// rank, a span per step at the step's exact start and length, a busbw
// counter, and an instant where rank 0's steps change mode.
#include "cli/control/trace_format.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

// Step `step` of `rank`: 10 ms long, ending at 100.010 + step * 0.02 s.
StepMetrics Step(int rank, int64_t step, SyncMode mode) {
  StepMetrics m;
  m.set_rank(rank);
  m.set_step(step);
  m.set_mode(mode);
  m.set_step_s(0.010);
  m.set_compute_s(0.006);
  m.set_comm_s(0.003);
  m.set_idle_s(0.001);
  m.set_wall_time(100.010 + 0.02 * static_cast<double>(step));
  m.set_busbw_gbps(1.5 + rank);
  m.set_loss(2.0);
  return m;
}

TEST(TraceFormatTest, SpansPerRankAndStep_CountersAndTheSwitch) {
  std::vector<StepMetrics> metrics;
  for (int64_t step = 0; step < 3; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      metrics.push_back(
          Step(rank, step, step < 2 ? SYNC_MODE_PS : SYNC_MODE_RING));
    }
  }
  StepMetrics no_time = Step(1, 3, SYNC_MODE_RING);
  no_time.set_wall_time(0);
  metrics.push_back(no_time);

  const std::string trace = MetricsToChromeTrace("job-7", metrics);
  Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(trace, &parsed).ok())
      << trace;
  EXPECT_EQ(parsed.fields()
                .at("otherData")
                .struct_value()
                .fields()
                .at("job")
                .string_value(),
            "job-7");
  const auto& events = parsed.fields().at("traceEvents").list_value().values();
  int names = 0, spans = 0, counters = 0, instants = 0;
  for (const Value& v : events) {
    const auto& e = v.struct_value().fields();
    const std::string ph = e.at("ph").string_value();
    if (ph == "M") {
      ++names;
      EXPECT_EQ(e.at("args").struct_value().fields().at("name").string_value(),
                absl::StrCat("rank ", e.at("pid").number_value()));
    } else if (ph == "X") {
      ++spans;
      const auto& args = e.at("args").struct_value().fields();
      const double step = args.at("step").number_value();
      // Starts at 20 ms per step from the first start, 10 ms long.
      EXPECT_EQ(e.at("ts").number_value(), 20000 * step);
      EXPECT_EQ(e.at("dur").number_value(), 10000);
      EXPECT_EQ(args.at("compute_ms").number_value(), 6);
      EXPECT_EQ(e.at("name").string_value(),
                absl::StrCat("step ", step, step < 2 ? " (ps)" : " (ring)"));
    } else if (ph == "C") {
      ++counters;
      EXPECT_EQ(e.at("args").struct_value().fields().at("busbw").number_value(),
                1.5 + e.at("pid").number_value());
    } else if (ph == "i") {
      ++instants;
      EXPECT_EQ(e.at("name").string_value(), "switch to ring at step 2");
      EXPECT_EQ(e.at("ts").number_value(), 40000);
    }
  }
  EXPECT_EQ(names, 2);
  EXPECT_EQ(spans, 6);  // the step without a wall time is left out
  EXPECT_EQ(counters, 6);
  EXPECT_EQ(instants, 1);
}

TEST(TraceFormatTest, NoMetrics_AnEmptyTrace) {
  const std::string trace = MetricsToChromeTrace("job-1", {});
  Struct parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(trace, &parsed).ok());
  EXPECT_TRUE(parsed.fields().at("traceEvents").list_value().values().empty());
}

}  // namespace
}  // namespace control
}  // namespace cli
}  // namespace gradsync
