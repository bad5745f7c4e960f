#include "worker/model/mlp.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/model_init/mlp_layout.h"
#include "common/model_init/portable_random.h"
#include "common/optimizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "worker/model/blas.h"

namespace gradsync {
namespace {

using ::testing::HasSubstr;

MATCHER_P(StatusIs, code, "") { return arg.code() == code; }

class MlpTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(SetBlasThreads(1).ok()); }
};

// A reproducible batch: inputs in [-1, 1), labels in [0, classes).
struct TestBatch {
  std::vector<float> x;
  std::vector<int32_t> y;
};
TestBatch MakeBatch(size_t batch, size_t features, size_t classes,
                    uint64_t seed) {
  SplitMix64 rng(seed);
  TestBatch b;
  for (size_t i = 0; i < batch * features; ++i) {
    b.x.push_back(2.0f * rng.NextFloat01() - 1.0f);
  }
  for (size_t i = 0; i < batch; ++i) {
    b.y.push_back(static_cast<int32_t>(rng.NextBelow(classes)));
  }
  return b;
}

// The loss of the network in double precision, written independently of
// Mlp: forward with plain loops.
double ReferenceLoss(const MlpLayout& layout, const std::vector<double>& p,
                     const TestBatch& b) {
  const size_t batch = b.y.size();
  double total = 0;
  for (size_t i = 0; i < batch; ++i) {
    std::vector<double> a(b.x.begin() + i * layout.input_size(),
                          b.x.begin() + (i + 1) * layout.input_size());
    for (size_t l = 0; l < layout.num_layers(); ++l) {
      const LayerSlice& s = layout.layer(l);
      std::vector<double> z(s.out);
      for (size_t o = 0; o < s.out; ++o) {
        double acc = p[s.bias_offset + o];
        for (size_t k = 0; k < s.in; ++k) {
          acc += p[s.weight_offset + o * s.in + k] * a[k];
        }
        z[o] = (l + 1 < layout.num_layers()) ? std::max(acc, 0.0) : acc;
      }
      a = std::move(z);
    }
    const double mx = *std::max_element(a.begin(), a.end());
    double sum = 0;
    for (double v : a) sum += std::exp(v - mx);
    total += mx + std::log(sum) - a[b.y[i]];
  }
  return total / batch;
}

TEST(MlpLayoutTest, Offsets) {
  absl::StatusOr<MlpLayout> layout = MlpLayout::Create({3, 4, 2});
  ASSERT_TRUE(layout.ok()) << layout.status();
  ASSERT_EQ(layout->num_layers(), 2u);
  EXPECT_EQ(layout->layer(0).weight_offset, 0u);
  EXPECT_EQ(layout->layer(0).bias_offset, 12u);
  EXPECT_EQ(layout->layer(1).weight_offset, 16u);
  EXPECT_EQ(layout->layer(1).bias_offset, 24u);
  EXPECT_EQ(layout->num_parameters(), 26u);
  absl::StatusOr<MlpLayout> big = MlpLayout::Create({784, 256, 256, 10});
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->num_parameters(),
            784u * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10);
  // A billion-parameter layout is only arithmetic.
  absl::StatusOr<MlpLayout> huge = MlpLayout::Create({32768, 32768, 10});
  ASSERT_TRUE(huge.ok());
  EXPECT_EQ(huge->num_parameters(),
            size_t{32768} * 32768 + 32768 + size_t{32768} * 10 + 10);
}

