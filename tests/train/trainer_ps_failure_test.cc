// Failures of the Trainer's PS path (fixture: trainer_ps_fixture.h):
//   - a parameter server that goes away fails every rank, naming the shard;
//   - a TCP congestion control the kernel refuses fails entering PS mode.
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/train/trainer_ps_fixture.h"

namespace gradsync {
namespace {

using ::gradsync::testing::kWorld;
using ::gradsync::testing::Outcome;
using ::gradsync::testing::StatusIs;
using ::gradsync::testing::TrainerPsTest;
using ::testing::HasSubstr;

// A server that goes away in the middle of PS steps: every rank fails
// within the deadline, naming the shard.
TEST_F(TrainerPsTest, ServerShutDownMidRun_EveryRankFailsNamingTheShard) {
  TrainerConfig config = Config(OptimizerKind::kMomentum, 100000);
  config.initial_path = SyncPath::kPs;
  config.comm_timeout = absl::Seconds(10);
  std::thread killer([&] {
    absl::SleepFor(absl::Milliseconds(300));
    servers_[1]->Shutdown();
  });
  const absl::Time start = absl::Now();
  const Outcome out = Run(config);
  killer.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(40));
  int naming = 0;
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_FALSE(out.status[r].ok()) << r;
    if (absl::StrContains(out.status[r].message(), "shard 1")) ++naming;
  }
  EXPECT_GE(naming, 1);
}

// The worker's --tcp-congestion reaches the PS clients it makes
// (PsConfig.tcp_congestion): a refused name fails entering PS mode on
// every rank, naming it, instead of being ignored per connection.
TEST_F(TrainerPsTest, RefusedCongestionControl_EveryRankFailsNamingIt) {
  TrainerConfig config = Config(OptimizerKind::kMomentum, 4);
  config.initial_path = SyncPath::kPs;
  config.ps.tcp_congestion = "no-such-cc";
  const Outcome out = Run(config);
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_THAT(out.status[r], StatusIs(absl::StatusCode::kFailedPrecondition,
                                        HasSubstr("'no-such-cc'")))
        << "rank " << r;
  }
}

}  // namespace
}  // namespace gradsync
