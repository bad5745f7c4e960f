// `gradsync lab calibrate`: a real cluster's `gradsync bench -o json`
// output (made here by the simulator under known parameters) parses, and
// the fit recovers those parameters exactly; a sweep.json in the lab's own
// format (built as the SweepResults proto and written with the lab's JSON)
// parses and splits into the fit's cells and the held-out ones, old sweeps'
// transport is read right, the tables mark what they should, and the command
// fits a calibration that `gradsync simulate --calibration` then loads.
#include "cli/lab/lab_calibrate.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/framework/command_env.h"
#include "cli/lab/lab_calibrate_bench.h"
#include "cli/lab/lab_calibrate_command.h"
#include "cli/lab/lab_state.h"
#include "cli/plan/simulate_command.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "study/sim/calibration.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace lab {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t k1Gbit = 1'000'000'000;

SweepCell Cell(const std::string& layout, int n, int k, int64_t mib,
               double sync_s) {
  SweepCell c;
  c.set_layout(layout);
  c.set_workers(n);
  c.set_shards(layout == "ring" ? 0 : k);
  c.set_bytes(mib << 20);
  c.set_rate_bps(k1Gbit);
  c.set_sync_s(sync_s);
  c.set_link_ok(true);
  c.set_measured_steps(8);
  if (layout != "ring") c.set_partition_bytes(128 << 10);
  return c;
}

// The calibration the sweep's "measurements" come from.
sim::SimCalibration Truth() {
  sim::SimCalibration c;
  c.alpha_s = 2e-4;
  c.link_efficiency = 0.95;
  c.partition_overhead_s = 1e-4;
  c.plane_cpu_s_per_byte = 0;
  return c;
}

// A lab sweep at 1 Gbit/s whose cells measured what the simulator says
// under Truth(): N <= 4 for the fit, N = 8 held out.
SweepResults SimulatedSweep() {
  SweepResults r;
  r.mutable_lab()->set_worker_hosts(8);
  r.mutable_lab()->set_ps_hosts(8);
  r.mutable_lab()->set_workers_per_host(1);
  r.mutable_lab()->set_ps_transport("plane");
  r.set_machine("Test CPU, 2 CPUs, 8 GiB");
  r.set_commit("abc1234");
  r.set_time(1.8e9);  // 2027-01-15
  // Timed 1 s until simulated below.
  std::vector<SweepCell> cells = {
      Cell("ring", 2, 0, 4, 1),         Cell("ring", 4, 0, 4, 1),
      Cell("ps", 2, 1, 4, 1),           Cell("ps", 4, 2, 4, 1),
      Cell("ps", 4, 4, 4, 1),           Cell("ps-colocated", 4, 4, 4, 1),
      Cell("ring", 8, 0, 8, 1),         Cell("ps", 8, 2, 8, 1),
      Cell("ps-colocated", 8, 8, 8, 1),
  };
  SweepFile file;
  *file.results.mutable_lab() = r.lab();
  for (const SweepCell& c : cells) *file.results.add_cells() = c;
  CellSplit split;
  split.max_workers = 100;  // every cell, to simulate each
  const SplitCells all = SplitSweepCells({file}, split);
  EXPECT_EQ(all.fit.size(), cells.size());
  for (size_t i = 0; i < cells.size() && i < all.fit.size(); ++i) {
    absl::StatusOr<double> t = sim::SimulateCell(all.fit[i], Truth());
    EXPECT_THAT(t, IsOk());
    cells[i].set_sync_s(*t);
    *r.add_cells() = cells[i];
  }
  return r;
}

std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/lab_calibrate_", getpid(), "_",
                      name);
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = TempPath(name);
  std::ofstream(path) << text;
  return path;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class LabCalibrateTest : public ::testing::Test {
 protected:
  int Run(int (*run)(const std::vector<std::string>&, const cli::CommandEnv&),
          const std::vector<std::string>& args) {
    out_.str("");
    err_.str("");
    cli::CommandEnv env;
    env.out = &out_;
    env.err = &err_;
    return run(args, env);
  }
  int Calibrate(const std::vector<std::string>& args) {
    return Run(&RunLabCalibrate, args);
  }

  std::ostringstream out_;
  std::ostringstream err_;
};

