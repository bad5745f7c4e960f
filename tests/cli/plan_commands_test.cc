// `gradsync simulate` and `gradsync plan` in-process: their output agrees
// with the simulator called directly, the trace file parses, bad input
// exits 2, --ps-placement reaches the simulator, plan marks uncertain regimes,
// and the shared flags parse rates and ranges.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/framework/command_env.h"
#include "cli/plan/plan_command.h"
#include "cli/plan/sim_flags.h"
#include "cli/plan/simulate_command.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "study/model_profiles.h"
#include "study/sim/json_reader.h"
#include "study/sim/step_simulator.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace cli {
namespace plan {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::IsOkAndHolds;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class PlanCommandsTest : public ::testing::Test {
 protected:
  int Simulate(const std::vector<std::string>& args) {
    return RunWith(&RunSimulate, args);
  }
  int Plan(const std::vector<std::string>& args) {
    return RunWith(&RunPlan, args);
  }

  std::ostringstream out_;
  std::ostringstream err_;

 private:
  int RunWith(int (*run)(const std::vector<std::string>&, const CommandEnv&),
              const std::vector<std::string>& args) {
    out_.str("");
    err_.str("");
    CommandEnv env;
    env.out = &out_;
    env.err = &err_;
    return run(args, env);
  }
};

TEST_F(PlanCommandsTest, Simulate_Table_NamesTheStepAndItsBottleneck) {
  ASSERT_EQ(Simulate({"--model-profile", "resnet50", "--workers", "16",
                      "--gpus-per-node", "8", "--link", "25gbit", "--layout",
                      "hierarchical"}),
            kExitOk)
      << err_.str();
  const std::string out = out_.str();
  EXPECT_THAT(out, StartsWith("resnet50, batch 32 on a100"));
  EXPECT_THAT(out, HasSubstr("16 workers on 2 nodes, hierarchical all-reduce"));
  EXPECT_THAT(out, HasSubstr("\nexposed comm  "));
  EXPECT_THAT(out, HasSubstr("\nbottleneck    "));
  EXPECT_THAT(out, HasSubstr("BUSIEST RESOURCES"));
  EXPECT_THAT(out, HasSubstr("calibration: defaults (not fitted)"));
}

TEST_F(PlanCommandsTest, Simulate_Json_AgreesWithTheSimulator) {
  ASSERT_EQ(Simulate({"--model-profile", "vgg16", "-w", "8", "--link", "10gbit",
                      "--layout", "ps", "--servers", "4", "--grad-dtype",
                      "bf16", "--gpu-tflops", "50", "-o", "json"}),
            kExitOk)
      << err_.str();
  absl::StatusOr<sim::JsonValue> doc = sim::ParseJson(out_.str());
  ASSERT_THAT(doc, IsOk()) << out_.str();
  EXPECT_EQ(doc->Find("layout")->string(), "ps");
  EXPECT_EQ(doc->Find("servers")->number(), 4);

  absl::StatusOr<std::vector<ProfileTensor>> tensors = ModelProfile("vgg16");
  ASSERT_THAT(tensors, IsOk());
  sim::ProfileCompute compute;
  compute.sustained_tflops = 50;
  absl::StatusOr<sim::SimWorkload> w =
      sim::WorkloadFromProfile(*tensors, compute);
  ASSERT_THAT(w, IsOk());
  sim::SimConfig c;
  c.layout = sim::SimLayout::kPsSeparate;
  c.topology.workers = 8;
  c.topology.nic_Bps = 10e9 / 8;
  c.servers = 4;
  c.grad_bytes_per_element = 2;
  absl::StatusOr<sim::SimResult> r = sim::SimulateStep(c, *w);
  ASSERT_THAT(r, IsOk());
  EXPECT_DOUBLE_EQ(doc->Find("stepS")->number(), r->step_s);
  EXPECT_DOUBLE_EQ(doc->Find("exposedCommS")->number(), r->exposed_comm_s);
  EXPECT_EQ(doc->Find("links")->items().size(), r->links.size());
}

TEST_F(PlanCommandsTest, Simulate_Trace_IsAChromeTrace) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/sim_trace_", getpid(), ".json");
  ASSERT_EQ(Simulate({"--model-profile", "resnet50", "--workers", "4", "--link",
                      "10gbit", "--trace", path}),
            kExitOk)
      << err_.str();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<sim::JsonValue> doc = sim::ParseJson(text.str());
  ASSERT_THAT(doc, IsOk());
  ASSERT_NE(doc->Find("traceEvents"), nullptr);
  // The forward, ResNet-50's 54 layers with weights, and the buckets.
  int spans = 0;
  for (const sim::JsonValue& e : doc->Find("traceEvents")->items()) {
    spans += e.Find("ph")->string() == "X";
  }
  EXPECT_GE(spans, 1 + 54 + 1);
  unlink(path.c_str());
  EXPECT_EQ(Simulate({"--model-profile", "resnet50", "--workers", "4", "--link",
                      "10gbit", "--trace", "/nonexistent/dir/t"}),
            kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("cannot write the trace"));
}

