#include "common/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/optimizer_test_util.h"

namespace gradsync {
namespace {

using testing::Config;
using testing::ExpectBitwiseEqual;
using ::testing::HasSubstr;
using testing::Pattern;
using testing::StatusIs;

TEST(OptimizerTest, ParseNames) {
  EXPECT_EQ(*ParseOptimizerKind("sgd"), OptimizerKind::kSgd);
  EXPECT_EQ(*ParseOptimizerKind("Momentum"), OptimizerKind::kMomentum);
  EXPECT_EQ(*ParseOptimizerKind("adam"), OptimizerKind::kAdam);
  EXPECT_EQ(*ParseOptimizerKind("adamw"), OptimizerKind::kAdamW);
  absl::StatusOr<OptimizerKind> bad = ParseOptimizerKind("lamb");
  EXPECT_THAT(bad.status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(bad.status().message(), HasSubstr("lamb"));
}

TEST(OptimizerTest, Sum_ParametersBecomeTheGradientWithNoState) {
  // The torch PS path's sum-only flavour: a shard's "parameters" are the
  // step's averaged gradient, handed back as it is.
  EXPECT_EQ(*ParseOptimizerKind("sum"), OptimizerKind::kSum);
  EXPECT_EQ(NumStateBuffers(OptimizerKind::kSum), 0u);
  OptimizerConfig c = Config(OptimizerKind::kSum);
  absl::StatusOr<Optimizer> opt = Optimizer::CreateByName("sum", c, 3);
  ASSERT_TRUE(opt.ok()) << opt.status();
  std::vector<float> p = {1.0f, -2.0f, 0.5f};
  ASSERT_TRUE(opt->Step(absl::MakeSpan(p), {0.25f, 7.0f, -3.5f}).ok());
  ExpectBitwiseEqual({0.25f, 7.0f, -3.5f}, p);
  ASSERT_TRUE(opt->Step(absl::MakeSpan(p), {1.0f, 2.0f, 3.0f}).ok());
  ExpectBitwiseEqual({1.0f, 2.0f, 3.0f}, p);
  EXPECT_EQ(opt->step_count(), 2u);
  EXPECT_TRUE(opt->ExportState().buffers.empty());
}

TEST(OptimizerTest, Sgd_HandComputed) {
  OptimizerConfig c = Config(OptimizerKind::kSgd);
  absl::StatusOr<Optimizer> opt = Optimizer::CreateByName("sgd", c, 3);
  ASSERT_TRUE(opt.ok()) << opt.status();
  std::vector<float> p = {1.0f, -2.0f, 0.5f};
  const std::vector<float> g = {0.5f, 1.0f, -2.0f};
  ASSERT_TRUE(opt->Step(absl::MakeSpan(p), g).ok());
  ExpectBitwiseEqual({0.75f, -2.5f, 1.5f}, p);
  EXPECT_EQ(opt->step_count(), 1u);
}

TEST(OptimizerTest, SgdWeightDecay_HandComputed) {
  OptimizerConfig c = Config(OptimizerKind::kSgd);
  c.weight_decay = 0.25;
  absl::StatusOr<Optimizer> opt = Optimizer::Create(c, 3);
  ASSERT_TRUE(opt.ok());
  std::vector<float> p = {1.0f, -2.0f, 0.5f};
  ASSERT_TRUE(opt->Step(absl::MakeSpan(p), {0.5f, 1.0f, -2.0f}).ok());
  // g' = g + 0.25 p = {0.75, 0.5, -1.875}; p -= 0.5 g'.
  ExpectBitwiseEqual({0.625f, -2.25f, 1.4375f}, p);
}

TEST(OptimizerTest, Momentum_HandComputed) {
  OptimizerConfig c = Config(OptimizerKind::kMomentum);
  c.momentum = 0.5;
  absl::StatusOr<Optimizer> opt = Optimizer::Create(c, 1);
  ASSERT_TRUE(opt.ok());
  std::vector<float> p = {1.0f};
  const std::vector<float> g = {1.0f};
  // buf: 1, 1.5, 1.75; p: 1 - 0.5, then - 0.75, then - 0.875.
  const float want[] = {0.5f, -0.25f, -1.125f};
  for (float w : want) {
    ASSERT_TRUE(opt->Step(absl::MakeSpan(p), g).ok());
    EXPECT_EQ(p[0], w);
  }
  EXPECT_EQ(opt->state_buffer(0)[0], 1.75f);
}

TEST(OptimizerTest, Nesterov_HandComputed) {
  OptimizerConfig c = Config(OptimizerKind::kMomentum);
  c.momentum = 0.5;
  c.nesterov = true;
  absl::StatusOr<Optimizer> opt = Optimizer::Create(c, 1);
  ASSERT_TRUE(opt.ok());
  std::vector<float> p = {1.0f};
  // buf 1, d = 1 + 0.5 = 1.5; buf 1.5, d = 1 + 0.75 = 1.75.
  ASSERT_TRUE(opt->Step(absl::MakeSpan(p), {1.0f}).ok());
  EXPECT_EQ(p[0], 0.25f);
  ASSERT_TRUE(opt->Step(absl::MakeSpan(p), {1.0f}).ok());
  EXPECT_EQ(p[0], -0.625f);
}

TEST(OptimizerTest, MomentumDampening_FirstStepCopiesGradient) {
  OptimizerConfig c = Config(OptimizerKind::kMomentum);
  c.momentum = 0.5;
  c.dampening = 0.5;
  absl::StatusOr<Optimizer> opt = Optimizer::Create(c, 1);
  ASSERT_TRUE(opt.ok());
  std::vector<float> p = {1.0f};
  // As PyTorch: buf = g on the first step (no dampening), then
  // buf = 0.5 * 1 + 0.5 * 1 = 1.
  ASSERT_TRUE(opt->Step(absl::MakeSpan(p), {1.0f}).ok());
  EXPECT_EQ(p[0], 0.5f);
  ASSERT_TRUE(opt->Step(absl::MakeSpan(p), {1.0f}).ok());
  EXPECT_EQ(p[0], 0.0f);
}

// Adam written out from PyTorch's single-tensor code, in fp32 with double
// scalars.
void ReferenceAdam(const OptimizerConfig& c, uint64_t t, std::vector<float>& p,
                   const std::vector<float>& g, std::vector<float>& m,
                   std::vector<float>& v) {
  double b1t = 1.0, b2t = 1.0;
  for (uint64_t k = 0; k < t; ++k) {
    b1t *= c.beta1;
    b2t *= c.beta2;
  }
  const float step_size = static_cast<float>(c.lr / (1.0 - b1t));
  const float bc2_sqrt = static_cast<float>(std::sqrt(1.0 - b2t));
  const float w = static_cast<float>(1.0 - c.beta1);
  for (size_t i = 0; i < p.size(); ++i) {
    float grad = g[i];
    if (c.kind == OptimizerKind::kAdamW) {
      p[i] *= static_cast<float>(1.0 - c.lr * c.weight_decay);
    } else {
      grad += static_cast<float>(c.weight_decay) * p[i];
    }
    m[i] = m[i] + w * (grad - m[i]);
    v[i] = static_cast<float>(c.beta2) * v[i] +
           static_cast<float>(1.0 - c.beta2) * grad * grad;
    const float denom = std::sqrt(v[i]) / bc2_sqrt + static_cast<float>(c.eps);
    p[i] -= step_size * (m[i] / denom);
  }
}

TEST(OptimizerTest, Adam_MatchesReferenceBitwise) {
  for (const auto& [kind, wd] : {std::pair{OptimizerKind::kAdam, 0.0},
                                 std::pair{OptimizerKind::kAdam, 0.01},
                                 std::pair{OptimizerKind::kAdamW, 0.01}}) {
    OptimizerConfig c;
    c.kind = kind;
    c.lr = 1e-3;
    c.weight_decay = wd;
    const size_t n = 257;
    absl::StatusOr<Optimizer> opt = Optimizer::Create(c, n);
    ASSERT_TRUE(opt.ok());
    std::vector<float> p = Pattern(n, 1), ref = p;
    std::vector<float> m(n, 0.0f), v(n, 0.0f);
    for (uint64_t t = 1; t <= 5; ++t) {
      const std::vector<float> g = Pattern(n, 100 + t);
      ASSERT_TRUE(opt->Step(absl::MakeSpan(p), g).ok());
      ReferenceAdam(c, t, ref, g, m, v);
      ExpectBitwiseEqual(ref, p);
    }
    const OptimizerState s = opt->ExportState();
    EXPECT_EQ(s.step, 5u);
    ExpectBitwiseEqual(m, s.buffers[0]);
    ExpectBitwiseEqual(v, s.buffers[1]);
  }
}

// SGD and momentum written out as plain scalar loops, element by element
// (what optimizer.cc's vectorised loops must reproduce bitwise).
void ReferenceSgdOrMomentum(const OptimizerConfig& c, bool first,
                            std::vector<float>& p, const std::vector<float>& g,
                            std::vector<float>& buf) {
  const float lr = static_cast<float>(c.lr);
  const float wd = static_cast<float>(c.weight_decay);
  const float mu = static_cast<float>(c.momentum);
  const float keep = static_cast<float>(1.0 - c.dampening);
  for (size_t i = 0; i < p.size(); ++i) {
    float d = g[i];
    if (wd != 0.0f) d = d + wd * p[i];
    if (c.kind == OptimizerKind::kMomentum) {
      buf[i] = first ? d : mu * buf[i] + keep * d;
      d = c.nesterov ? d + mu * buf[i] : buf[i];
    }
    p[i] = p[i] + -lr * d;
  }
}

// Every flag combination of the vectorised loops, at a length with a
// vector body and a scalar tail, over several steps (the first step of
// momentum takes its own loop).
TEST(OptimizerTest, SgdAndMomentum_EveryVariantMatchesScalarReferenceBitwise) {
  const size_t n = 1031;
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kMomentum}) {
    for (double wd : {0.0, 0.01}) {
      for (bool nesterov : {false, true}) {
        if (kind == OptimizerKind::kSgd && nesterov) continue;
        OptimizerConfig c = Config(kind);
        c.lr = 0.1;
        c.weight_decay = wd;
        c.momentum = 0.9;
        c.nesterov = nesterov;
        c.dampening = nesterov ? 0.0 : 0.25;
        absl::StatusOr<Optimizer> opt = Optimizer::Create(c, n);
        ASSERT_TRUE(opt.ok()) << opt.status();
        std::vector<float> p = Pattern(n, 3), ref = p, buf(n, 0.0f);
        for (int t = 0; t < 4; ++t) {
          const std::vector<float> g = Pattern(n, 30 + t);
          ASSERT_TRUE(opt->Step(absl::MakeSpan(p), g).ok());
          ReferenceSgdOrMomentum(c, t == 0, ref, g, buf);
          SCOPED_TRACE(::testing::Message()
                       << OptimizerKindName(kind) << " wd " << wd
                       << " nesterov " << nesterov << " step " << t);
          ExpectBitwiseEqual(ref, p);
        }
        if (kind == OptimizerKind::kMomentum) {
          ExpectBitwiseEqual(buf, opt->ExportState().buffers[0]);
        }
      }
    }
  }
}

TEST(OptimizerTest, Adam_FirstStepMovesByLearningRate) {
  // After bias correction the first step is lr * g / (|g| + eps).
  OptimizerConfig c;
  c.kind = OptimizerKind::kAdam;
  c.lr = 0.01;
  absl::StatusOr<Optimizer> opt = Optimizer::Create(c, 3);
  ASSERT_TRUE(opt.ok());
  std::vector<float> p = {0.0f, 0.0f, 0.0f};
  ASSERT_TRUE(opt->Step(absl::MakeSpan(p), {3.0f, -0.25f, 0.0f}).ok());
  EXPECT_NEAR(p[0], -0.01f, 1e-8);
  EXPECT_NEAR(p[1], 0.01f, 1e-8);
  EXPECT_EQ(p[2], 0.0f);
}

TEST(OptimizerTest, AdamStepScalars_HandComputed) {
  // Powers of two keep every value exact: beta1 = 1/2, beta2 = 3/4.
  OptimizerConfig c;
  c.kind = OptimizerKind::kAdamW;
  c.lr = 0.5;
  c.beta1 = 0.5;
  c.beta2 = 0.75;
  c.eps = 0.125;
  c.weight_decay = 0.25;
  const AdamStepScalars first = AdamStepScalarsAt(c, 1);
  EXPECT_EQ(first.neg_step_size, -1.0f);  // -lr / (1 - 1/2)
  EXPECT_EQ(first.bc2_sqrt, 0.5f);        // sqrt(1 - 3/4)
  EXPECT_EQ(first.w, 0.5f);
  EXPECT_EQ(first.b2, 0.75f);
  EXPECT_EQ(first.one_minus_b2, 0.25f);
  EXPECT_EQ(first.eps, 0.125f);
  EXPECT_EQ(first.wd, 0.25f);
  EXPECT_EQ(first.decay, 0.875f);  // 1 - lr * wd
  // Step 3: 1 - (1/2)^3 = 7/8 and 1 - (3/4)^3 = 37/64.
  const AdamStepScalars third = AdamStepScalarsAt(c, 3);
  EXPECT_EQ(third.neg_step_size, static_cast<float>(-0.5 / 0.875));
  EXPECT_EQ(third.bc2_sqrt, static_cast<float>(std::sqrt(37.0 / 64.0)));
}

TEST(OptimizerTest, FloatSpansOverlap) {
  float x[8] = {};
  EXPECT_TRUE(FloatSpansOverlap(x, 8, x, 8));
  EXPECT_TRUE(FloatSpansOverlap(x, 4, x + 3, 4));
  EXPECT_TRUE(FloatSpansOverlap(x + 3, 4, x, 4));
  EXPECT_TRUE(FloatSpansOverlap(x, 8, x + 2, 1));
  EXPECT_FALSE(FloatSpansOverlap(x, 4, x + 4, 4));  // adjacent
  EXPECT_FALSE(FloatSpansOverlap(x + 4, 4, x, 4));
  EXPECT_FALSE(FloatSpansOverlap(x, 0, x, 8));  // an empty span
  EXPECT_FALSE(FloatSpansOverlap(x, 8, x + 2, 0));
}

TEST(OptimizerTest, Create_BadHyperParameters_ReturnsInvalidArgument) {
  struct Case {
    const char* what;
    OptimizerConfig config;
  };
  std::vector<Case> cases;
  OptimizerConfig c;
  c.lr = -1;
  cases.push_back({"lr", c});
  c = {};
  c.lr = NAN;
  cases.push_back({"lr", c});
  c = {};
  c.weight_decay = -0.1;
  cases.push_back({"weight_decay", c});
  c = Config(OptimizerKind::kMomentum);
  c.momentum = 0;
  cases.push_back({"momentum", c});
  c = Config(OptimizerKind::kMomentum);
  c.momentum = 1.0;
  cases.push_back({"momentum", c});
  c = Config(OptimizerKind::kMomentum);
  c.nesterov = true;
  c.dampening = 0.1;
  cases.push_back({"dampening", c});
  c = Config(OptimizerKind::kSgd);
  c.nesterov = true;
  cases.push_back({"nesterov", c});
  c = Config(OptimizerKind::kAdam);
  c.beta1 = 1.0;
  cases.push_back({"beta1", c});
  c = Config(OptimizerKind::kAdam);
  c.beta2 = -0.5;
  cases.push_back({"beta2", c});
  c = Config(OptimizerKind::kAdam);
  c.eps = INFINITY;
  cases.push_back({"eps", c});
  for (const Case& k : cases) {
    absl::StatusOr<Optimizer> opt = Optimizer::Create(k.config, 4);
    EXPECT_THAT(opt.status(), StatusIs(absl::StatusCode::kInvalidArgument))
        << k.what;
    EXPECT_THAT(opt.status().message(), HasSubstr(k.what));
  }
}

TEST(OptimizerTest, Step_WrongSizesOrOverlap_ReturnsInvalidArgumentUnchanged) {
  absl::StatusOr<Optimizer> opt =
      Optimizer::Create(Config(OptimizerKind::kMomentum), 4);
  ASSERT_TRUE(opt.ok());
  std::vector<float> p = {1, 2, 3, 4};
  std::vector<float> g = {1, 1, 1};
  EXPECT_THAT(opt->Step(absl::MakeSpan(p), g),
              StatusIs(absl::StatusCode::kInvalidArgument));
  std::vector<float> buf = {1, 2, 3, 4, 5, 6};
  EXPECT_THAT(opt->Step(absl::MakeSpan(buf).subspan(0, 4),
                        absl::MakeConstSpan(buf).subspan(2, 4)),
              StatusIs(absl::StatusCode::kInvalidArgument));
  ExpectBitwiseEqual({1, 2, 3, 4}, p);
  EXPECT_EQ(opt->step_count(), 0u);
  EXPECT_THAT(opt->SetLearningRate(-1),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(opt->config().lr, 0.5);
}

TEST(OptimizerTest,
     StepRange_OutsideOrOverlapping_ReturnsInvalidArgumentUnchanged) {
  absl::StatusOr<Optimizer> opt =
      Optimizer::Create(Config(OptimizerKind::kMomentum), 4);
  ASSERT_TRUE(opt.ok());
  std::vector<float> p = {1, 2, 3, 4};
  const std::vector<float> g2 = {1, 1}, g3 = {1, 1, 1};
  // Past the end, sizes that differ, a begin beyond the elements.
  EXPECT_THAT(opt->StepRange(3, absl::MakeSpan(p).subspan(2, 2), g2),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(opt->StepRange(0, absl::MakeSpan(p).subspan(0, 2), g3),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(opt->StepRange(5, absl::Span<float>(), {}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  std::vector<float> buf = {1, 2, 3, 4};
  EXPECT_THAT(opt->StepRange(0, absl::MakeSpan(buf).subspan(0, 2),
                             absl::MakeConstSpan(buf).subspan(1, 2)),
              StatusIs(absl::StatusCode::kInvalidArgument));
  ExpectBitwiseEqual({1, 2, 3, 4}, p);
  ExpectBitwiseEqual({1, 2, 3, 4}, buf);
  const absl::Span<const float> momentum = opt->state_buffer(0);
  ExpectBitwiseEqual({0, 0, 0, 0}, {momentum.begin(), momentum.end()});
  EXPECT_EQ(opt->step_count(), 0u);
}

TEST(OptimizerTest, ImportState_Mismatch_ReturnsInvalidArgumentUnchanged) {
  absl::StatusOr<Optimizer> adam =
      Optimizer::Create(Config(OptimizerKind::kAdam), 4);
  absl::StatusOr<Optimizer> mom =
      Optimizer::Create(Config(OptimizerKind::kMomentum), 4);
  absl::StatusOr<Optimizer> small =
      Optimizer::Create(Config(OptimizerKind::kAdam), 3);
  ASSERT_TRUE(adam.ok() && mom.ok() && small.ok());
  EXPECT_THAT(adam->ImportState(mom->ExportState()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(adam->ImportState(small->ExportState()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  OptimizerState broken = adam->ExportState();
  broken.step = 9;
  broken.buffers[1].pop_back();
  EXPECT_THAT(adam->ImportState(broken),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(adam->step_count(), 0u);
  EXPECT_THAT(SliceOptimizerState(adam->ExportState(), 3, 5).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  const OptimizerState mixed[] = {adam->ExportState(), mom->ExportState()};
  EXPECT_THAT(ConcatOptimizerStates(mixed).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(ConcatOptimizerStates({}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(OptimizerTest, EmptySlice_IsValid) {
  absl::StatusOr<Optimizer> opt =
      Optimizer::Create(Config(OptimizerKind::kAdam), 0);
  ASSERT_TRUE(opt.ok());
  EXPECT_TRUE(opt->Step({}, {}).ok());
  EXPECT_EQ(opt->step_count(), 1u);
}

}  // namespace
}  // namespace gradsync
