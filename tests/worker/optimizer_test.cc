#include "common/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

using ::testing::HasSubstr;

MATCHER_P(StatusIs, code, "") { return arg.code() == code; }

// Deterministic test data: small dyadic values of both signs.
std::vector<float> Pattern(size_t n, uint32_t salt) {
  std::vector<float> v(n);
  uint32_t x = 2463534242u ^ salt;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    v[i] = static_cast<float>(static_cast<int>(x % 2001) - 1000) / 512.0f;
  }
  return v;
}

OptimizerConfig Config(OptimizerKind kind) {
  OptimizerConfig c;
  c.kind = kind;
  c.lr = 0.5;
  return c;
}

void ExpectBitwiseEqual(const std::vector<float>& want,
                        const std::vector<float>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(want[i], got[i]) << "at index " << i;
  }
}

TEST(OptimizerTest, ParseNames) {
  EXPECT_EQ(*ParseOptimizerKind("sgd"), OptimizerKind::kSgd);
  EXPECT_EQ(*ParseOptimizerKind("Momentum"), OptimizerKind::kMomentum);
  EXPECT_EQ(*ParseOptimizerKind("adam"), OptimizerKind::kAdam);
  EXPECT_EQ(*ParseOptimizerKind("adamw"), OptimizerKind::kAdamW);
  absl::StatusOr<OptimizerKind> bad = ParseOptimizerKind("lamb");
  EXPECT_THAT(bad.status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(bad.status().message(), HasSubstr("lamb"));
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

class OptimizerKindTest : public ::testing::TestWithParam<OptimizerKind> {
 protected:
  OptimizerConfig MakeConfig() const {
    OptimizerConfig c;
    c.kind = GetParam();
    c.lr = 0.05;
    c.weight_decay = 0.01;
    c.momentum = 0.9;
    c.nesterov = GetParam() == OptimizerKind::kMomentum;
    return c;
  }
};

TEST_P(OptimizerKindTest, TwoHalvesEqualWhole) {
  const size_t n = 1001, k = 500;
  const OptimizerConfig c = MakeConfig();
  absl::StatusOr<Optimizer> whole = Optimizer::Create(c, n);
  absl::StatusOr<Optimizer> lo = Optimizer::Create(c, k);
  absl::StatusOr<Optimizer> hi = Optimizer::Create(c, n - k);
  ASSERT_TRUE(whole.ok() && lo.ok() && hi.ok());
  std::vector<float> p = Pattern(n, 7), q = p;
  for (int step = 0; step < 4; ++step) {
    const std::vector<float> g = Pattern(n, 50 + step);
    ASSERT_TRUE(whole->Step(absl::MakeSpan(p), g).ok());
    ASSERT_TRUE(lo->Step(absl::MakeSpan(q).subspan(0, k),
                         absl::MakeConstSpan(g).subspan(0, k))
                    .ok());
    ASSERT_TRUE(hi->Step(absl::MakeSpan(q).subspan(k),
                         absl::MakeConstSpan(g).subspan(k))
                    .ok());
  }
  ExpectBitwiseEqual(p, q);
  const OptimizerState parts[] = {lo->ExportState(), hi->ExportState()};
  absl::StatusOr<OptimizerState> joined = ConcatOptimizerStates(parts);
  ASSERT_TRUE(joined.ok()) << joined.status();
  const OptimizerState all = whole->ExportState();
  EXPECT_EQ(joined->step, all.step);
  ASSERT_EQ(joined->buffers.size(), all.buffers.size());
  for (size_t b = 0; b < all.buffers.size(); ++b) {
    ExpectBitwiseEqual(all.buffers[b], joined->buffers[b]);
  }
}

// A pool cuts the update into element ranges on several threads; the
// parameters and state must come out bitwise as without one.
TEST_P(OptimizerKindTest, PoolStepEqualsSerialStep) {
  const size_t n = 3 * Optimizer::kMinPartElements + 17;
  const OptimizerConfig c = MakeConfig();
  ComputePool pool(2);
  absl::StatusOr<Optimizer> serial = Optimizer::Create(c, n);
  absl::StatusOr<Optimizer> pooled = Optimizer::Create(c, n);
  ASSERT_TRUE(serial.ok() && pooled.ok());
  std::vector<float> p = Pattern(n, 9), q = p;
  for (int step = 0; step < 3; ++step) {
    const std::vector<float> g = Pattern(n, 70 + step);
    ASSERT_TRUE(serial->Step(absl::MakeSpan(p), g).ok());
    ASSERT_TRUE(pooled->Step(absl::MakeSpan(q), g, &pool).ok());
  }
  ExpectBitwiseEqual(p, q);
  EXPECT_EQ(pooled->step_count(), 3u);
  const OptimizerState a = serial->ExportState(), b = pooled->ExportState();
  ASSERT_EQ(a.buffers.size(), b.buffers.size());
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    ExpectBitwiseEqual(a.buffers[i], b.buffers[i]);
  }
}

// A PS shard applies its step in blocks as it sums them (StepRange per
// block, from several threads, in no fixed order, then EndStep): bitwise
// the same parameters and state as one Step.
TEST_P(OptimizerKindTest, StepRangeInShuffledPiecesEqualsStep) {
  const size_t n = 10007;
  const OptimizerConfig c = MakeConfig();
  absl::StatusOr<Optimizer> whole = Optimizer::Create(c, n);
  absl::StatusOr<Optimizer> pieces = Optimizer::Create(c, n);
  ASSERT_TRUE(whole.ok() && pieces.ok());
  std::vector<float> p = Pattern(n, 3), q = p;
  std::mt19937 rng(17);
  for (int step = 0; step < 4; ++step) {
    const std::vector<float> g = Pattern(n, 90 + step);
    ASSERT_TRUE(whole->Step(absl::MakeSpan(p), g).ok());
    std::vector<std::pair<size_t, size_t>> ranges;  // [begin, end)
    std::uniform_int_distribution<size_t> len(1, 3000);
    for (size_t b = 0; b < n;) {
      const size_t e = std::min(n, b + len(rng));
      ranges.emplace_back(b, e);
      b = e;
    }
    std::shuffle(ranges.begin(), ranges.end(), rng);
    for (const auto& [b, e] : ranges) {
      // The gradient block lives elsewhere, as a shard's sums do.
      const std::vector<float> block(g.begin() + b, g.begin() + e);
      ASSERT_TRUE(
          pieces->StepRange(b, absl::MakeSpan(q).subspan(b, e - b), block)
              .ok());
    }
    EXPECT_EQ(pieces->step_count(), static_cast<uint64_t>(step));
    pieces->EndStep();
  }
  ExpectBitwiseEqual(p, q);
  EXPECT_EQ(pieces->step_count(), 4u);
  const OptimizerState a = whole->ExportState(), b = pieces->ExportState();
  ASSERT_EQ(a.buffers.size(), b.buffers.size());
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    ExpectBitwiseEqual(a.buffers[i], b.buffers[i]);
  }
}

