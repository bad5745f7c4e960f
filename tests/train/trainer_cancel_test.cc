// Cancelling ranks while they wait inside a mode switch. The daemon
// cancels a rank by setting its flag and calling Trainer::Abort; a rank
// must then stop within seconds wherever it waits, including in the
// parameter-server calls of a switch, which are not part of a step: here
// rank 0 of an async PS job reaches its scripted switch to the ring and
// waits in FetchState for the shards to drain, i.e. for rank 1 (slowed
// down) to push every step before the switch.
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/daemon/ps_server.h"
#include "tests/collectives/rank_group.h"
#include "tests/util/status_matchers.h"
#include "worker/train/trainer.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::RankGroup;
using ::gradsync::testing::SmallPipelineOptions;
using ::gradsync::testing::StatusIs;

constexpr int64_t kSwitchStep = 4;

TEST(TrainerCancelTest, CancelDuringAsyncDrainBeforeASwitch_StopsPromptly) {
  absl::StatusOr<std::unique_ptr<PsServer>> server =
      PsServer::Start("127.0.0.1:0");
  ASSERT_THAT(server, IsOk());
  TrainerConfig config;
  config.model = "mlp";
  config.layer_sizes = {32, 16, 10};
  config.dataset = DatasetKind::kSynthetic;
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.lr = 0.05;
  config.global_batch_size = 20;
  config.steps = 1000;
  config.seed = 3;
  // Long enough that waiting it out would fail the test's bound.
  config.comm_timeout = absl::Seconds(30);
  config.initial_path = SyncPath::kPs;
  config.switches = {{kSwitchStep, SyncPath::kRing}};
  config.ps.addresses = {(*server)->address()};
  config.ps.job_id = "cancel-drain";
  config.ps.update = PsUpdate::kAsync;
  config.ps.optimizer.set_name("sgd");
  config.ps.optimizer.set_learning_rate(config.optimizer.lr);
  absl::StatusOr<TrainData> data = LoadTrainData(config);
  ASSERT_THAT(data, IsOk());

  RankGroup group(2, SmallPipelineOptions());
  std::atomic<bool> cancelled{false};
  std::atomic<int64_t> rank0_step{-1};
  absl::Mutex mu;
  std::vector<Trainer*> trainers(2, nullptr);
  absl::Time cancel_time;
  std::thread canceller([&]() {
    // Rank 0 finished the step before the switch: it now waits for rank 1,
    // which sleeps a second after each of its steps.
    while (rank0_step.load() < kSwitchStep - 1) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    absl::SleepFor(absl::Milliseconds(300));
    cancel_time = absl::Now();
    cancelled.store(true);
    absl::MutexLock lock(&mu);
    for (Trainer* t : trainers) {
      if (t != nullptr) t->Abort(absl::CancelledError("test cancels the job"));
    }
  });
  std::vector<absl::Time> ended(2);
  std::vector<absl::Status> status = group.Run([&](int r) -> absl::Status {
    absl::StatusOr<std::unique_ptr<Trainer>> trainer = Trainer::Create(
        config, *data, &group.comm(r),
        [&rank0_step, r](const StepMetrics& m) {
          if (r == 0) rank0_step.store(m.step());
          if (r == 1) absl::SleepFor(absl::Seconds(1));
        },
        &cancelled);
    if (!trainer.ok()) return trainer.status();
    {
      absl::MutexLock lock(&mu);
      trainers[r] = trainer->get();
    }
    absl::Status s = (*trainer)->Run().status();
    ended[r] = absl::Now();
    absl::MutexLock lock(&mu);
    trainers[r] = nullptr;
    return s;
  });
  canceller.join();
  EXPECT_THAT(status[0], StatusIs(absl::StatusCode::kCancelled));
  EXPECT_THAT(status[1], StatusIs(absl::StatusCode::kCancelled));
  EXPECT_EQ(rank0_step.load(), kSwitchStep - 1)
      << "rank 0 should have been waiting in the switch before step "
      << kSwitchStep;
  // Rank 1 may finish its one-second sleep first; nothing waits longer.
  EXPECT_LT(ended[0] - cancel_time, absl::Seconds(2));
  EXPECT_LT(ended[1] - cancel_time, absl::Seconds(2));
  (*server)->Shutdown();
}

}  // namespace
}  // namespace gradsync