TEST(SweepCellsTest, LabJson_ParsesAndSplits) {
  SweepResults r;
  r.mutable_lab()->set_ps_transport("grpc");
  *r.add_cells() = Cell("ring", 2, 0, 4, 0.05);
  *r.add_cells() = Cell("ring", 4, 0, 1, 0.02);  // 1 MiB: halving-doubling
  *r.add_cells() = Cell("ps", 4, 2, 16, 0.3);
  *r.add_cells() = Cell("ps-colocated", 8, 8, 8, 0.1);
  SweepCell failed = Cell("ps", 2, 2, 4, 0);
  failed.set_error("job j-7 ended JOB_STATE_FAILED: boom");
  *r.add_cells() = failed;
  SweepCell profiled = Cell("ring", 2, 0, 4, 0.2);
  profiled.set_profile("resnet50");
  *r.add_cells() = profiled;
  SweepCell busy = Cell("ps", 8, 1, 8, 1.0);
  busy.set_cpu_bound(true);
  busy.set_cpu_busy(0.93);
  *r.add_cells() = busy;

  absl::StatusOr<SweepFile> file = ParseSweepJson(LabJson(r), "s.json");
  ASSERT_THAT(file, IsOk());
  EXPECT_EQ(file->transport, sim::PsTransport::kGrpc);
  EXPECT_EQ(file->results.cells_size(), 7);
  const SplitCells split = SplitSweepCells({*file}, CellSplit());
  ASSERT_EQ(split.fit.size(), 3u);
  ASSERT_EQ(split.held_out.size(), 2u);
  ASSERT_EQ(split.skipped.size(), 2u);
  EXPECT_EQ(split.fit[0].layout, sim::SimLayout::kRing);
  EXPECT_EQ(split.fit[0].label, "ring N=2 4M 1 Gbit/s");
  EXPECT_EQ(split.fit[1].layout, sim::SimLayout::kHalvingDoubling);
  const sim::MeasuredCell& ps = split.fit[2];
  EXPECT_EQ(ps.layout, sim::SimLayout::kPsSeparate);
  EXPECT_EQ(ps.label, "ps N=4 K=2 16M 1 Gbit/s grpc");
  EXPECT_EQ(ps.servers, 2);
  EXPECT_EQ(ps.bytes, 16 << 20);
  EXPECT_EQ(ps.nic_Bps, 125e6);
  EXPECT_EQ(ps.partition_bytes, 128 << 10);
  EXPECT_EQ(ps.transport, sim::PsTransport::kGrpc);
  EXPECT_EQ(ps.measured_s, 0.3);
  EXPECT_EQ(split.held_out[0].layout, sim::SimLayout::kPsColocated);
  EXPECT_EQ(split.held_out[1].note, "CPUs 93% busy");
  EXPECT_THAT(split.skipped[0], HasSubstr("the job failed (job j-7"));
  EXPECT_THAT(split.skipped[1], HasSubstr("resnet50 cell"));
}

TEST(SweepCellsTest, OldSweep_PsTensorPlaneSaysTheTransport) {
  absl::StatusOr<SweepFile> grpc = ParseSweepJson(
      "{\"lab\": {\"ps_tensor_plane\": false}, \"cells\": []}", "old.json");
  ASSERT_THAT(grpc, IsOk());
  EXPECT_EQ(grpc->transport, sim::PsTransport::kGrpc);
  absl::StatusOr<SweepFile> plane = ParseSweepJson(
      "{\"lab\": {\"ps_tensor_plane\": true}, \"cells\": []}", "old.json");
  ASSERT_THAT(plane, IsOk());
  EXPECT_EQ(plane->transport, sim::PsTransport::kPlane);
}

