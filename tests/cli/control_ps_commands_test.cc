// The parameter-server side of the control commands against the fake
// coordinator: submit's PS flags, switch, status and metrics of a PS job,
// parameter servers in workers.
#include <string>
#include <vector>

#include "cli/control/job_commands.h"
#include "cli/framework/command_env.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/control_test_fixture.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

using test_support::ControlCommandsTest;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST_F(ControlCommandsTest, Submit_PsFlags_ReachTheSpec) {
  EXPECT_EQ(Run(RunSubmit, {"--mode", "ps", "--ps-shards", "2", "--sync", "ssp",
                            "--staleness", "1", "--switch-at", "100:ring"}),
            kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(), StartsWith("submitted job j-1 (mlp-fashion-mnist: "
                                     "1 workers, ps, ring from step 100)\n"));
  ASSERT_EQ(fake_.submitted().size(), 1u);
  const JobSpec spec = fake_.submitted()[0];
  EXPECT_EQ(spec.ps().shards(), 2);
  EXPECT_EQ(spec.ps().sync(), "ssp");
  EXPECT_EQ(spec.ps().staleness(), 1);
  ASSERT_EQ(spec.switches_size(), 1);
  EXPECT_EQ(spec.switches(0).mode(), SYNC_MODE_RING);
  EXPECT_EQ(Run(RunSubmit, {"--sync", "eventually"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--sync is 'eventually'; use one of sync, "
                                    "async, ssp"));
  EXPECT_EQ(fake_.submitted().size(), 1u);
}

TEST_F(ControlCommandsTest, Switch_PrintsTheEpochAndWhenItApplies) {
  EXPECT_EQ(Run(RunSwitch, {"j-run", "ps"}), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(),
              StartsWith("job j-run: switch to ps requested (epoch 1); it "
                         "applies at the next step boundary the ranks agree "
                         "on\n"));
  EXPECT_THAT(out_.str(), HasSubstr("gradsync status j-run"));
  EXPECT_EQ(Run(RunSwitch, {"j-run", "ring", "--json"}), kExitOk);
  EXPECT_THAT(out_.str(), StartsWith("{\"epoch\":2,\"status\":{\"jobId\":"
                                     "\"j-run\""));
  EXPECT_THAT(fake_.switches(), ElementsAre(SYNC_MODE_PS, SYNC_MODE_RING));
}

TEST_F(ControlCommandsTest, Switch_BadArguments_ExitTwoAndSendNothing) {
  EXPECT_EQ(Run(RunSwitch, {"j-1", "allreduce"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("the mode is 'allreduce'; use ps or ring"));
  EXPECT_EQ(Run(RunSwitch, {"j-1"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("name the mode to switch to: ps or ring"));
  EXPECT_EQ(Run(RunSwitch, {}), kExitUsage);
  EXPECT_EQ(Run(RunSwitch, {"j-1", "ps", "extra"}), kExitUsage);
  EXPECT_TRUE(fake_.switches().empty());
}

TEST_F(ControlCommandsTest, Switch_EndedOrUnknownJob_ExitsOneWithTheReason) {
  EXPECT_EQ(Run(RunSwitch, {"j-fail", "ps"}), kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("gradsync switch: job j-fail already "
                                    "ended"));
  EXPECT_EQ(Run(RunSwitch, {"j-404", "ring", "--json"}), kExitFailure);
  EXPECT_THAT(out_.str(), StartsWith("{\"error\":{\"code\":\"NOT_FOUND\""));
}

TEST_F(ControlCommandsTest, Status_PsJob_ShowsModeShardsAndSwitches) {
  EXPECT_EQ(Run(RunStatus, {"j-ps"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("mode:      ring\n"));
  EXPECT_THAT(out_.str(),
              HasSubstr("ps shards: 0=127.0.0.1:7001 1=127.0.0.1:7002\n"));
  EXPECT_THAT(out_.str(), HasSubstr("STEP  FROM  TO    BY         MOVE_MS\n"
                                    "2     ps    ring  request 1  "));
  EXPECT_EQ(Run(RunStatus, {"j-ps", "--json"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("\"mode\":\"SYNC_MODE_RING\","
                                    "\"switches\":[{\"step\":2,"));
  EXPECT_THAT(out_.str(), HasSubstr("\"psAddresses\":[\"127.0.0.1:7001\","));
}

TEST_F(ControlCommandsTest, Metrics_PsJob_ShardCountersInEveryFormat) {
  // csv: one table each, so that a CSV reader takes either whole.
  EXPECT_EQ(Run(RunMetrics, {"j-ps"}), kExitOk);
  EXPECT_THAT(out_.str(), Not(HasSubstr("job_id,shard,begin,end,mode,")));
  EXPECT_EQ(Run(RunMetrics, {"j-ps", "--shards"}), kExitOk);
  EXPECT_THAT(out_.str(), StartsWith("job_id,shard,begin,end,mode,"));
  EXPECT_THAT(out_.str(), HasSubstr("\nj-ps,1,0,50,UPDATE_MODE_UNSPECIFIED,0,"
                                    "1048576,"));
  EXPECT_EQ(Run(RunMetrics, {"j-ps", "--json"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("\"shards\":[{\"jobId\":\"j-ps\","));
  EXPECT_EQ(Run(RunMetrics, {"j-ps", "--format", "table"}), kExitOk);
  EXPECT_THAT(out_.str(), StartsWith("per-step means:\nRANK  STEPS"));
  EXPECT_THAT(out_.str(),
              HasSubstr("\nper-step means by sync mode:\nMODE  STEPS"));
  EXPECT_THAT(out_.str(), HasSubstr("\nparameter-server shards:\nSHARD  "
                                    "ELEMENTS  PUSHES"));
  // A ring job: no second table.
  EXPECT_EQ(Run(RunMetrics, {"j-1"}), kExitOk);
  EXPECT_THAT(out_.str(), Not(HasSubstr("\n\n")));
}

TEST_F(ControlCommandsTest, Workers_ListsParameterServers) {
  EXPECT_EQ(Run(RunWorkers, {}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("parameter servers:\nID    HOST  ADDRESS"));
  EXPECT_THAT(out_.str(), HasSubstr("ps-1  node  127.0.0.1:7001  LIVE"));
  EXPECT_EQ(Run(RunWorkers, {"--json"}), kExitOk);
  EXPECT_THAT(out_.str(), HasSubstr("\"parameterServers\":[{\"psId\":"
                                    "\"ps-1\""));
}

}  // namespace
}  // namespace control
}  // namespace cli
}  // namespace gradsync
