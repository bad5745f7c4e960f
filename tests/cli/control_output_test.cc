// -o/--output on the read commands (and its old spellings --json and
// --format), the wide and CSV forms it adds, short flags, and `gradsync
// version`, against the fake coordinator in this process.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/control/job_commands.h"
#include "cli/control/job_csv.h"
#include "cli/control/version_command.h"
#include "cli/framework/command_env.h"
#include "cli/framework/output_format.h"
#include "cli/framework/plot_script.h"
#include "common/version.h"
#include "common/wire_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/control_test_fixture.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

using test_support::ControlCommandsTest;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(OutputFormatTest, CheckOutputFormat_NamesTheValidOnes) {
  EXPECT_TRUE(CheckOutputFormat("--output", "csv", ReadFormats()).ok());
  const absl::Status bad = CheckOutputFormat("--output", "xml", ReadFormats());
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "--output is 'xml'; use table, wide, json or csv");
}

TEST(OutputFormatTest, ArgsAskForJson_EverySpelling) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--json"},
                                             {"-o", "json"},
                                             {"-ojson"},
                                             {"-o=json"},
                                             {"x", "--output", "json"},
                                             {"--output=json"},
                                             {"--format", "json"},
                                             {"--format=json"}}) {
    EXPECT_TRUE(ArgsAskForJson(args)) << args[0];
  }
  EXPECT_FALSE(ArgsAskForJson({"-o", "csv"}));
  EXPECT_FALSE(ArgsAskForJson({"--", "--json"}));
  EXPECT_FALSE(ArgsAskForJson({"-o"}));
}

TEST_F(ControlCommandsTest, Output_JsonAndItsOldSpellingsPrintTheSame) {
  ASSERT_EQ(Run(RunWorkers, {"--json"}), kExitOk);
  const std::string json = out_.str();
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{
           {"-o", "json"}, {"--output=json"}, {"--format", "json"}}) {
    ASSERT_EQ(Run(RunWorkers, args), kExitOk) << err_.str();
    EXPECT_EQ(out_.str(), json) << args[0];
  }
}

