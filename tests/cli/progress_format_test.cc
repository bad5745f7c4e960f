// The progress line of `submit --follow`/`watch`, the per-step breakdown
// (per rank, per mode, time-weighted bandwidths), the final report, and
// the cluster's link model behind the ideal bandwidth they print.
#include <sstream>
#include <string>
#include <vector>

#include "cli/control/job_format.h"
#include "cli/control/progress.h"
#include "cli/framework/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/format_test_util.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

using ::gradsync::cli::control::testing::Metric;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(ProgressTest, LineWithBar) {
  ProgressSnapshot s;
  s.state = JOB_STATE_RUNNING;
  s.steps_done = 25;
  s.total_steps = 100;
  s.has_metrics = true;
  s.loss = 0.43126;
  s.samples_per_s = 5120.4;
  s.comm_share = 0.231;
  s.mode = SYNC_MODE_PS;
  EXPECT_EQ(FormatProgressLine(s, 8),
            "[##------] step 25/100  loss 0.4313  5120 samples/s  comm 23.1%  "
            "ps  RUNNING");
  s.mode = SYNC_MODE_UNSPECIFIED;  // read as ring
  EXPECT_EQ(FormatProgressLine(s, 0),
            "step 25/100  loss 0.4313  5120 samples/s  comm 23.1%  ring  "
            "RUNNING");
  s.busbw_gbps = 1.234;  // timed steps: their busbw too
  EXPECT_EQ(FormatProgressLine(s, 0),
            "step 25/100  loss 0.4313  5120 samples/s  comm 23.1%  busbw "
            "1.23 GB/s  ring  RUNNING");
}

// The line for a terminal of each width: never longer than width - 1; the
// bar shrinks first, then the parts go one by one, then it is cut.
TEST(ProgressTest, FitProgressLine_CompactsToTheWidth) {
  ProgressSnapshot s;
  s.state = JOB_STATE_RUNNING;
  s.steps_done = 25;
  s.total_steps = 100;
  s.has_metrics = true;
  s.loss = 0.43126;
  s.samples_per_s = 5120.4;
  s.comm_share = 0.231;
  s.busbw_gbps = 1.234;
  const std::string text =
      "step 25/100  loss 0.4313  5120 samples/s  comm 23.1%  busbw 1.23 GB/s  "
      "ring  RUNNING";
  EXPECT_EQ(FitProgressLine(s, 24, 0), FormatProgressLine(s, 24));
  EXPECT_EQ(FitProgressLine(s, 24, 112),
            "[######------------------] " + text);  // 111 columns
  // 110 columns: a bar of 110 - 84 - 3 = 23 cells.
  EXPECT_EQ(FitProgressLine(s, 24, 111), "[#####------------------] " + text);
  EXPECT_EQ(FitProgressLine(s, 24, 100), "[###---------] " + text);
  EXPECT_EQ(FitProgressLine(s, 24, 90), text);
  EXPECT_EQ(FitProgressLine(s, 24, 80),
            "step 25/100  loss 0.4313  5120 samples/s  comm 23.1%  ring  "
            "RUNNING");
  EXPECT_EQ(FitProgressLine(s, 24, 60),
            "step 25/100  loss 0.4313  comm 23.1%  ring  RUNNING");
  EXPECT_EQ(FitProgressLine(s, 24, 40), "step 25/100  loss 0.4313  RUNNING");
  EXPECT_EQ(FitProgressLine(s, 24, 30), "step 25/100  RUNNING");
  EXPECT_EQ(FitProgressLine(s, 24, 12), "step 25/100");
  EXPECT_EQ(FitProgressLine(s, 24, 1), "s");
}

JobEvent Event(JobState state, std::vector<StepMetrics> steps) {
  JobEvent event;
  event.mutable_status()->set_job_id("j-1");
  event.mutable_status()->set_state(state);
  event.mutable_status()->mutable_spec()->set_steps(4);
  event.mutable_status()->mutable_spec()->set_num_workers(2);
  for (const StepMetrics& m : steps) *event.add_steps() = m;
  return event;
}

