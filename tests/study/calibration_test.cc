// The simulator's files: the JSON reader, the calibration file (defaults,
// members, errors, a round trip), and the Chrome trace it writes (which
// the reader parses back: events in order, with the fields the format
// needs).
#include "study/sim/calibration.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "study/sim/json_reader.h"
#include "study/sim/step_simulator.h"
#include "study/sim/trace.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace sim {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

TEST(JsonReaderTest, Document_ReadsEveryType) {
  absl::StatusOr<JsonValue> doc = ParseJson(
      " {\"a\": [1, -2.5e3, true, false, null], \"s\": \"x\\\"\\u00e9\\n\","
      " \"o\": {}} ");
  ASSERT_THAT(doc, IsOk());
  ASSERT_TRUE(doc->is_object());
  const JsonValue* a = doc->Find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items().size(), 5u);
  EXPECT_EQ(a->items()[0].number(), 1);
  EXPECT_EQ(a->items()[1].number(), -2500);
  EXPECT_TRUE(a->items()[2].boolean());
  EXPECT_TRUE(a->items()[3].is_bool());
  EXPECT_TRUE(a->items()[4].is_null());
  EXPECT_EQ(doc->Find("s")->string(), "x\"\xc3\xa9\n");
  EXPECT_TRUE(doc->Find("o")->is_object());
  EXPECT_EQ(doc->Find("missing"), nullptr);
}

TEST(JsonReaderTest, SurrogatePair_BecomesOneCodePoint) {
  absl::StatusOr<JsonValue> doc = ParseJson("\"\\ud83d\\ude00\"");
  ASSERT_THAT(doc, IsOk());
  EXPECT_EQ(doc->string(), "\xf0\x9f\x98\x80");
}

TEST(JsonReaderTest, Errors_NameLineAndColumn) {
  EXPECT_THAT(ParseJson("{\"a\": 1,\n \"b\" 2}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line 2, column 6: expected ':'")));
  EXPECT_THAT(ParseJson("{\"a\": 1, \"a\": 2}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("\"a\" given twice")));
  EXPECT_THAT(ParseJson("[1, 2"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseJson("01"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseJson("1 2"), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("after the value")));
  EXPECT_THAT(ParseJson("\"\\ud800\""),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseJson(std::string(100, '[')),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("nested too deeply")));
}

TEST(CalibrationTest, EmptyObject_KeepsTheDefaults) {
  absl::StatusOr<SimCalibration> c = ParseCalibration("{}");
  ASSERT_THAT(c, IsOk());
  const SimCalibration defaults;
  EXPECT_EQ(c->alpha_s, defaults.alpha_s);
  EXPECT_EQ(c->grpc_cpu_s_per_byte, defaults.grpc_cpu_s_per_byte);
  EXPECT_EQ(c->incast_efficiency, 1.0);
  EXPECT_TRUE(c->machine.empty());
}

TEST(CalibrationTest, Members_SetTheirFields) {
  absl::StatusOr<SimCalibration> c = ParseCalibration(
      R"({"alphaS": 1e-4, "linkEfficiency": 0.956, "incastThresholdFlows": 6,
          "incastEfficiency": 0.75, "partitionOverheadS": 2e-5,
          "machine": "lab", "date": "2027-01-04", "commit": "abc1234"})");
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->alpha_s, 1e-4);
  EXPECT_EQ(c->link_efficiency, 0.956);
  EXPECT_EQ(c->incast_threshold_flows, 6);
  EXPECT_EQ(c->incast_efficiency, 0.75);
  EXPECT_EQ(c->partition_overhead_s, 2e-5);
  EXPECT_EQ(c->machine, "lab");
  EXPECT_EQ(c->commit, "abc1234");
}

TEST(CalibrationTest, BadMembers_AreInvalidArgument) {
  EXPECT_THAT(ParseCalibration(R"({"alpha": 1})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown calibration member \"alpha\"")));
  EXPECT_THAT(ParseCalibration(R"({"alphaS": "1"})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("must be a number")));
  EXPECT_THAT(
      ParseCalibration(R"({"alphaS": -1})"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("alphaS")));
  EXPECT_THAT(
      ParseCalibration(R"({"incastEfficiency": 0})"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("(0, 1]")));
  EXPECT_THAT(
      ParseCalibration("[]"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("JSON object")));
}

TEST(CalibrationTest, ToJson_RoundTrips) {
  SimCalibration c;
  c.alpha_s = 3.25e-5;
  c.grpc_cpu_s_per_byte = 4.5e-10;
  c.incast_threshold_flows = 7;
  c.incast_efficiency = 0.8;
  c.machine = "vm \"3\"";
  absl::StatusOr<SimCalibration> back = ParseCalibration(CalibrationToJson(c));
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->alpha_s, c.alpha_s);
  EXPECT_EQ(back->grpc_cpu_s_per_byte, c.grpc_cpu_s_per_byte);
  EXPECT_EQ(back->incast_threshold_flows, 7);
  EXPECT_EQ(back->incast_efficiency, 0.8);
  EXPECT_EQ(back->machine, c.machine);
}