TEST_F(ControlCommandsTest, Output_UnknownFormat_NamesTheCommandsFormats) {
  EXPECT_EQ(Run(RunStatus, {"-o", "yaml"}), kExitUsage);
  EXPECT_EQ(err_.str(),
            "gradsync status: --output is 'yaml'; use table, wide, json or "
            "csv\n(gradsync status --help lists the flags)\n");
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(Run(RunMetrics, {"j-1", "--format", "xml"}), kExitUsage);
  EXPECT_THAT(err_.str(),
              StartsWith("gradsync metrics: --format is 'xml'; use csv, "
                         "table, wide, json or trace\n"));
  // Commands that print no table or CSV say so too.
  EXPECT_EQ(Run(RunCancel, {"j-run", "-o", "csv"}), kExitUsage);
  EXPECT_THAT(err_.str(), StartsWith("gradsync cancel: --output is 'csv'; use "
                                     "table or json\n"));
  ASSERT_EQ(Run(RunStatus, {"j-run", "-o", "csv"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("\nj-run,JOB_STATE_RUNNING,"));
}

TEST_F(ControlCommandsTest, Status_Csv_OneRowPerJob) {
  constexpr char kHeader[] =
      "job_id,state,message,step,submit_time,start_time,end_time,"
      "test_accuracy,test_loss,mode,switch_requests,last_checkpoint,"
      "last_checkpoint_steps,restarted_as,restart_of,first_step,name,"
      "num_workers,steps_total\n";
  ASSERT_EQ(Run(RunStatus, {"-o", "csv"}), kExitOk) << err_.str();
  const std::string csv = out_.str();
  EXPECT_THAT(csv, StartsWith(kHeader));
  EXPECT_THAT(csv, HasSubstr("\nj-1,JOB_STATE_SUCCEEDED,,2,0,100,101,0.8125,0,"
                             "SYNC_MODE_UNSPECIFIED,0,/ck/step-3.ckpt,3,,,0,"
                             "fmnist,2,3\n"));
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 9);  // 8 jobs
  ASSERT_EQ(Run(RunStatus, {"j-run", "-ocsv"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(), absl::StrCat(kHeader,
                                     "j-run,JOB_STATE_RUNNING,,0,0,100,0,0,0,"
                                     "SYNC_MODE_UNSPECIFIED,0,,0,,,0,fmnist,2,"
                                     "3\n"));
}

TEST_F(ControlCommandsTest, Status_Wide_AddsHostsAndRestartOf) {
  ASSERT_EQ(Run(RunStatus, {"-o", "wide"}), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(),
              StartsWith("JOB          NAME    STATE      MODE  WORKERS  STEP  "
                         "ACCURACY  TIME   HOSTS  RESTART_OF  MESSAGE\n"));
  EXPECT_THAT(out_.str(), HasSubstr("\nj-waited     fmnist  CANCELLED  ring  2"
                                    "        3/3   -         1.0 s  node   "
                                    "j-ckpt\n"));
}

TEST_F(ControlCommandsTest, Workers_Csv_WithDevicesAndJobs) {
  ASSERT_EQ(Run(RunWorkers, {"-o", "csv"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            "worker_id,host,address,state,last_heartbeat,free_devices,"
            "job_memory_bytes,devices,job_ids\n"
            "w-1,node,127.0.0.1,WORKER_STATE_IDLE,0,1,0,cpu:0,\n"
            "w-2,node,127.0.0.1,WORKER_STATE_IDLE,0,1,0,cpu:0,\n");
}

TEST_F(ControlCommandsTest, Metrics_OutputTableIsFormatTable) {
  ASSERT_EQ(Run(RunMetrics, {"j-1", "--format", "table"}), kExitOk);
  const std::string table = out_.str();
  ASSERT_EQ(Run(RunMetrics, {"j-1", "-o", "table"}), kExitOk);
  EXPECT_EQ(out_.str(), table);
  ASSERT_EQ(Run(RunMetrics, {"j-1", "-o", "wide"}), kExitOk);
  EXPECT_EQ(out_.str(), table);
  // The default stays CSV.
  ASSERT_EQ(Run(RunMetrics, {"j-1"}), kExitOk);
  EXPECT_THAT(out_.str(), StartsWith("rank,step,loss,"));
}

TEST_F(ControlCommandsTest, ShortFlags_CoordinatorAndWorkers) {
  CommandEnv env;
  EXPECT_EQ(
      RunWithEnv(RunSubmit,
                 {"-c", server_.address(), "-w", "2", "-n", "10", "-ojson"},
                 env),
      kExitOk)
      << err_.str();
  EXPECT_EQ(out_.str(), "{\"jobId\":\"j-1\"}\n");
  ASSERT_EQ(fake_.submitted().size(), 1u);
  EXPECT_EQ(fake_.submitted()[0].num_workers(), 2);
  EXPECT_EQ(fake_.submitted()[0].steps(), 10);
}

TEST_F(ControlCommandsTest, UnknownFlag_DidYouMean) {
  EXPECT_EQ(Run(RunStatus, {"--outptu", "json"}), kExitUsage);
  EXPECT_THAT(err_.str(), StartsWith("gradsync status: unknown flag "
                                     "'--outptu'; did you mean '--output'?\n"));
  EXPECT_EQ(Run(RunSubmit, {"-workers", "2"}), kExitUsage);
  EXPECT_THAT(err_.str(), StartsWith("gradsync submit: unknown flag "
                                     "'-workers'; did you mean "
                                     "'--workers'?\n"));
  EXPECT_TRUE(fake_.submitted().empty());
}

TEST_F(ControlCommandsTest, Version_ClientAndCoordinator) {
  ListWorkersResponse answer;
  answer.set_coordinator_version("9.8.7");
  answer.set_coordinator_wire_version(kWireVersion);
  answer.set_coordinator_address("coord.example:29400");
  fake_.SetWorkerList(answer);
  ASSERT_EQ(Run(RunVersion, {}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            absl::StrCat("client:      gradsync ", Version(), " (wire version ",
                         kWireVersion,
                         ")\ncoordinator: gradsync-coordinator 9.8.7 (wire "
                         "version ",
                         kWireVersion, ") at ", server_.address(),
                         ", advertised as coord.example:29400\n"));
  ASSERT_EQ(Run(RunVersion, {"-o", "json"}), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            absl::StrCat("{\"client\":{\"version\":\"", Version(),
                         "\",\"wireVersion\":", kWireVersion,
                         "},\"coordinator\":{\"address\":\"", server_.address(),
                         "\",\"reachable\":true,\"version\":\"9.8.7\","
                         "\"wireVersion\":",
                         kWireVersion,
                         ",\"advertised\":\"coord.example:29400\"}}\n"));
}

TEST_F(ControlCommandsTest, Version_OtherWireVersion_ExitsOne) {
  ListWorkersResponse answer;
  answer.set_coordinator_version("0.0.1");
  answer.set_coordinator_wire_version(kWireVersion + 1);
  fake_.SetWorkerList(answer);
  EXPECT_EQ(Run(RunVersion, {}), kExitFailure);
  EXPECT_THAT(out_.str(), HasSubstr(absl::StrCat(
                              "the client speaks wire version ", kWireVersion,
                              " and the coordinator ", kWireVersion + 1,
                              ": use a gradsync of the coordinator's "
                              "build\n")));
}

TEST_F(ControlCommandsTest, Metrics_Plot_WritesAPngWithTheSwitches) {
  const std::string png =
      absl::StrCat(::testing::TempDir(), "/metrics_plot_", getpid(), ".png");
  CommandEnv env;
  // metrics_plot.py is copied next to the built binary (cli/CMakeLists.txt).
  env.self_exe = absl::StrCat(GRADSYNC_CLI_BINARY_DIR, "/gradsync");
  ASSERT_EQ(RunWithEnv(RunMetrics,
                       {"j-ps", "--plot", png, "-c", server_.address()}, env),
            kExitOk)
      << err_.str();
  EXPECT_EQ(out_.str(), absl::StrCat("wrote ", png, " (1 switch marked)\n"));
  std::ifstream file(png, std::ios::binary);
  std::string magic(8, '\0');
  file.read(magic.data(), 8);
  EXPECT_EQ(magic, "\x89PNG\r\n\x1a\n");
  unlink(png.c_str());
  // The temporary input is gone too: nothing but what was there before.
  EXPECT_NE(access(absl::StrCat(png, ".json").c_str(), F_OK), 0);
}

TEST(PlotScriptTest, CandidatesAndAMissingScript) {
  EXPECT_THAT(PlotScriptCandidates("/opt/g/bin/gradsync", "p.py"),
              ::testing::ElementsAre("/opt/g/bin/p.py",
                                     "/opt/g/bin/../share/gradsync/p.py",
                                     "/opt/g/bin/../../scripts/p.py"));
  const absl::Status missing =
      RunPlotScript("/nonexistent/bin/gradsync", "nope.py", {});
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.message(),
            "nope.py not found next to /nonexistent/bin/gradsync or in "
            "../share/gradsync; install gradsync or run scripts/nope.py "
            "yourself");
}

TEST(PlotScriptTest, MetricsPlotInput_JobAndMetricsOnOneLine) {
  JobStatus job;
  job.set_job_id("j-9");
  const std::string input = MetricsPlotInput(job, "{\"jobId\":\"j-9\"}\n");
  EXPECT_THAT(input, StartsWith("{\"job\":{\"jobId\":\"j-9\","));
  EXPECT_THAT(input,
              ::testing::EndsWith("},\"metrics\":{\"jobId\":\"j-9\"}}\n"));
}

TEST(VersionReportTest, Unreachable_PrintsTheClientAndSaysSo) {
  VersionReport report;
  report.client_version = "1.2.3";
  report.client_wire = 4;
  report.asked = true;
  report.address = "10.0.0.1:29400";
  report.error = "connection refused";
  EXPECT_EQ(FormatVersionReport(report, /*json=*/false),
            "client:      gradsync 1.2.3 (wire version 4)\n"
            "coordinator: not reachable at 10.0.0.1:29400: connection "
            "refused\n");
  EXPECT_EQ(FormatVersionReport(report, /*json=*/true),
            "{\"client\":{\"version\":\"1.2.3\",\"wireVersion\":4},"
            "\"coordinator\":{\"address\":\"10.0.0.1:29400\",\"reachable\":"
            "false,\"error\":\"connection refused\"}}\n");
  report.asked = false;
  EXPECT_EQ(FormatVersionReport(report, /*json=*/false),
            "client:      gradsync 1.2.3 (wire version 4)\n");
}

TEST(VersionCommandTest, Unreachable_ExitsOneAfterTheClientLine) {
  std::ostringstream out, err;
  CommandEnv env;
  env.out = &out;
  env.err = &err;
  env.coordinator_env = "127.0.0.1:1";
  EXPECT_EQ(RunVersion({"--timeout", "5"}, env), kExitFailure);
  EXPECT_THAT(out.str(),
              StartsWith(absl::StrCat("client:      gradsync ", Version(),
                                      " (wire version ", kWireVersion,
                                      ")\ncoordinator: not reachable at "
                                      "127.0.0.1:1: ")));
  std::ostringstream client_out;
  env.out = &client_out;
  EXPECT_EQ(RunVersion({"--client"}, env), kExitOk);
  EXPECT_EQ(client_out.str(),
            absl::StrCat("client:      gradsync ", Version(), " (wire version ",
                         kWireVersion, ")\n"));
}

}  // namespace
}  // namespace control
}  // namespace cli
}  // namespace gradsync
