// The fixture of the Trainer's PS tests (trainer_ps_test.cc,
// trainer_ps_failure_test.cc): two in-process parameter servers on
// loopback, a small MLP job config, ranks as threads over TCP
// communicators, and a stand-in for the coordinator's switch directives.
#ifndef GRADSYNC_TESTS_TRAIN_TRAINER_PS_FIXTURE_H_
#define GRADSYNC_TESTS_TRAIN_TRAINER_PS_FIXTURE_H_

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/daemon/ps_server.h"
#include "tests/collectives/rank_group.h"
#include "tests/util/status_matchers.h"
#include "worker/train/trainer.h"

namespace gradsync {
namespace testing {

constexpr int kWorld = 4;

// Directives of runtime switch requests, as the coordinator's store holds
// them, and the epoch the "daemon" has heard of.
class FakeSwitchBoard {
 public:
  // Publishes request `epoch` for `mode` and lets the ranks hear of it.
  void Request(int64_t epoch, SyncMode mode,
               const std::vector<std::string>& addresses) {
    {
      absl::MutexLock lock(&mu_);
      SwitchDirective d;
      d.set_epoch(epoch);
      d.set_mode(mode);
      for (const std::string& a : addresses) d.add_ps_addresses(a);
      directives_[epoch] = d;
    }
    heard_.store(epoch);
  }
  SwitchSource Source() {
    SwitchSource source;
    source.heard_epoch = &heard_;
    source.directive = [this](int64_t epoch,
                              absl::Time) -> absl::StatusOr<SwitchDirective> {
      absl::MutexLock lock(&mu_);
      auto it = directives_.find(epoch);
      if (it == directives_.end()) {
        return absl::NotFoundError(absl::StrCat("no directive ", epoch));
      }
      return it->second;
    };
    return source;
  }

 private:
  std::atomic<int64_t> heard_{0};
  absl::Mutex mu_;
  std::map<int64_t, SwitchDirective> directives_ ABSL_GUARDED_BY(mu_);
};

struct Outcome {
  std::vector<absl::Status> status;
  std::vector<std::vector<StepMetrics>> metrics;  // [rank][step]
};

class TrainerPsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<std::unique_ptr<PsServer>> server =
          PsServer::Start("127.0.0.1:0");
      ASSERT_THAT(server, IsOk());
      addresses_.push_back((*server)->address());
      servers_.push_back(*std::move(server));
    }
  }

  TrainerConfig Config(OptimizerKind optimizer, int64_t steps) {
    TrainerConfig c;
    c.model = "mlp";
    c.layer_sizes = {32, 24, 16, 10};
    c.dataset = DatasetKind::kSynthetic;
    c.optimizer.kind = optimizer;
    c.optimizer.lr = optimizer == OptimizerKind::kAdam ? 1e-3 : 0.05;
    c.global_batch_size = 50;
    c.steps = steps;
    c.seed = 5;
    c.bucket_bytes = 300 * 4;
    c.comm_timeout = absl::Seconds(20);
    c.ps.addresses = addresses_;
    c.ps.job_id = absl::StrCat("job-", ++jobs_);
    c.ps.chunk_bytes = 512;  // several chunks per shard
    c.ps.optimizer.set_name(optimizer == OptimizerKind::kAdam ? "adam"
                                                              : "momentum");
    c.ps.optimizer.set_learning_rate(c.optimizer.lr);
    return c;
  }

  // `progress` (if set) follows rank 0's last finished step.
  Outcome Run(const TrainerConfig& config, SwitchSource source = {},
              std::atomic<int64_t>* progress = nullptr) {
    absl::StatusOr<TrainData> data = LoadTrainData(config);
    EXPECT_THAT(data, IsOk());
    RankGroup group(kWorld, SmallPipelineOptions());
    Outcome out;
    out.metrics.resize(kWorld);
    out.status = group.Run([&](int r) -> absl::Status {
      absl::StatusOr<std::unique_ptr<Trainer>> trainer = Trainer::Create(
          config, *data, &group.comm(r),
          [&out, r, progress](const StepMetrics& m) {
            out.metrics[r].push_back(m);
            if (r == 0 && progress != nullptr) progress->store(m.step());
          },
          nullptr, source);
      if (!trainer.ok()) return trainer.status();
      return (*trainer)->Run().status();
    });
    return out;
  }

  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<PsServer>> servers_;
  int jobs_ = 0;
};

inline void ExpectLockstep(const Outcome& out, int64_t steps) {
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_THAT(out.status[r], IsOk()) << "rank " << r;
    ASSERT_EQ(out.metrics[r].size(), static_cast<size_t>(steps)) << r;
    for (int64_t s = 0; s < steps; ++s) {
      ASSERT_EQ(out.metrics[r][s].step(), s) << "rank " << r;
    }
  }
  for (int64_t s = 0; s < steps; ++s) {
    for (int r = 1; r < kWorld; ++r) {
      ASSERT_EQ(out.metrics[r][s].param_hash(), out.metrics[0][s].param_hash())
          << "rank " << r << " diverged at step " << s;
      ASSERT_EQ(out.metrics[r][s].mode(), out.metrics[0][s].mode())
          << "rank " << r << " step " << s;
      ASSERT_EQ(out.metrics[r][s].loss(), out.metrics[0][s].loss());
    }
  }
}

inline double MaxRelative(const Outcome& a, const Outcome& b) {
  double worst = 0;
  for (size_t s = 0; s < a.metrics[0].size(); ++s) {
    const double x = a.metrics[0][s].loss();
    const double y = b.metrics[0][s].loss();
    worst = std::max(worst, std::abs(x - y) / std::max(std::abs(x), 1e-12));
  }
  return worst;
}

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_TRAIN_TRAINER_PS_FIXTURE_H_