TEST(ProgressTest, NotATerminal_OneLinePerEveryStepsAndStateChanges) {
  std::ostringstream out;
  ProgressOptions options;
  options.every_steps = 2;
  ProgressTracker tracker(options, &out);
  tracker.OnEvent(Event(JOB_STATE_RUNNING, {}));
  tracker.OnEvent(Event(JOB_STATE_RUNNING, {Metric(0, 0, 0.03, 0.01, 0.05),
                                            Metric(1, 0, 0.03, 0.01, 0.05)}));
  tracker.OnEvent(Event(JOB_STATE_RUNNING, {Metric(0, 1, 0.03, 0.01, 0.05)}));
  tracker.OnEvent(Event(JOB_STATE_RUNNING, {Metric(0, 2, 0.03, 0.01, 0.05)}));
  tracker.OnEvent(Event(JOB_STATE_SUCCEEDED, {Metric(0, 3, 0.03, 0.01, 0.05)}));
  tracker.Finish();
  EXPECT_EQ(out.str(),
            "job j-1: RUNNING\n"
            "step 2/4  loss 0.5000  1280 samples/s  comm 20.0%  ring  "
            "RUNNING\n"
            "job j-1: SUCCEEDED\n"
            "step 4/4  loss 0.2500  1280 samples/s  comm 20.0%  ring  "
            "SUCCEEDED\n");
  EXPECT_EQ(tracker.metrics().size(), 5u);
  EXPECT_EQ(tracker.status().state(), JOB_STATE_SUCCEEDED);
}

TEST(ProgressTest, Terminal_RedrawsInPlace) {
  std::ostringstream out;
  ProgressOptions options;
  options.tty = true;
  options.bar_width = 4;
  ProgressTracker tracker(options, &out);
  tracker.OnEvent(Event(JOB_STATE_RUNNING, {Metric(0, 1, 0.03, 0.01, 0.05)}));
  tracker.Finish();
  EXPECT_EQ(out.str(),
            "job j-1: RUNNING\n"
            "\r\x1b[K[##--] step 2/4  loss 0.5000  1280 samples/s  comm 20.0%  "
            "ring  RUNNING\n");
}

// A narrow terminal: the line drops its bar, then is cut one column short
// of the width, so that the \r redraw never wraps.
TEST(ProgressTest, Terminal_LineFitsTheWidth) {
  for (const int width : {120, 60, 40}) {
    std::ostringstream out;
    ProgressOptions options;
    options.tty = true;
    options.bar_width = 24;
    options.width = width;
    ProgressTracker tracker(options, &out);
    tracker.OnEvent(Event(JOB_STATE_RUNNING, {Metric(0, 1, 0.03, 0.01, 0.05)}));
    const std::string text = out.str();
    const size_t at = text.rfind("\r\x1b[K");
    ASSERT_NE(at, std::string::npos) << text;
    const std::string line = text.substr(at + 4);
    EXPECT_LT(line.size(), static_cast<size_t>(width)) << line;
    EXPECT_EQ(line.find('\n'), std::string::npos);
    if (width == 120) {
      EXPECT_EQ(line.rfind("[##", 0), 0u) << "the bar fits: " << line;
    } else {
      EXPECT_EQ(line.rfind("step 2/4", 0), 0u) << "no bar: " << line;
    }
  }
}

TEST(ProgressTest, EachSwitchGetsALineAndTheStepLineShowsTheMode) {
  std::ostringstream out;
  ProgressOptions options;
  options.every_steps = 1;
  ProgressTracker tracker(options, &out);
  tracker.OnEvent(Event(JOB_STATE_RUNNING, {Metric(0, 0, 0.03, 0.01, 0.05)}));
  JobEvent switched = Event(JOB_STATE_RUNNING, {});
  StepMetrics in_ps = Metric(0, 1, 0.03, 0.01, 0.05);
  in_ps.set_mode(SYNC_MODE_PS);
  in_ps.set_switch_epoch(2);
  *switched.add_steps() = in_ps;
  SwitchRecord* record = switched.mutable_status()->add_switches();
  record->set_step(1);
  record->set_from_mode(SYNC_MODE_RING);
  record->set_to_mode(SYNC_MODE_PS);
  record->set_epoch(2);
  tracker.OnEvent(switched);
  tracker.OnEvent(switched);  // the same switch again: no second line
  EXPECT_EQ(out.str(),
            "job j-1: RUNNING\n"
            "step 1/4  loss 1.0000  1280 samples/s  comm 20.0%  ring  "
            "RUNNING\n"
            "job j-1: switched ring -> ps at step 1 (request 2)\n"
            "step 2/4  loss 0.5000  1280 samples/s  comm 20.0%  ps  "
            "RUNNING\n");
}

