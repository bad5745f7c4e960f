// What the torch PS path (python/gradsync/torch/ps.py, through the C API's
// gs_ps_*) asks of the shards, over real gRPC on 127.0.0.1:0: the "sum"
// optimizer hands back the ranks' rank-order mean exactly, and a push's
// learning rate (rank 0's) sets the step's, while a bad one is refused
// before the shard changes.
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/client/ps_admin_client.h"
#include "server/ps/client/ps_client.h"
#include "server/ps/daemon/ps_server.h"
#include "tests/ps/ps_grpc_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::MakeClient;
using ::gradsync::testing::ShardRequest;
using ::gradsync::testing::StartServers;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

constexpr size_t kTotal = 1001;  // shards of 501 and 500

// Rank r's integer gradient of step t.
std::vector<float> Gradient(int rank, int64_t step) {
  std::vector<float> g(kTotal);
  for (size_t i = 0; i < kTotal; ++i) {
    g[i] =
        static_cast<float>(static_cast<int64_t>(i % 5) * 2 + 4 * rank - step);
  }
  return g;
}

class TorchPathTest : public ::testing::Test {
 protected:
  // Shard k of `job` on server k, created with `optimizer` at `lr`, the
  // ranks' mean (not sum) applied, as gs_ps_open creates them.
  void CreateShards(const std::string& job, const std::string& optimizer,
                    double lr, int workers) {
    if (servers_.empty()) {
      ASSERT_TRUE(StartServers(2, &servers_, &addresses_));
    }
    for (int k = 0; k < 2; ++k) {
      ps::CreateShardRequest request = ShardRequest(job, k, 2, kTotal, workers);
      request.mutable_optimizer()->set_name(optimizer);
      request.mutable_optimizer()->set_learning_rate(lr);
      request.set_sum_gradients(false);
      ASSERT_THAT(PsAdminClient::Connect(addresses_[k])->CreateShard(request),
                  IsOk());
    }
  }

  // Runs `steps` synchronous steps of `workers` ranks through StartStep,
  // rank r sending learning_rate lrs[r]; each rank's output of each step.
  std::vector<std::vector<std::vector<float>>> Run(
      const std::string& job, int workers, int64_t steps,
      const std::vector<double>& lrs, std::vector<absl::Status>* statuses) {
    std::vector<std::vector<std::vector<float>>> outs(workers);
    statuses->assign(workers, absl::OkStatus());
    std::vector<std::thread> ranks;
    for (int r = 0; r < workers; ++r) {
      ranks.emplace_back([&, r]() {
        std::unique_ptr<PsClient> client =
            MakeClient(job, r, kTotal, addresses_, 256);
        for (int64_t t = 0; t < steps; ++t) {
          const std::vector<float> grads = Gradient(r, t);
          std::vector<float> out(kTotal);
          PsStepControl control;
          control.learning_rate = lrs[r];
          absl::StatusOr<std::unique_ptr<PsStep>> step =
              client->StartStep(t, grads, absl::MakeSpan(out), control);
          if (!step.ok()) {
            (*statuses)[r] = step.status();
            return;
          }
          (*step)->Ready(500, kTotal);
          (*step)->Ready(0, 500);
          absl::StatusOr<PsStepResult> done =
              (*step)->Finish(absl::Now() + absl::Seconds(30));
          if (!done.ok()) {
            (*statuses)[r] = done.status();
            return;
          }
          outs[r].push_back(out);
        }
      });
    }
    for (std::thread& t : ranks) t.join();
    return outs;
  }

  std::vector<std::unique_ptr<PsServer>> servers_;
  std::vector<std::string> addresses_;
};