TEST(MlpLayoutTest, Create_BadSizes_ReturnsInvalidArgument) {
  EXPECT_THAT(MlpLayout::Create({5}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(MlpLayout::Create({3, 0, 2}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(MlpLayout::Create({size_t{INT_MAX} + 1, 2}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  const size_t m = INT_MAX;
  absl::StatusOr<MlpLayout> overflow = MlpLayout::Create({m, m, m, m, m, m});
  EXPECT_THAT(overflow.status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(overflow.status().message(), HasSubstr("size_t"));
}

TEST_F(MlpTest, Init_DeterministicBoundedAndSliceable) {
  const std::vector<size_t> sizes = {20, 16, 8, 5};
  absl::StatusOr<Mlp> a = Mlp::Create(sizes, 7);
  absl::StatusOr<Mlp> b = Mlp::Create(sizes, 7);
  absl::StatusOr<Mlp> c = Mlp::Create(sizes, 8);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  const auto pa = a->params(), pb = b->params(), pc = c->params();
  EXPECT_TRUE(std::equal(pa.begin(), pa.end(), pb.begin()));
  EXPECT_FALSE(std::equal(pa.begin(), pa.end(), pc.begin()));
  for (size_t l = 0; l < a->layout().num_layers(); ++l) {
    const LayerSlice& s = a->layout().layer(l);
    const float bound = 1.0f / std::sqrt(static_cast<float>(s.in));
    for (size_t i = s.begin(); i < s.end(); ++i) {
      ASSERT_LE(std::fabs(pa[i]), bound * 1.0001f) << "at index " << i;
    }
  }
  for (float g : a->grads()) ASSERT_EQ(g, 0.0f);
  // A PS shard can generate any slice, across layer boundaries, alone.
  const size_t begin = 300, end = 470;
  std::vector<float> slice(end - begin);
  ASSERT_TRUE(
      InitializeParameters(a->layout(), 7, begin, absl::MakeSpan(slice)).ok());
  for (size_t i = begin; i < end; ++i) {
    ASSERT_EQ(slice[i - begin], pa[i]) << "at index " << i;
  }
  std::vector<float> past(10);
  EXPECT_THAT(InitializeParameters(a->layout(), 7, a->num_parameters() - 5,
                                   absl::MakeSpan(past)),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(MlpTest, Init_PinnedValues) {
  // Pins initial values of seed 1 so that any change to the generator or
  // the layout (which would break bitwise agreement between ranks running
  // different builds) fails here.
  absl::StatusOr<Mlp> mlp = Mlp::Create({4, 3, 2}, 1);
  ASSERT_TRUE(mlp.ok());
  EXPECT_EQ(mlp->params()[mlp->layout().layer(0).weight_offset],
            -0x1.65fc54p-2f);
  EXPECT_EQ(mlp->params()[mlp->layout().layer(0).bias_offset], 0x1.e4f638p-2f);
  EXPECT_EQ(mlp->params()[mlp->layout().layer(1).weight_offset],
            -0x1.11935p-1f);
}

TEST_F(MlpTest, Gradient_MatchesFiniteDifferencesInDouble) {
  const std::vector<size_t> sizes = {5, 7, 6, 3};
  absl::StatusOr<Mlp> mlp = Mlp::Create(sizes, 3);
  ASSERT_TRUE(mlp.ok());
  const TestBatch b = MakeBatch(4, 5, 3, 99);
  absl::StatusOr<BatchMetrics> m = mlp->ForwardBackward(b.x, b.y);
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<double> p(mlp->params().begin(), mlp->params().end());
  const double loss = ReferenceLoss(mlp->layout(), p, b);
  EXPECT_NEAR(m->loss, loss, 1e-5);
  const double h = 1e-6;
  for (size_t i = 0; i < p.size(); ++i) {
    const double saved = p[i];
    p[i] = saved + h;
    const double up = ReferenceLoss(mlp->layout(), p, b);
    p[i] = saved - h;
    const double down = ReferenceLoss(mlp->layout(), p, b);
    p[i] = saved;
    const double numeric = (up - down) / (2 * h);
    const double analytic = mlp->grads()[i];
    EXPECT_NEAR(analytic, numeric, 1e-5 + 1e-3 * std::fabs(numeric))
        << "parameter " << i;
  }
}

TEST_F(MlpTest, Callback_ReportsLayersLastFirstTilingTheBuffer) {
  absl::StatusOr<Mlp> mlp = Mlp::Create({10, 8, 6, 4}, 5);
  ASSERT_TRUE(mlp.ok());
  const TestBatch b = MakeBatch(9, 10, 4, 1);
  std::vector<std::pair<size_t, size_t>> ranges;
  std::vector<std::vector<float>> snapshots;
  ForwardBackwardOptions opts;
  opts.on_grad_ready = [&](size_t begin, size_t end) {
    ranges.emplace_back(begin, end);
    snapshots.emplace_back(mlp->grads().begin() + begin,
                           mlp->grads().begin() + end);
  };
  ASSERT_TRUE(mlp->ForwardBackward(b.x, b.y, opts).ok());
  ASSERT_EQ(ranges.size(), 3u);
  size_t expected_end = mlp->num_parameters();
  for (size_t k = 0; k < ranges.size(); ++k) {
    const LayerSlice& s = mlp->layout().layer(2 - k);
    EXPECT_EQ(ranges[k].first, s.begin());
    EXPECT_EQ(ranges[k].second, expected_end) << "range " << k;
    expected_end = ranges[k].first;
    // The range was final when reported.
    for (size_t i = ranges[k].first; i < ranges[k].second; ++i) {
      ASSERT_EQ(snapshots[k][i - ranges[k].first], mlp->grads()[i]);
    }
  }
  EXPECT_EQ(expected_end, 0u);
}

TEST_F(MlpTest, Accumulate_SumsMicroBatches) {
  absl::StatusOr<Mlp> mlp = Mlp::Create({6, 5, 3}, 2);
  ASSERT_TRUE(mlp.ok());
  const TestBatch a = MakeBatch(4, 6, 3, 10), c = MakeBatch(6, 6, 3, 11);
  ASSERT_TRUE(mlp->ForwardBackward(a.x, a.y).ok());
  std::vector<float> ga(mlp->grads().begin(), mlp->grads().end());
  ASSERT_TRUE(mlp->ForwardBackward(c.x, c.y).ok());
  std::vector<float> gc(mlp->grads().begin(), mlp->grads().end());
  ASSERT_TRUE(mlp->ForwardBackward(a.x, a.y).ok());
  ForwardBackwardOptions acc;
  acc.mode = GradMode::kAccumulate;
  ASSERT_TRUE(mlp->ForwardBackward(c.x, c.y, acc).ok());
  for (size_t i = 0; i < ga.size(); ++i) {
    EXPECT_NEAR(mlp->grads()[i], ga[i] + gc[i], 1e-6) << "at index " << i;
  }
}

TEST_F(MlpTest, MicroBatches_WithGlobalNormalizer_EqualWholeBatch) {
  absl::StatusOr<Mlp> mlp = Mlp::Create({6, 5, 3}, 2);
  ASSERT_TRUE(mlp.ok());
  const TestBatch whole = MakeBatch(10, 6, 3, 21);
  ASSERT_TRUE(mlp->ForwardBackward(whole.x, whole.y).ok());
  const std::vector<float> want(mlp->grads().begin(), mlp->grads().end());
  ForwardBackwardOptions opts;
  opts.loss_normalizer = 10;
  for (size_t first : {0, 4}) {  // micro-batches of 4 and 6
    const size_t n = first == 0 ? 4 : 6;
    const std::vector<float> x(whole.x.begin() + first * 6,
                               whole.x.begin() + (first + n) * 6);
    const std::vector<int32_t> y(whole.y.begin() + first,
                                 whole.y.begin() + first + n);
    opts.mode = first == 0 ? GradMode::kOverwrite : GradMode::kAccumulate;
    ASSERT_TRUE(mlp->ForwardBackward(x, y, opts).ok());
  }
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(mlp->grads()[i], want[i], 1e-6) << "at index " << i;
  }
}

TEST_F(MlpTest, LossNormalizer_ScalesGradientExactly) {
  absl::StatusOr<Mlp> mlp = Mlp::Create({6, 5, 3}, 2);
  ASSERT_TRUE(mlp.ok());
  const TestBatch b = MakeBatch(5, 6, 3, 4);
  ASSERT_TRUE(mlp->ForwardBackward(b.x, b.y).ok());
  std::vector<float> mean(mlp->grads().begin(), mlp->grads().end());
  ForwardBackwardOptions opts;
  opts.loss_normalizer = 10;  // twice the batch: exactly half, bit for bit
  ASSERT_TRUE(mlp->ForwardBackward(b.x, b.y, opts).ok());
  for (size_t i = 0; i < mean.size(); ++i) {
    ASSERT_EQ(mlp->grads()[i], mean[i] / 2) << "at index " << i;
  }
}

TEST_F(MlpTest, Deterministic_SameInputsSameBits) {
  const TestBatch b = MakeBatch(16, 12, 4, 8);
  std::vector<float> first;
  for (int run = 0; run < 2; ++run) {
    absl::StatusOr<Mlp> mlp = Mlp::Create({12, 9, 4}, 6);
    ASSERT_TRUE(mlp.ok());
    ASSERT_TRUE(mlp->ForwardBackward(b.x, b.y).ok());
    std::vector<float> g(mlp->grads().begin(), mlp->grads().end());
    if (run == 0) {
      first = g;
    } else {
      EXPECT_EQ(first, g);
    }
  }
}

TEST_F(MlpTest, EmptyBatch_ZeroesGradientsAndStillReportsRanges) {
  absl::StatusOr<Mlp> mlp = Mlp::Create({4, 3, 2}, 1);
  ASSERT_TRUE(mlp.ok());
  const TestBatch b = MakeBatch(3, 4, 2, 1);
  ASSERT_TRUE(mlp->ForwardBackward(b.x, b.y).ok());
  size_t covered = 0;
  ForwardBackwardOptions opts;
  opts.on_grad_ready = [&](size_t begin, size_t end) {
    covered += end - begin;
  };
  absl::StatusOr<BatchMetrics> m = mlp->ForwardBackward({}, {}, opts);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->count, 0u);
  EXPECT_EQ(covered, mlp->num_parameters());
  for (float g : mlp->grads()) ASSERT_EQ(g, 0.0f);
}

TEST_F(MlpTest, BadInput_ReturnsInvalidArgumentAndKeepsGradients) {
  absl::StatusOr<Mlp> mlp = Mlp::Create({4, 3, 2}, 1);
  ASSERT_TRUE(mlp.ok());
  TestBatch b = MakeBatch(3, 4, 2, 1);
  ASSERT_TRUE(mlp->ForwardBackward(b.x, b.y).ok());
  const std::vector<float> before(mlp->grads().begin(), mlp->grads().end());
  std::vector<float> short_x(b.x.begin(), b.x.end() - 1);
  EXPECT_THAT(mlp->ForwardBackward(short_x, b.y).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  b.y[1] = 2;
  absl::StatusOr<BatchMetrics> bad = mlp->ForwardBackward(b.x, b.y);
  EXPECT_THAT(bad.status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(bad.status().message(), HasSubstr("label 2 of example 1"));
  b.y[1] = -1;
  EXPECT_THAT(mlp->ForwardBackward(b.x, b.y).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(std::equal(before.begin(), before.end(), mlp->grads().begin()));
  EXPECT_THAT(mlp->Evaluate(b.x, {0, 1, 0}, 0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  std::vector<int32_t> out(2);
  EXPECT_THAT(mlp->Predict(b.x, absl::MakeSpan(out)),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Mlp::Create({4}, 1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(SetBlasThreads(0), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(MlpTest, SgdStep_ReducesLossOnFixedBatch) {
  absl::StatusOr<Mlp> mlp = Mlp::Create({16, 32, 4}, 11);
  ASSERT_TRUE(mlp.ok());
  const TestBatch b = MakeBatch(32, 16, 4, 12);
  OptimizerConfig config;
  config.lr = 0.1;
  absl::StatusOr<Optimizer> sgd =
      Optimizer::CreateByName("sgd", config, mlp->num_parameters());
  ASSERT_TRUE(sgd.ok());
  absl::StatusOr<BatchMetrics> before = mlp->ForwardBackward(b.x, b.y);
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(sgd->Step(mlp->params(), mlp->grads()).ok());
  absl::StatusOr<BatchMetrics> after = mlp->Evaluate(b.x, b.y, 7);
  ASSERT_TRUE(after.ok());
  EXPECT_LT(after->loss, before->loss);
}

TEST_F(MlpTest, EvaluateAndPredict_Agree) {
  absl::StatusOr<Mlp> mlp = Mlp::Create({8, 6, 5}, 4);
  ASSERT_TRUE(mlp.ok());
  const TestBatch b = MakeBatch(50, 8, 5, 3);
  absl::StatusOr<BatchMetrics> whole = mlp->Evaluate(b.x, b.y, 50);
  absl::StatusOr<BatchMetrics> chunked = mlp->Evaluate(b.x, b.y, 7);
  ASSERT_TRUE(whole.ok() && chunked.ok());
  EXPECT_EQ(whole->correct, chunked->correct);
  EXPECT_NEAR(whole->loss, chunked->loss, 1e-6);
  std::vector<int32_t> pred(50);
  ASSERT_TRUE(mlp->Predict(b.x, absl::MakeSpan(pred)).ok());
  size_t correct = 0;
  for (size_t i = 0; i < pred.size(); ++i) correct += pred[i] == b.y[i];
  EXPECT_EQ(correct, whole->correct);
  EXPECT_EQ(whole->count, 50u);
}

}  // namespace
}  // namespace gradsync