TEST_F(PlanCommandsTest, Simulate_BadInput_ExitsTwo) {
  const std::vector<std::string> base = {"--model-profile", "resnet50",
                                         "--link", "10gbit"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  EXPECT_EQ(Simulate(base), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--workers N"));
  EXPECT_EQ(Simulate(with({"-w", "4", "--layout", "tree"})), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("unknown layout 'tree'"));
  EXPECT_EQ(Simulate({"--model-profile", "gpt", "-w", "4", "--link", "1gbit"}),
            kExitUsage);
  EXPECT_EQ(Simulate({"--model-profile", "resnet50", "-w", "4"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--link"));
  EXPECT_EQ(Simulate(with({"-w", "4", "--grad-dtype", "int8"})), kExitUsage);
  EXPECT_EQ(Simulate(with({"-w", "12", "--gpus-per-node", "8"})), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("multiple of the GPUs per node"));
  EXPECT_EQ(Simulate(with({"-w", "4", "--calibration", "/nonexistent.json"})),
            kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("/nonexistent.json"));
  EXPECT_EQ(Simulate(with({"-w", "4", "extra"})), kExitUsage);
  EXPECT_EQ(
      Simulate(with({"-w", "4", "--layout", "ps", "--ps-placement", "hashed"})),
      kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--ps-placement: unknown PS placement "
                                    "'hashed'; use contiguous or spread"));
}

TEST_F(PlanCommandsTest, Simulate_PsPlacementSpread_AgreesWithTheSimulator) {
  ASSERT_EQ(
      Simulate({"--model-profile", "resnet50", "-w", "16", "--link", "10gbit",
                "--layout", "ps", "--servers", "4", "--gpu-tflops", "50",
                "--ps-placement", "spread", "-o", "json"}),
      kExitOk)
      << err_.str();
  absl::StatusOr<sim::JsonValue> doc = sim::ParseJson(out_.str());
  ASSERT_THAT(doc, IsOk()) << out_.str();
  absl::StatusOr<std::vector<ProfileTensor>> tensors = ModelProfile("resnet50");
  ASSERT_THAT(tensors, IsOk());
  sim::ProfileCompute compute;
  compute.sustained_tflops = 50;
  absl::StatusOr<sim::SimWorkload> w =
      sim::WorkloadFromProfile(*tensors, compute);
  ASSERT_THAT(w, IsOk());
  sim::SimConfig c;
  c.layout = sim::SimLayout::kPsSeparate;
  c.topology.workers = 16;
  c.topology.nic_Bps = 10e9 / 8;
  c.servers = 4;
  c.ps_placement = sim::PsPlacement::kSpread;
  absl::StatusOr<sim::SimResult> r = sim::SimulateStep(c, *w);
  ASSERT_THAT(r, IsOk());
  EXPECT_DOUBLE_EQ(doc->Find("stepS")->number(), r->step_s);
  // The default placement is another step: the flag reached the config.
  c.ps_placement = sim::PsPlacement::kContiguous;
  absl::StatusOr<sim::SimResult> contiguous = sim::SimulateStep(c, *w);
  ASSERT_THAT(contiguous, IsOk());
  EXPECT_NE(contiguous->step_s, r->step_s);
}

TEST_F(PlanCommandsTest, Plan_Table_HasARowPerWorkerCount) {
  ASSERT_EQ(Plan({"--model-profile", "resnet50", "--workers", "8..32",
                  "--gpus-per-node", "8", "--link", "100gbit"}),
            kExitOk)
      << err_.str();
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("\nN   BEST"));
  EXPECT_THAT(out, HasSubstr("\n8   "));
  EXPECT_THAT(out, HasSubstr("\n16  "));
  EXPECT_THAT(out, HasSubstr("\n32  "));
  EXPECT_THAT(out, HasSubstr("K*: the fewest servers"));
}

TEST_F(PlanCommandsTest, Plan_JsonAndCsv_ListEveryCell) {
  const std::vector<std::string> args = {
      "--model-profile", "resnet50",  "-w",      "4,8",       "--link",
      "10gbit",          "--layouts", "ring,ps", "--servers", "1..N"};
  std::vector<std::string> json = args;
  json.insert(json.end(), {"-o", "json"});
  ASSERT_EQ(Plan(json), kExitOk) << err_.str();
  absl::StatusOr<sim::JsonValue> doc = sim::ParseJson(out_.str());
  ASSERT_THAT(doc, IsOk()) << out_.str();
  const std::vector<sim::JsonValue>& rows = doc->Find("rows")->items();
  ASSERT_EQ(rows.size(), 2u);
  // N = 4: the ring and K = 1, 2, 4; N = 8: the ring and K = 1, 2, 4, 8.
  EXPECT_EQ(rows[0].Find("cells")->items().size(), 4u);
  EXPECT_EQ(rows[1].Find("cells")->items().size(), 5u);
  std::vector<std::string> csv = args;
  csv.insert(csv.end(), {"-o", "csv"});
  ASSERT_EQ(Plan(csv), kExitOk);
  EXPECT_THAT(out_.str(), StartsWith("workers,layout,servers,step_s,"));
}

// A calibration fitted at N <= 4 on 100 Mbit/s links, asked about 16
// workers on 100 Gbit/s pushing to 2 servers in 128 KiB partitions: every
// range it never saw, and incast, are marked, with a footnote each.
TEST_F(PlanCommandsTest, Plan_MarksUncertainRegimesWithAFootnote) {
  const std::string cal =
      absl::StrCat(::testing::TempDir(), "/plan_cal_", getpid(), ".json");
  std::ofstream(cal) << R"({"alphaS": 1e-4, "machine": "lab",)"
                     << R"( "fitMaxWorkers": 4, "fitMinLinkBps": 1.25e7,)"
                     << R"( "fitMaxLinkBps": 1.25e7, "fitted": ["alphaS"]})";
  const std::vector<std::string> args = {"--model-profile",
                                         "resnet50",
                                         "-w",
                                         "16",
                                         "--link",
                                         "100gbit",
                                         "--layouts",
                                         "ps",
                                         "--servers",
                                         "2",
                                         "--partition",
                                         "128K",
                                         "--compute-ms",
                                         "1",
                                         "--calibration",
                                         cal};
  ASSERT_EQ(Plan(args), kExitOk) << err_.str();
  std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("BOTTLENECK"));
  EXPECT_THAT(out, HasSubstr("  NLI\n"));
  EXPECT_THAT(out, HasSubstr("?: uncertain regimes"));
  EXPECT_THAT(out, HasSubstr("  N: N beyond twice the largest calibrated N "
                             "(4)"));
  EXPECT_THAT(out, HasSubstr("  L: links of 100 Gbit/s were never measured"));
  EXPECT_THAT(out, HasSubstr("  I: incast: 16 flows into each server's NIC"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("Note: calibration")));
  std::vector<std::string> json = args;
  json.insert(json.end(), {"-o", "json"});
  ASSERT_EQ(Plan(json), kExitOk) << err_.str();
  absl::StatusOr<sim::JsonValue> doc = sim::ParseJson(out_.str());
  ASSERT_THAT(doc, IsOk()) << out_.str();
  const sim::JsonValue& c =
      doc->Find("rows")->items()[0].Find("cells")->items()[0];
  ASSERT_EQ(c.Find("uncertain")->items().size(), 3u);
  EXPECT_EQ(c.Find("uncertain")->items()[2].Find("marker")->string(), "I");
  // Without a calibration: no range to mark, and the footnote says so.
  ASSERT_EQ(Plan({"--model-profile", "resnet50", "-w", "16", "--link",
                  "100gbit", "--layouts", "ring"}),
            kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("Note: calibration: the defaults, "
                                    "fitted to nothing"));
  std::remove(cal.c_str());
}

TEST_F(PlanCommandsTest, Plan_BadRanges_ExitTwo) {
  const std::vector<std::string> base = {"--model-profile", "resnet50",
                                         "--link", "10gbit"};
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--workers", "0..8"});
  EXPECT_EQ(Plan(args), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--workers '0..8'"));
  args = base;
  args.insert(args.end(), {"--servers", "4..2"});
  EXPECT_EQ(Plan(args), kExitUsage);
  args = base;
  args.insert(args.end(), {"--layouts", "ring,star"});
  EXPECT_EQ(Plan(args), kExitUsage);
}

TEST(SimFlagsTest, Rates_InBitsOrBytesPerSecond) {
  EXPECT_THAT(ParseRateBytes("--link", "100gbit"), IsOkAndHolds(12.5e9));
  EXPECT_THAT(ParseRateBytes("--link", "25gbit"), IsOkAndHolds(25e9 / 8));
  EXPECT_THAT(ParseRateBytes("--link", "1gbit"), IsOkAndHolds(1e9 / 8));
  EXPECT_THAT(ParseRateBytes("--link", "100mbit"), IsOkAndHolds(100e6 / 8));
  EXPECT_THAT(ParseRateBytes("--node-link", "300gbyte"), IsOkAndHolds(300e9));
  EXPECT_THAT(
      ParseRateBytes("--link", "fast"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--link 'fast'")));
}

TEST(SimFlagsTest, Counts_RangesListsAndOne) {
  EXPECT_THAT(ParseCounts("--workers", "8..64", 1),
              IsOkAndHolds(std::vector<int>{8, 16, 32, 64}));
  EXPECT_THAT(ParseCounts("--workers", "6..20", 1),
              IsOkAndHolds(std::vector<int>{6, 8, 16}));
  EXPECT_THAT(ParseCounts("--workers", "12,24", 1),
              IsOkAndHolds(std::vector<int>{12, 24}));
  EXPECT_THAT(ParseCounts("--workers", "5", 1),
              IsOkAndHolds(std::vector<int>{5}));
  EXPECT_THAT(ParseCounts("--workers", "9..8", 1),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ParseCounts("--workers", "8..x", 1),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace plan
}  // namespace cli
}  // namespace gradsync