TEST(ProgressTest, BreakdownPerRankAndAll) {
  const std::vector<StepBreakdown> rows = ComputeBreakdown(
      {Metric(0, 0, 0.010, 0.004, 0.020), Metric(0, 1, 0.030, 0.004, 0.040),
       Metric(1, 0, 0.010, 0.010, 0.020)});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].label, "0");
  EXPECT_EQ(rows[0].steps, 2);
  EXPECT_DOUBLE_EQ(rows[0].compute_s, 0.020);
  EXPECT_DOUBLE_EQ(rows[0].step_s, 0.030);
  EXPECT_EQ(rows[2].label, "all");
  EXPECT_EQ(rows[2].steps, 3);
  EXPECT_DOUBLE_EQ(rows[2].comm_s, 0.006);
  const std::string table = FormatBreakdownTable(rows);
  EXPECT_THAT(table, StartsWith("RANK  STEPS  COMPUTE_MS  COMM_MS  IDLE_MS  "
                                "STEP_MS  COMM   SENT/STEP  RECV/STEP  ALGBW  "
                                "BUSBW\n"));
  // No step was timed: no bandwidths.
  EXPECT_THAT(table, HasSubstr("0     2      20.00       4.00     6.00     "
                               "30.00    13.3%  1.00 KiB   2.00 KiB   -      "
                               "-\n"));
  EXPECT_THAT(BreakdownToJson(rows),
              HasSubstr("{\"rank\":\"all\",\"steps\":3,"));
}

TEST(ProgressTest, BreakdownBandwidthsAreTimeWeighted) {
  // 1 GB in 1 s at busbw 1.5, 1 GB in 3 s at busbw 0.5, and an untimed
  // step: algbw 2 GB / 4 s, busbw (1.5 + 1.5) GB / 4 s.
  std::vector<StepMetrics> metrics = {Metric(0, 0, 0.01, 0.01, 0.02),
                                      Metric(0, 1, 0.01, 0.01, 0.02),
                                      Metric(0, 2, 0.01, 0.01, 0.02)};
  metrics[0].set_sync_bytes(1000000000);
  metrics[0].set_sync_busy_s(1.0);
  metrics[0].set_busbw_gbps(1.5);
  metrics[1].set_sync_bytes(1000000000);
  metrics[1].set_sync_busy_s(3.0);
  metrics[1].set_busbw_gbps(0.5);
  metrics[2].set_sync_bytes(1000000000);
  const std::vector<StepBreakdown> rows = ComputeBreakdown(metrics);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(rows[0].algbw_gbps, 0.5);
  EXPECT_DOUBLE_EQ(rows[0].busbw_gbps, 0.75);
  EXPECT_THAT(FormatBreakdownTable(rows, "RANK", 1.5),
              HasSubstr("0.50   0.75   50.0%\n"));
  EXPECT_THAT(BreakdownToJson(rows),
              HasSubstr("\"algbwGbps\":0.5,\"busbwGbps\":0.75}"));
}