TEST(CalibrationTest, FitRange_RoundTripsAndIsChecked) {
  SimCalibration c;
  c.fit_max_workers = 4;
  c.fit_min_link_Bps = 12.5e6;
  c.fit_max_link_Bps = 125e6;
  c.fitted = {"alphaS", "linkEfficiency"};
  absl::StatusOr<SimCalibration> back = ParseCalibration(CalibrationToJson(c));
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->fit_max_workers, 4);
  EXPECT_EQ(back->fit_min_link_Bps, 12.5e6);
  EXPECT_EQ(back->fit_max_link_Bps, 125e6);
  EXPECT_THAT(back->fitted, ::testing::ElementsAre("alphaS", "linkEfficiency"));
  EXPECT_TRUE(WasFitted(*back, "alphaS"));
  EXPECT_FALSE(WasFitted(*back, "planeCpuSPerByte"));
  EXPECT_THAT(ParseCalibration(R"({"fitted": "alphaS"})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("array of member names")));
  EXPECT_THAT(
      ParseCalibration(R"({"fitMaxWorkers": -2})"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fitMaxWorkers")));
}

TEST(CalibrationTest, LoadCalibration_ReadsAFileAndNamesItOnError) {
  const std::string path = ::testing::TempDir() + "/calibration.json";
  {
    std::ofstream out(path);
    out << R"({"alphaS": 5e-5})";
  }
  absl::StatusOr<SimCalibration> c = LoadCalibration(path);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->alpha_s, 5e-5);
  {
    std::ofstream out(path);
    out << R"({"alphaS": })";
  }
  EXPECT_THAT(LoadCalibration(path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(path)));
  std::remove(path.c_str());
  EXPECT_THAT(LoadCalibration(path), StatusIs(absl::StatusCode::kNotFound));
}

TEST(TraceTest, ChromeTrace_ParsesAndEventsAreOrdered) {
  SimConfig c;
  c.layout = SimLayout::kPsSeparate;
  c.topology.workers = 4;
  c.topology.nic_Bps = 1e8;
  c.servers = 2;
  c.partition_bytes = 1 << 18;
  SimWorkload w;
  for (int i = 0; i < 4; ++i) {
    w.layers.push_back({"layer \"" + std::to_string(i) + "\"", 1 << 18, 0.01});
  }
  absl::StatusOr<SimResult> r = SimulateStep(c, w);
  ASSERT_THAT(r, IsOk());
  absl::StatusOr<JsonValue> doc = ParseJson(ChromeTraceJson(r->timeline));
  ASSERT_THAT(doc, IsOk());
  const JsonValue* events = doc->Find("traceEvents");
  ASSERT_NE(events, nullptr);
  ASSERT_TRUE(events->is_array());
  double last_ts = -1;
  int complete = 0, lanes = 0;
  for (const JsonValue& e : events->items()) {
    const std::string ph = e.Find("ph")->string();
    ASSERT_TRUE(e.Find("pid")->is_number());
    ASSERT_TRUE(e.Find("tid")->is_number());
    ASSERT_TRUE(e.Find("name")->is_string());
    if (ph == "M") {
      lanes += e.Find("name")->string() == "thread_name";
      EXPECT_EQ(complete, 0) << "metadata comes first";
      continue;
    }
    ASSERT_EQ(ph, "X");
    ++complete;
    const double ts = e.Find("ts")->number();
    EXPECT_GE(ts, last_ts) << e.Find("name")->string();
    EXPECT_GE(e.Find("dur")->number(), 0);
    last_ts = ts;
  }
  EXPECT_EQ(complete, static_cast<int>(r->timeline.size()));
  // compute, and a push and a pull lane for each of the 2 servers.
  EXPECT_EQ(lanes, 5);
  // The last event ends when the step does (in microseconds).
  double end = 0;
  for (const TimelineEvent& e : r->timeline) end = std::max(end, e.end_s);
  EXPECT_NEAR(end, r->step_s, 1e-12);
}

}  // namespace
}  // namespace sim
}  // namespace gradsync
