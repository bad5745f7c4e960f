// End-to-end checks of the compute side in one process: a short real
// training run on Fashion-MNIST, and data parallelism emulated with 4 ranks
// (each computing its share of the global batch) against 1 rank.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/optimizer.h"
#include "gtest/gtest.h"
#include "tests/util/fashion_mnist.h"
#include "worker/data/batcher.h"
#include "worker/data/fashion_mnist.h"
#include "worker/model/blas.h"
#include "worker/model/mlp.h"

namespace gradsync {
namespace {

// The data of the ranks' shares and of the whole global batch.
struct ShardedStep {
  std::vector<Batch> shards;
  Batch global;
};

ShardedStep MakeStep(const Dataset& data, size_t global_batch, size_t ranks,
                     uint64_t step) {
  ShardedStep s;
  for (size_t r = 0; r < ranks; ++r) {
    BatcherConfig c;
    c.global_batch_size = global_batch;
    c.num_ranks = ranks;
    c.rank = r;
    c.seed = 3;
    absl::StatusOr<Batcher> b = Batcher::Create(data.num_examples, c);
    EXPECT_TRUE(b.ok());
    s.shards.emplace_back();
    EXPECT_TRUE(b->Gather(data, step, &s.shards.back()).ok());
    if (r == 0) {
      absl::StatusOr<std::vector<size_t>> all = b->GlobalIndices(step);
      EXPECT_TRUE(all.ok());
      EXPECT_TRUE(GatherExamples(data, *all, &s.global).ok());
    }
  }
  return s;
}

// max |a - b| / max |b| and ||a - b|| / ||b||.
void ExpectClose(const std::vector<float>& got, absl::Span<const float> want,
                 double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  double max_abs = 0, max_err = 0, norm = 0, err = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    max_abs = std::max(max_abs, std::fabs(static_cast<double>(want[i])));
    max_err = std::max(max_err, std::fabs(d));
    norm += static_cast<double>(want[i]) * want[i];
    err += d * d;
  }
  EXPECT_LE(max_err, tolerance * max_abs);
  EXPECT_LE(std::sqrt(err), tolerance * std::sqrt(norm));
}

// The gradient of the global mean loss from 4 shards equals the 1-rank
// gradient: sum over ranks of (shard_size / B) * shard_mean_gradient, and
// equivalently the plain sum of shard gradients normalised by B (what a SUM
// all-reduce of ranks using loss_normalizer = B produces).
void CheckDataParallelGradient(const Dataset& data, size_t global_batch) {
  const size_t ranks = 4;
  const std::vector<size_t> sizes = {data.feature_size, 64, 32, 10};
  absl::StatusOr<Mlp> mlp = Mlp::Create(sizes, 21);
  ASSERT_TRUE(mlp.ok());
  for (uint64_t step : {0, 5}) {
    const ShardedStep s = MakeStep(data, global_batch, ranks, step);
    absl::StatusOr<BatchMetrics> one =
        mlp->ForwardBackward(s.global.features, s.global.labels);
    ASSERT_TRUE(one.ok());
    const std::vector<float> want(mlp->grads().begin(), mlp->grads().end());

    std::vector<float> weighted(want.size(), 0.0f), summed(want.size(), 0.0f);
    double loss = 0;
    for (const Batch& shard : s.shards) {
      ASSERT_TRUE(mlp->ForwardBackward(shard.features, shard.labels).ok());
      const float w = static_cast<float>(shard.size()) / global_batch;
      for (size_t i = 0; i < want.size(); ++i) {
        weighted[i] += w * mlp->grads()[i];
      }
      ForwardBackwardOptions opts;
      opts.loss_normalizer = global_batch;
      absl::StatusOr<BatchMetrics> m =
          mlp->ForwardBackward(shard.features, shard.labels, opts);
      ASSERT_TRUE(m.ok());
      loss += m->loss * shard.size() / global_batch;
      for (size_t i = 0; i < want.size(); ++i) summed[i] += mlp->grads()[i];
    }
    ExpectClose(weighted, want, 1e-5);
    ExpectClose(summed, want, 1e-5);
    EXPECT_NEAR(loss, one->loss, 1e-5 * one->loss);
  }
}

Dataset RandomDataset(size_t n, size_t features) {
  Dataset d;
  d.num_examples = n;
  d.feature_size = features;
  d.num_classes = 10;
  uint64_t x = 88172645463325252ULL;
  for (size_t i = 0; i < n * features; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    d.features.push_back(static_cast<float>(x % 1000) / 1000.0f);
  }
  for (size_t i = 0; i < n; ++i) {
    d.labels.push_back(static_cast<int32_t>(i % 10));
  }
  return d;
}

TEST(TrainingTest, DataParallelGradient_MatchesSingleRank_RandomData) {
  ASSERT_TRUE(SetBlasThreads(1).ok());
  const Dataset data = RandomDataset(500, 40);
  CheckDataParallelGradient(data, 130);  // shares 33, 33, 32, 32
  CheckDataParallelGradient(data, 3);    // B < N: rank 3 holds nothing
}

TEST(TrainingTest, DataParallelGradient_MatchesSingleRank_FashionMnist) {
  GRADSYNC_SKIP_WITHOUT_FASHION_MNIST();
  ASSERT_TRUE(SetBlasThreads(1).ok());
  absl::StatusOr<Dataset> test =
      LoadFashionMnist(kFashionMnistDir, DataSplit::kTest);
  ASSERT_TRUE(test.ok()) << test.status();
  CheckDataParallelGradient(*test, 130);
}

// Four emulated ranks that average their gradients and step their own
// optimizer replicas stay bitwise identical to each other and follow the
// 1-rank trajectory within float tolerance.
TEST(TrainingTest, DataParallelTraining_TracksSingleRank) {
  ASSERT_TRUE(SetBlasThreads(1).ok());
  const Dataset data = RandomDataset(400, 30);
  const std::vector<size_t> sizes = {30, 24, 10};
  const size_t ranks = 4, batch = 50;
  OptimizerConfig oc;
  oc.lr = 0.05;
  absl::StatusOr<Mlp> single = Mlp::Create(sizes, 9);
  absl::StatusOr<Mlp> replica = Mlp::Create(sizes, 9);  // every rank's copy
  ASSERT_TRUE(single.ok() && replica.ok());
  const size_t n = single->num_parameters();
  absl::StatusOr<Optimizer> opt1 = Optimizer::CreateByName("momentum", oc, n);
  absl::StatusOr<Optimizer> optn = Optimizer::CreateByName("momentum", oc, n);
  ASSERT_TRUE(opt1.ok() && optn.ok());
  for (uint64_t step = 0; step < 10; ++step) {
    const ShardedStep s = MakeStep(data, batch, ranks, step);
    ASSERT_TRUE(
        single->ForwardBackward(s.global.features, s.global.labels).ok());
    ASSERT_TRUE(opt1->Step(single->params(), single->grads()).ok());
    std::vector<float> sum(n, 0.0f);  // the all-reduce
    ForwardBackwardOptions opts;
    opts.loss_normalizer = batch;
    for (const Batch& shard : s.shards) {
      ASSERT_TRUE(
          replica->ForwardBackward(shard.features, shard.labels, opts).ok());
      for (size_t i = 0; i < n; ++i) sum[i] += replica->grads()[i];
    }
    ASSERT_TRUE(optn->Step(replica->params(), sum).ok());
  }
  const std::vector<float> got(replica->params().begin(),
                               replica->params().end());
  ExpectClose(got, single->params(), 1e-4);
}

TEST(TrainingTest, FashionMnistMlp_ReachesTestAccuracy) {
  GRADSYNC_SKIP_WITHOUT_FASHION_MNIST();
  ASSERT_TRUE(SetBlasThreads(kDefaultBlasThreadsPerRank).ok());
  const absl::Time start = absl::Now();
  absl::StatusOr<Dataset> train = LoadFashionMnist(
      kFashionMnistDir, DataSplit::kTrain, PixelScaling::kStandardize);
  absl::StatusOr<Dataset> test = LoadFashionMnist(
      kFashionMnistDir, DataSplit::kTest, PixelScaling::kStandardize);
  ASSERT_TRUE(train.ok()) << train.status();
  ASSERT_TRUE(test.ok()) << test.status();
  const absl::Time loaded = absl::Now();

  absl::StatusOr<Mlp> mlp = Mlp::Create({784, 256, 256, 10}, 1);
  ASSERT_TRUE(mlp.ok());
  OptimizerConfig oc;
  oc.lr = 1e-3;
  absl::StatusOr<Optimizer> adam =
      Optimizer::CreateByName("adam", oc, mlp->num_parameters());
  ASSERT_TRUE(adam.ok());
  BatcherConfig bc;
  bc.global_batch_size = 100;
  bc.seed = 1;
  absl::StatusOr<Batcher> batcher = Batcher::Create(train->num_examples, bc);
  ASSERT_TRUE(batcher.ok());
  const uint64_t steps = 3 * batcher->steps_per_epoch();  // three epochs
  Batch batch;
  double recent_loss = 0;
  for (uint64_t step = 0; step < steps; ++step) {
    ASSERT_TRUE(batcher->Gather(*train, step, &batch).ok());
    absl::StatusOr<BatchMetrics> m =
        mlp->ForwardBackward(batch.features, batch.labels);
    ASSERT_TRUE(m.ok());
    ASSERT_TRUE(adam->Step(mlp->params(), mlp->grads()).ok());
    if (step + 100 >= steps) recent_loss += m->loss / 100;
  }
  const absl::Time trained = absl::Now();
  absl::StatusOr<BatchMetrics> eval =
      mlp->Evaluate(test->features, test->labels, 1000);
  ASSERT_TRUE(eval.ok());
  const absl::Time done = absl::Now();
  std::printf(
      "[fashion-mnist] %llu steps of 100: train loss (last 100) %.4f, test "
      "loss %.4f, test accuracy %.4f; load %.1f s, train %.1f s, eval %.1f "
      "s\n",
      static_cast<unsigned long long>(steps), recent_loss, eval->loss,
      eval->accuracy(), absl::ToDoubleSeconds(loaded - start),
      absl::ToDoubleSeconds(trained - loaded),
      absl::ToDoubleSeconds(done - trained));
  EXPECT_GE(eval->accuracy(), 0.85);
  EXPECT_LT(absl::ToDoubleSeconds(done - start), 60.0);
}

}  // namespace
}  // namespace gradsync