TEST_F(TorchPathTest, SumOptimizer_EveryStepHandsBackTheExactMean) {
  constexpr int kWorkers = 3;
  CreateShards("sum", "sum", 0, kWorkers);
  std::vector<absl::Status> statuses;
  auto outs = Run("sum", kWorkers, 3, {0, 0, 0}, &statuses);
  for (int r = 0; r < kWorkers; ++r) {
    ASSERT_THAT(statuses[r], IsOk()) << "rank " << r;
    ASSERT_EQ(outs[r].size(), 3u);
    for (int64_t t = 0; t < 3; ++t) {
      for (size_t i = 0; i < kTotal; ++i) {
        // Mean over r = 0..2 of 2(i % 5) + 4r - t: 2(i % 5) + 4 - t,
        // with no memory of the steps before.
        const float want =
            static_cast<float>(static_cast<int64_t>(i % 5) * 2 + 4 - t);
        ASSERT_EQ(outs[r][t][i], want)
            << "rank " << r << " step " << t << " index " << i;
      }
    }
    // Bitwise the same answer on every rank.
    EXPECT_EQ(std::memcmp(outs[r][2].data(), outs[0][2].data(),
                          kTotal * sizeof(float)),
              0);
  }
}

TEST_F(TorchPathTest, LearningRate_RankZerosSetsTheStepsAndStays) {
  constexpr int kWorkers = 2;
  // SGD at lr 1 from zeros; rank 0 asks for 0.5 (rank 1's 0.25 is
  // ignored), then the next runs send none and keep 0.5.
  CreateShards("lr", "sgd", 1.0, kWorkers);
  std::vector<absl::Status> statuses;
  auto outs = Run("lr", kWorkers, 1, {0.5, 0.25}, &statuses);
  for (const absl::Status& s : statuses) ASSERT_THAT(s, IsOk());
  for (size_t i = 0; i < kTotal; ++i) {
    // Step 0's mean is 2(i % 5) + 2: p = -0.5 * mean = -(i % 5) - 1.
    ASSERT_EQ(outs[0][0][i], -static_cast<float>(i % 5) - 1.0f) << i;
  }
  std::vector<absl::Status> later;
  std::vector<std::thread> ranks;
  std::vector<std::vector<float>> after(kWorkers, std::vector<float>(kTotal));
  later.assign(kWorkers, absl::OkStatus());
  for (int r = 0; r < kWorkers; ++r) {
    ranks.emplace_back([&, r]() {
      std::unique_ptr<PsClient> client =
          MakeClient("lr", r, kTotal, addresses_, 256);
      later[r] = client->PushPull(1, Gradient(r, 1), absl::MakeSpan(after[r]));
    });
  }
  for (std::thread& t : ranks) t.join();
  for (const absl::Status& s : later) ASSERT_THAT(s, IsOk());
  for (size_t i = 0; i < kTotal; ++i) {
    // Step 1's mean is 2(i % 5) + 1, still at lr 0.5.
    const float step0 = -static_cast<float>(i % 5) - 1.0f;
    ASSERT_EQ(after[0][i], step0 - 0.5f * (2.0f * (i % 5) + 1.0f)) << i;
  }
}

TEST_F(TorchPathTest, BadLearningRate_RefusedAndTheShardUnchanged) {
  CreateShards("bad-lr", "sgd", 1.0, 1);
  for (double lr : {-1.0, std::numeric_limits<double>::quiet_NaN(),
                    std::numeric_limits<double>::infinity()}) {
    std::vector<absl::Status> statuses;
    Run("bad-lr", 1, 1, {lr}, &statuses);
    EXPECT_THAT(statuses[0], StatusIs(absl::StatusCode::kInvalidArgument,
                                      HasSubstr("learning_rate")))
        << lr;
  }
  // Step 0 is still to be pushed, and from zeros: lr 1 gives -mean.
  std::unique_ptr<PsClient> client =
      MakeClient("bad-lr", 0, kTotal, addresses_, 256);
  std::vector<float> params(kTotal);
  ASSERT_THAT(client->PushPull(0, Gradient(0, 0), absl::MakeSpan(params)),
              IsOk());
  for (size_t i = 0; i < kTotal; ++i) {
    ASSERT_EQ(params[i], -2.0f * static_cast<float>(i % 5)) << i;
  }
}

}  // namespace
}  // namespace gradsync