TEST(SweepCellsTest, NotASweep_IsInvalidAndNamesTheFile) {
  EXPECT_THAT(
      ParseSweepJson("{\"cells\": 3}", "bad.json"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad.json")));
  EXPECT_THAT(ParseSweepJson("{\"lab\": {\"ps_transport\": \"rdma\"}}", "x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("plane and grpc")));
}

TEST(SweepCellsTest, UnverifiedLink_LeftOutOfTheFitUnlessAllowed) {
  SweepFile file;
  SweepCell cell = Cell("ring", 2, 0, 4, 0.05);
  cell.set_link_ok(false);
  *file.results.add_cells() = cell;
  *file.results.add_cells() = Cell("ring", 2, 0, 4, 0.05);
  SplitCells split = SplitSweepCells({file}, CellSplit());
  EXPECT_EQ(split.fit.size(), 1u);
  ASSERT_EQ(split.skipped.size(), 1u);
  EXPECT_THAT(split.skipped[0], HasSubstr("--unverified-links"));
  CellSplit allow;
  allow.unverified_links = true;
  split = SplitSweepCells({file}, allow);
  ASSERT_EQ(split.fit.size(), 2u);
  EXPECT_EQ(split.fit[0].note, "links unverified");
}

TEST(SweepCellsTest, DescribeSource_NamesMachineDateAndCommit) {
  SweepFile a, b;
  a.results.set_machine("Test CPU, 2 CPUs, 8 GiB");
  a.results.set_commit("abc1234");
  a.results.set_time(1.8e9);
  b.results.set_commit("def5678");
  b.results.set_time(1.7e9);
  sim::SimCalibration c;
  DescribeSource({a, b}, "vm-3", 2, 0, &c);
  EXPECT_EQ(c.machine, "lab on vm-3, 2 cores (Test CPU, 2 CPUs, 8 GiB)");
  EXPECT_EQ(c.date, "2027-01-15");
  EXPECT_EQ(c.commit, "abc1234,def5678");
  DescribeSource({}, "vm-3", 1, 1.7e9, &c);
  EXPECT_EQ(c.machine, "lab on vm-3, 1 core");
  EXPECT_EQ(c.date, "2023-11-14");
  EXPECT_EQ(c.commit, "unknown");
}

TEST(SweepCellsTest, ErrorTable_MarksCellsBeyondTheLimit) {
  std::vector<sim::CellError> rows = {
      {"ring N=8 8M 1 Gbit/s", 0.100, 0.104, 0.04, ""},
      {"ps N=8 K=2 8M 1 Gbit/s", 0.200, 0.150, -0.25, "CPUs 95% busy"},
  };
  const std::string text = FormatErrorTable(rows, sim::ErrorTargets(), false);
  EXPECT_THAT(text, HasSubstr("ring N=8 8M 1 Gbit/s"));
  EXPECT_THAT(text, HasSubstr("100.0"));
  EXPECT_THAT(text, HasSubstr("+4.0%"));
  EXPECT_THAT(text, HasSubstr("-25.0%  !  CPUs 95% busy"));
  EXPECT_THAT(text, HasSubstr("mean |error| 14.5% over 2 cells (target <= 8%), "
                              "worst -25.0% (ps N=8 K=2 8M 1 Gbit/s), 1 beyond "
                              "20%: MISS"));
  const std::string md = FormatErrorTable(rows, sim::ErrorTargets(), true);
  EXPECT_THAT(md, HasSubstr("| --- | --- |"));
  EXPECT_THAT(md, HasSubstr("| -25.0% | **beyond 20%** | CPUs 95% busy |"));
  rows.pop_back();
  EXPECT_THAT(FormatErrorTable(rows, sim::ErrorTargets(), false),
              HasSubstr("0 beyond 20%: PASS"));
}

TEST_F(LabCalibrateTest, FitsValidatesAndSimulateLoadsTheFile) {
  const std::string sweep = WriteTemp("sweep.json", LabJson(SimulatedSweep()));
  const std::string cal = TempPath("calibration.json");
  const std::string md = TempPath("validation.md");
  ASSERT_EQ(
      Calibrate({"--sweep", sweep, "-o", cal, "--validate", "--markdown", md}),
      cli::kExitOk)
      << err_.str();
  const std::string out = out_.str();
  EXPECT_THAT(out, HasSubstr("cells: 6 with N <= 4 (the fit's), 3 held out"));
  EXPECT_THAT(out, HasSubstr("alphaS"));
  EXPECT_THAT(out, HasSubstr("wrote " + cal));
  EXPECT_THAT(out, HasSubstr("held-out cells (N > 4"));
  EXPECT_THAT(out, HasSubstr("over 3 cells (target <= 8%)"));
  EXPECT_THAT(out, HasSubstr(": PASS"));

  absl::StatusOr<sim::SimCalibration> loaded = sim::LoadCalibration(cal);
  ASSERT_THAT(loaded, IsOk());
  EXPECT_NEAR(loaded->alpha_s, Truth().alpha_s, 1e-6 * Truth().alpha_s);
  EXPECT_NEAR(loaded->link_efficiency, Truth().link_efficiency, 1e-6);
  EXPECT_THAT(loaded->machine, HasSubstr("(Test CPU, 2 CPUs, 8 GiB)"));
  EXPECT_EQ(loaded->date, "2027-01-15");
  EXPECT_EQ(loaded->commit, "abc1234");
  const std::string markdown = ReadAll(md);
  EXPECT_THAT(markdown, HasSubstr("## Calibration"));
  EXPECT_THAT(markdown, HasSubstr("## Held-out cells (N > 4)"));
  EXPECT_THAT(markdown, HasSubstr("| ring N=8 8M 1 Gbit/s |"));

  // The file calibrate wrote is what simulate and plan take.
  ASSERT_EQ(Run(&cli::plan::RunSimulate,
                {"--model-profile", "resnet50", "-w", "8", "--link", "1gbit",
                 "--compute-ms", "100", "--calibration", cal}),
            cli::kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("calibration: " + cal));
  EXPECT_THAT(out_.str(), HasSubstr("abc1234"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("defaults (not fitted)")));

  // And calibrate validates a given file without fitting.
  ASSERT_EQ(Calibrate({"--calibration", cal, "--sweep", sweep}), cli::kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(), Not(HasSubstr("wrote")));
  EXPECT_THAT(out_.str(), HasSubstr(": PASS"));
  std::remove(sweep.c_str());
  std::remove(cal.c_str());
  std::remove(md.c_str());
}

// One `gradsync bench allreduce -o json` row, as cli/bench/report.cc
// writes it (the ps row with its shards, no in-place form).
std::string BenchRow(const std::string& backend, const std::string& algo,
                     int ranks, int shards, int64_t size, double time_us) {
  return absl::StrFormat(
      "{\"collective\":\"allreduce\",\"backend\":\"%s\",\"algo\":\"%s\","
      "\"ranks\":%d%s,\"tcp_congestion\":\"auto\",\"transport\":\"tcp\","
      "\"size\":%d,\"count\":%d,\"type\":\"float32\",\"redop\":\"sum\","
      "\"root\":-1,\"out_of_place\":{\"time_us\":%.17g,\"algbw\":1,"
      "\"busbw\":1,\"wrong\":0},\"in_place\":%s}\n",
      backend, algo, ranks,
      shards > 0 ? absl::StrCat(",\"shards\":", shards) : "", size, size / 4,
      time_us,
      backend == "ps" ? "null"
                      : "{\"time_us\":1,\"algbw\":1,\"busbw\":1,\"wrong\":0}");
}

TEST(BenchCellsTest, RowsBecomeCellsAndTheRestIsLeftOutWithAReason) {
  const std::string text = absl::StrCat(
      "# gradsync bench allreduce: backend ring, algo auto, 4 ranks\n",
      BenchRow("ring", "auto", 4, 0, 1 << 20, 1500),
      BenchRow("ring", "auto", 4, 0, 8 << 20, 9000),
      BenchRow("ring", "hierarchical", 4, 0, 8 << 20, 9000),
      BenchRow("nccl", "nccl", 4, 0, 8 << 20, 900),
      BenchRow("ring", "ring", 1, 0, 8 << 20, 10),
      BenchRow("ps", "ps", 4, 2, 16 << 20, 40000),
      "{\"summary\":true,\"collective\":\"allreduce\",\"backend\":\"ps\","
      "\"ranks\":4,\"wrong\":0,\"ok\":true,\"checked\":true,"
      "\"avg_busbw\":1}\n");
  BenchCluster cluster;
  cluster.link_bps = 25'000'000'000;
  cluster.ps_partition_bytes = 1 << 20;
  absl::StatusOr<BenchCells> got = ParseBenchJson(text, "b.json", cluster);
  ASSERT_THAT(got, IsOk());
  ASSERT_EQ(got->cells.size(), 3u);
  EXPECT_EQ(got->cells[0].layout, sim::SimLayout::kHalvingDoubling);  // 1M
  EXPECT_EQ(got->cells[1].layout, sim::SimLayout::kRing);             // 8M
  const sim::MeasuredCell& ps = got->cells[2];
  EXPECT_EQ(ps.layout, sim::SimLayout::kPsSeparate);
  EXPECT_EQ(ps.workers, 4);
  EXPECT_EQ(ps.servers, 2);
  EXPECT_EQ(ps.bytes, 16 << 20);
  EXPECT_EQ(ps.nic_Bps, 25e9 / 8);
  EXPECT_EQ(ps.partition_bytes, 1 << 20);
  EXPECT_DOUBLE_EQ(ps.measured_s, 0.04);
  EXPECT_EQ(ps.label, "bench ps K=2 N=4 16M 25 Gbit/s");
  ASSERT_EQ(got->skipped.size(), 3u);
  EXPECT_THAT(got->skipped[0], HasSubstr("b.json:4: ring algorithm "
                                         "hierarchical"));
  EXPECT_THAT(got->skipped[1], HasSubstr("b.json:5: backend nccl"));
  EXPECT_THAT(got->skipped[2], HasSubstr("b.json:6: one rank"));

  EXPECT_THAT(ParseBenchJson("not json\n", "b.json", cluster),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("b.json:1: not a JSON row")));
  cluster.link_bps = 0;
  EXPECT_THAT(
      ParseBenchJson(text, "b.json", cluster),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--link RATE")));
}

// A 10 Gbit/s cluster's bench output whose times are what the simulator
// says under Truth(): ring and PS at N = 2..8. Fitted from it, the
// calibration is Truth() again, and it records what it was fitted on.
TEST_F(LabCalibrateTest, FromBench_RecoversTheParametersExactly) {
  BenchCluster cluster;
  cluster.link_bps = 10'000'000'000;
  cluster.ps_partition_bytes = 256 << 10;
  std::string shape;
  for (int n : {2, 4, 8}) {
    for (int64_t mib : {1, 4, 32}) {
      shape += BenchRow("ring", "ring", n, 0, mib << 20, 1);
      for (int k : {1, n / 2}) {
        shape += BenchRow("ps", "ps", n, k, mib << 20, 1);
      }
    }
  }
  absl::StatusOr<BenchCells> cells = ParseBenchJson(shape, "shape", cluster);
  ASSERT_THAT(cells, IsOk());
  std::string text;
  for (const sim::MeasuredCell& c : cells->cells) {
    absl::StatusOr<double> t = sim::SimulateCell(c, Truth());
    ASSERT_THAT(t, IsOk());
    text +=
        BenchRow(c.servers > 0 ? "ps" : "ring", c.servers > 0 ? "ps" : "ring",
                 c.workers, c.servers, static_cast<int64_t>(c.bytes), *t * 1e6);
  }
  const std::string bench = WriteTemp("bench.json", text);
  const std::string cal = TempPath("bench_cal.json");
  ASSERT_EQ(Calibrate({"--from-bench", bench, "--link", "10gbit",
                       "--bench-partition", "256K", "-o", cal}),
            cli::kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(),
              HasSubstr("cells: 27 with N <= 4 (the fit's, 27 of them from "
                        "bench outputs), 0 held out, 0 left out"));
  absl::StatusOr<sim::SimCalibration> got = sim::LoadCalibration(cal);
  ASSERT_THAT(got, IsOk());
  const sim::SimCalibration want = Truth();
  EXPECT_NEAR(got->alpha_s, want.alpha_s, 1e-6 * want.alpha_s);
  EXPECT_NEAR(got->link_efficiency, want.link_efficiency, 1e-6);
  EXPECT_NEAR(got->partition_overhead_s, want.partition_overhead_s,
              1e-6 * want.partition_overhead_s);
  EXPECT_EQ(got->fit_max_workers, 8);
  EXPECT_EQ(got->fit_min_link_Bps, 10e9 / 8);
  EXPECT_EQ(got->fit_max_link_Bps, 10e9 / 8);
  EXPECT_TRUE(sim::WasFitted(*got, "alphaS"));
  EXPECT_TRUE(sim::WasFitted(*got, "linkEfficiency"));
  EXPECT_FALSE(sim::WasFitted(*got, "intraAlphaS"));
  EXPECT_THAT(got->machine, HasSubstr("bench outputs " + bench));

  // No --link: a usage error that says what is missing.
  EXPECT_EQ(Calibrate({"--from-bench", bench}), cli::kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--from-bench needs --link RATE"));
  std::remove(bench.c_str());
  std::remove(cal.c_str());
}

TEST_F(LabCalibrateTest, BadInput_ExitsWithTheRightStatus) {
  EXPECT_EQ(Calibrate({}), cli::kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--sweep"));
  EXPECT_EQ(Calibrate({"stray"}), cli::kExitUsage);
  EXPECT_EQ(Calibrate({"--sweep", "/nonexistent/sweep.json"}),
            cli::kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("cannot read /nonexistent/sweep.json"));
  const std::string bad = WriteTemp("bad.json", "[1, 2]");
  EXPECT_EQ(Calibrate({"--sweep", bad}), cli::kExitUsage);
  std::remove(bad.c_str());
  EXPECT_EQ(Calibrate({"--sweep", "x", "--link-efficiency", "1.5"}),
            cli::kExitUsage);

  // Only cells with N <= 4: nothing to validate on.
  SweepResults small;
  *small.add_cells() = Cell("ring", 2, 0, 4, 0.05);
  const std::string sweep = WriteTemp("small.json", LabJson(small));
  const std::string cal = TempPath("small_cal.json");
  EXPECT_EQ(Calibrate({"--sweep", sweep, "-o", cal, "--validate"}),
            cli::kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("no held-out cell (N > 4)"));
  // --max-workers 1: nothing to fit.
  EXPECT_EQ(Calibrate({"--sweep", sweep, "--max-workers", "1"}),
            cli::kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("no cell with N <= 1 to fit"));
  std::remove(sweep.c_str());
  std::remove(cal.c_str());
}

}  // namespace
}  // namespace lab
}  // namespace gradsync