TEST_P(OptimizerKindTest, ExportImportContinuesIdentically) {
  const size_t n = 300;
  const OptimizerConfig c = MakeConfig();
  absl::StatusOr<Optimizer> a = Optimizer::Create(c, n);
  ASSERT_TRUE(a.ok());
  std::vector<float> p = Pattern(n, 3);
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(a->Step(absl::MakeSpan(p), Pattern(n, 10 + step)).ok());
  }
  // Whole-vector import (a PS -> ring switch) ...
  absl::StatusOr<Optimizer> b = Optimizer::Create(c, n);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->ImportState(a->ExportState()).ok());
  EXPECT_EQ(b->step_count(), 3u);
  // ... and shard imports (a ring -> PS switch with shards [0,100),
  // [100,300)).
  absl::StatusOr<OptimizerState> s0 =
      SliceOptimizerState(a->ExportState(), 0, 100);
  absl::StatusOr<OptimizerState> s1 =
      SliceOptimizerState(a->ExportState(), 100, n);
  ASSERT_TRUE(s0.ok() && s1.ok());
  absl::StatusOr<Optimizer> shard0 = Optimizer::Create(c, 100);
  absl::StatusOr<Optimizer> shard1 = Optimizer::Create(c, n - 100);
  ASSERT_TRUE(shard0.ok() && shard1.ok());
  ASSERT_TRUE(shard0->ImportState(*s0).ok());
  ASSERT_TRUE(shard1->ImportState(*s1).ok());

  std::vector<float> pb = p, ps = p;
  for (int step = 3; step < 6; ++step) {
    const std::vector<float> g = Pattern(n, 10 + step);
    ASSERT_TRUE(a->Step(absl::MakeSpan(p), g).ok());
    ASSERT_TRUE(b->Step(absl::MakeSpan(pb), g).ok());
    ASSERT_TRUE(shard0
                    ->Step(absl::MakeSpan(ps).subspan(0, 100),
                           absl::MakeConstSpan(g).subspan(0, 100))
                    .ok());
    ASSERT_TRUE(shard1
                    ->Step(absl::MakeSpan(ps).subspan(100),
                           absl::MakeConstSpan(g).subspan(100))
                    .ok());
  }
  ExpectBitwiseEqual(p, pb);
  ExpectBitwiseEqual(p, ps);
}

INSTANTIATE_TEST_SUITE_P(AllKinds, OptimizerKindTest,
                         ::testing::Values(OptimizerKind::kSgd,
                                           OptimizerKind::kMomentum,
                                           OptimizerKind::kAdam,
                                           OptimizerKind::kAdamW),
                         [](const auto& info) {
                           return std::string(OptimizerKindName(info.param));
                         });

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