TEST(JobClusterLinksTest, HostsAndRanksOfTheJob) {
  JobStatus job;
  job.set_job_id("j-1");
  EXPECT_EQ(JobClusterLinks(job, 10, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  for (int r = 0; r < 4; ++r) {
    RankPlacement* rank = job.add_ranks();
    rank->set_rank(r);
    rank->set_host(r < 2 ? "a" : "b");
  }
  absl::StatusOr<ClusterLinks> links = JobClusterLinks(job, 10, 1);
  ASSERT_TRUE(links.ok()) << links.status();
  EXPECT_EQ(links->nodes, 2);
  EXPECT_EQ(links->ranks_per_node, 2);
  // N = 4: min(1 * 3 * 2 / (4 * 1), 10 * 3 / 2) = 1.5.
  EXPECT_DOUBLE_EQ(*IdealBusBandwidth(*links), 1.5);
  EXPECT_EQ(DescribeIdeal(*links, 1.5),
            "ideal busbw 1.50 GB/s (B 10.00 GB/s, I 1.00 GB/s; 2 nodes, 2 "
            "ranks each)");
  // Uneven hosts (a: 2, b: 1, c: 1): Q = 3, P = 2, N = 4.
  job.mutable_ranks(3)->set_host("c");
  absl::StatusOr<ClusterLinks> uneven = JobClusterLinks(job, 10, 1);
  ASSERT_TRUE(uneven.ok()) << uneven.status();
  EXPECT_EQ(uneven->nodes, 3);
  EXPECT_EQ(uneven->ranks_per_node, 2);
  EXPECT_THAT(uneven->node_ranks, ElementsAre(2, 1, 1));
  // min(1 * 3 * 3 / (4 * 2), 10 * 2 * 3 / (4 * 1)) = 9/8.
  EXPECT_DOUBLE_EQ(*IdealBusBandwidth(*uneven), 9.0 / 8.0);
  EXPECT_EQ(DescribeIdeal(*uneven, 9.0 / 8.0),
            "ideal busbw 1.12 GB/s (B 10.00 GB/s, I 1.00 GB/s; 3 nodes of "
            "2+1+1 ranks, the fullest binds)");
}

TEST(ProgressTest, BreakdownPerMode_SideBySide) {
  std::vector<StepMetrics> metrics = {
      Metric(0, 0, 0.010, 0.004, 0.020), Metric(1, 0, 0.010, 0.010, 0.020),
      Metric(0, 1, 0.030, 0.002, 0.040), Metric(1, 1, 0.030, 0.002, 0.040)};
  metrics[0].set_mode(SYNC_MODE_PS);
  metrics[1].set_mode(SYNC_MODE_PS);
  metrics[2].set_mode(SYNC_MODE_RING);
  metrics[3].set_mode(SYNC_MODE_RING);
  const std::vector<StepBreakdown> rows = ComputeModeBreakdown(metrics);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].label, "ps");
  EXPECT_EQ(rows[0].steps, 2);
  EXPECT_DOUBLE_EQ(rows[0].comm_s, 0.007);
  EXPECT_EQ(rows[1].label, "ring");
  EXPECT_DOUBLE_EQ(rows[1].comm_s, 0.002);
  EXPECT_THAT(FormatBreakdownTable(rows, "MODE"), StartsWith("MODE  STEPS"));
  JobStatus done;
  done.set_job_id("j-1");
  done.set_state(JOB_STATE_SUCCEEDED);
  EXPECT_THAT(FormatFinalReport(done, metrics),
              HasSubstr("per-step breakdown by sync mode (means):\nMODE"));
}

TEST(ProgressTest, FinalReport) {
  JobStatus done;
  done.set_job_id("j-1");
  done.set_state(JOB_STATE_SUCCEEDED);
  done.set_start_time(100);
  done.set_end_time(112);
  done.set_test_accuracy(0.84213);
  done.set_test_loss(0.4312);
  const std::string report =
      FormatFinalReport(done, {Metric(0, 9, 0.01, 0.01, 0.02)});
  EXPECT_THAT(report,
              StartsWith("job j-1 SUCCEEDED after 10 steps in 12 s: test "
                         "accuracy 0.8421 (loss 0.4312)\n"));
  EXPECT_THAT(report, HasSubstr("per-step breakdown"));

  JobStatus failed;
  failed.set_job_id("j-2");
  failed.set_state(JOB_STATE_FAILED);
  failed.set_message("rank 1 failed at step 3: allreduce #3 timed out");
  EXPECT_EQ(FormatFinalReport(failed, {}),
            "job j-2 FAILED: rank 1 failed at step 3: allreduce #3 timed "
            "out\n");
  EXPECT_THAT(FormatFinalReport(failed, {}), Not(HasSubstr("breakdown")));
}

}  // namespace
}  // namespace control
}  // namespace cli
}  // namespace gradsync
