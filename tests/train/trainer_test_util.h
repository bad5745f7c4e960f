// Helpers of the trainer tests: run a job of ranks as threads over TCP
// communicators (tests/collectives/rank_group.h) and collect what each rank
// reported; a small MLP configuration on synthetic data.
#ifndef GRADSYNC_TESTS_TRAIN_TRAINER_TEST_UTIL_H_
#define GRADSYNC_TESTS_TRAIN_TRAINER_TEST_UTIL_H_

#include <atomic>
#include <filesystem>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/collectives/rank_group.h"
#include "tests/util/fashion_mnist.h"
#include "tests/util/status_matchers.h"
#include "worker/data/fashion_mnist.h"
#include "worker/train/trainer.h"

namespace gradsync {
namespace testing {

// What one job of ranks-as-threads produced.
struct JobOutcome {
  std::vector<absl::Status> status;               // per rank
  std::vector<TrainResult> results;               // per rank
  std::vector<std::vector<StepMetrics>> metrics;  // [rank][step]
  std::vector<std::vector<float>> final_params;   // per rank
};

// Runs one Trainer per rank, rank r with configs[r] (a world of
// configs.size() ranks), to the end or the first error.
inline JobOutcome RunJobPerRank(const std::vector<TrainerConfig>& configs,
                                const TrainData& data,
                                const std::atomic<bool>* cancelled = nullptr,
                                RankGroup* group_in = nullptr) {
  const int world = static_cast<int>(configs.size());
  std::unique_ptr<RankGroup> owned;
  RankGroup* group = group_in;
  if (group == nullptr) {
    owned = std::make_unique<RankGroup>(world, SmallPipelineOptions());
    group = owned.get();
  }
  JobOutcome out;
  out.results.resize(world);
  out.metrics.resize(world);
  out.final_params.resize(world);
  out.status = group->Run([&](int r) -> absl::Status {
    absl::StatusOr<std::unique_ptr<Trainer>> trainer = Trainer::Create(
        configs[r], data, &group->comm(r),
        [&out, r](const StepMetrics& m) { out.metrics[r].push_back(m); },
        cancelled);
    if (!trainer.ok()) return trainer.status();
    absl::StatusOr<TrainResult> result = (*trainer)->Run();
    out.final_params[r].assign((*trainer)->params().begin(),
                               (*trainer)->params().end());
    if (!result.ok()) return result.status();
    out.results[r] = *result;
    return absl::OkStatus();
  });
  return out;
}

// The same config on each of `world` ranks.
inline JobOutcome RunJob(const TrainerConfig& config, const TrainData& data,
                         int world,
                         const std::atomic<bool>* cancelled = nullptr,
                         RankGroup* group_in = nullptr) {
  return RunJobPerRank(std::vector<TrainerConfig>(world, config), data,
                       cancelled, group_in);
}

inline TrainerConfig SmallMlpConfig() {
  TrainerConfig c;
  c.model = "mlp";
  c.layer_sizes = {32, 24, 16, 10};
  c.dataset = DatasetKind::kSynthetic;
  c.optimizer.kind = OptimizerKind::kMomentum;
  c.optimizer.lr = 0.05;
  c.global_batch_size = 50;
  c.steps = 12;
  c.seed = 5;
  c.bucket_bytes = 300 * 4;  // buckets span layers (W1 is 24*16)
  c.comm_timeout = absl::Seconds(20);
  return c;
}

// The Fashion-MNIST mlp the tests train for real: {784, 64, 10}, Adam,
// batch 128, several 64 KiB buckets over its 50k parameters.
inline TrainerConfig FashionMnistMlpConfig(int64_t steps) {
  TrainerConfig c;
  c.layer_sizes = {784, 64, 10};
  c.dataset = DatasetKind::kFashionMnist;
  c.optimizer.kind = OptimizerKind::kAdam;
  c.optimizer.lr = 1e-3;
  c.global_batch_size = 128;
  c.steps = steps;
  c.seed = 11;
  c.bucket_bytes = 64 << 10;
  c.eval_batch_size = 1000;
  c.comm_timeout = absl::Seconds(20);
  return c;
}

inline TrainData LoadOrDie(const TrainerConfig& config) {
  absl::StatusOr<TrainData> data = LoadTrainData(config);
  EXPECT_THAT(data, ::gradsync::testing::IsOk());
  return data.ok() ? *data : TrainData{};
}

inline void ExpectAllOk(const JobOutcome& out) {
  for (size_t r = 0; r < out.status.size(); ++r) {
    ASSERT_THAT(out.status[r], ::gradsync::testing::IsOk()) << "rank " << r;
  }
}

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_TRAIN_TRAINER_TEST_UTIL_H_
