// CudaMlp against the CPU Mlp: initial parameters, forward metrics,
// gradients, accumulation, evaluation, short training, bad input.
#include "worker/model/cuda/cuda_mlp.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/optimizer.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_test_util.h"
#include "worker/model/blas.h"
#include "worker/model/cuda/cuda_optimizer.h"
#include "worker/model/mlp.h"

namespace gradsync {
namespace {

using gpu_test::BitwiseEqual;
using gpu_test::ExpectNear;
using gpu_test::GpuTest;
using gpu_test::MakeBatch;
using gpu_test::ReluMarginInRoundings;
using gpu_test::StatusIs;
using gpu_test::TestBatch;

struct Shape {
  std::vector<size_t> sizes;
  size_t batch;
};

// Edge cases first: one layer, widths of 1, batch 1, sizes that are not
// multiples of 32 (the column-sum blocks, the warp), then realistic ones.
const std::vector<Shape>& Shapes() {
  static const auto* shapes = new std::vector<Shape>{
      {{1, 1}, 1},           {{1, 2}, 1},         {{3, 1, 2}, 1},
      {{1, 1, 1}, 7},        {{2, 3}, 1000},      {{33, 17, 5}, 33},
      {{5, 37, 65, 3}, 100}, {{40, 300, 7}, 129}, {{784, 128, 10}, 64}};
  return *shapes;
}

std::vector<float> HostParams(const CudaMlp& mlp) {
  std::vector<float> out(mlp.num_parameters());
  EXPECT_TRUE(mlp.CopyParamsToHost(0, absl::MakeSpan(out)).ok());
  return out;
}

std::vector<float> HostGrads(const CudaMlp& mlp) {
  std::vector<float> out(mlp.num_parameters());
  EXPECT_TRUE(mlp.CopyGradsToHost(0, absl::MakeSpan(out)).ok());
  return out;
}

class CudaMlpTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(SetBlasThreads(1).ok());
  }
};

TEST_F(CudaMlpTest, InitialParametersAreBitwiseTheCpuModels) {
  for (const Shape& shape : Shapes()) {
    for (uint64_t seed : {0ull, 1ull, 12345ull}) {
      absl::StatusOr<Mlp> cpu = Mlp::Create(shape.sizes, seed);
      absl::StatusOr<CudaMlp> gpu = CudaMlp::Create(shape.sizes, seed);
      ASSERT_TRUE(cpu.ok()) << cpu.status();
      ASSERT_TRUE(gpu.ok()) << gpu.status();
      EXPECT_TRUE(BitwiseEqual(HostParams(*gpu), cpu->params()))
          << "seed " << seed << ", " << shape.sizes.size() << " sizes";
      const std::vector<float> grads = HostGrads(*gpu);
      EXPECT_TRUE(BitwiseEqual(grads, std::vector<float>(grads.size(), 0.0f)));
    }
  }
}

TEST_F(CudaMlpTest, ForwardBackwardMatchesCpu) {
  uint64_t seed = 7;
  for (const Shape& shape : Shapes()) {
    SCOPED_TRACE(::testing::Message() << "sizes[0]=" << shape.sizes[0]
                                      << " layers=" << shape.sizes.size() - 1
                                      << " batch=" << shape.batch);
    absl::StatusOr<Mlp> cpu = Mlp::Create(shape.sizes, seed);
    absl::StatusOr<CudaMlp> gpu = CudaMlp::Create(shape.sizes, seed);
    ASSERT_TRUE(cpu.ok() && gpu.ok());
    // A batch whose every ReLU input is clear of 0 by more than rounding,
    // so that both models take the same mask (most first tries are).
    TestBatch b;
    for (int tries = 0;; ++tries) {
      ASSERT_LT(tries, 50) << "no batch keeps the ReLU inputs clear of 0";
      b = MakeBatch(shape.batch, shape.sizes.front(), shape.sizes.back(),
                    ++seed);
      if (ReluMarginInRoundings(cpu->layout(), cpu->params(), b) >= 1.0) break;
    }
    absl::StatusOr<BatchMetrics> want = cpu->ForwardBackward(b.x, b.y);
    absl::StatusOr<BatchMetrics> got = gpu->ForwardBackward(b.x, b.y);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->count, want->count);
    EXPECT_EQ(got->correct, want->correct);
    EXPECT_NEAR(got->loss, want->loss, 1e-5 * std::max(1.0, want->loss));
    ExpectNear(HostGrads(*gpu), cpu->grads(), "gradients");
  }
}

TEST_F(CudaMlpTest, AccumulateAndNormalizerMatchCpu) {
  const std::vector<size_t> sizes = {21, 45, 9};
  absl::StatusOr<Mlp> cpu = Mlp::Create(sizes, 3);
  absl::StatusOr<CudaMlp> gpu = CudaMlp::Create(sizes, 3);
  ASSERT_TRUE(cpu.ok() && gpu.ok());
  // Three micro-batches of one global batch of 90 (30 + 50 + 10).
  ForwardBackwardOptions opts;
  opts.loss_normalizer = 90;
  uint64_t seed = 100;
  for (size_t part : {30u, 50u, 10u}) {
    const TestBatch b = MakeBatch(part, sizes.front(), sizes.back(), ++seed);
    ASSERT_TRUE(cpu->ForwardBackward(b.x, b.y, opts).ok());
    ASSERT_TRUE(gpu->ForwardBackward(b.x, b.y, opts).ok());
    opts.mode = GradMode::kAccumulate;
  }
  ExpectNear(HostGrads(*gpu), cpu->grads(), "accumulated gradients");
  // An empty batch: kAccumulate keeps the gradients, kOverwrite zeroes.
  const std::vector<float> before = HostGrads(*gpu);
  ASSERT_TRUE(gpu->ForwardBackward({}, {}, opts).ok());
  EXPECT_TRUE(BitwiseEqual(HostGrads(*gpu), before));
  opts.mode = GradMode::kOverwrite;
  ASSERT_TRUE(gpu->ForwardBackward({}, {}, opts).ok());
  const std::vector<float> zeroed = HostGrads(*gpu);
  EXPECT_TRUE(BitwiseEqual(zeroed, std::vector<float>(zeroed.size(), 0.0f)));
}

TEST_F(CudaMlpTest, EvaluateMatchesCpu) {
  const std::vector<size_t> sizes = {30, 64, 10};
  absl::StatusOr<Mlp> cpu = Mlp::Create(sizes, 11);
  absl::StatusOr<CudaMlp> gpu = CudaMlp::Create(sizes, 11);
  ASSERT_TRUE(cpu.ok() && gpu.ok());
  const TestBatch data = MakeBatch(1001, sizes.front(), sizes.back(), 5);
  for (size_t batch_size : {1u, 64u, 1000u, 5000u}) {
    absl::StatusOr<BatchMetrics> want = cpu->Evaluate(data.x, data.y, 256);
    absl::StatusOr<BatchMetrics> got =
        gpu->Evaluate(data.x, data.y, batch_size);
    ASSERT_TRUE(want.ok() && got.ok()) << got.status();
    EXPECT_EQ(got->count, 1001u);
    EXPECT_EQ(got->correct, want->correct) << "batch size " << batch_size;
    EXPECT_NEAR(got->loss, want->loss, 1e-5 * std::max(1.0, want->loss));
  }
  // Evaluation leaves the gradients alone (still zero from Create).
  const std::vector<float> grads = HostGrads(*gpu);
  EXPECT_TRUE(BitwiseEqual(grads, std::vector<float>(grads.size(), 0.0f)));
}

// Twenty SGD steps on both devices stay close: the GPU model trains the
// same network.
TEST_F(CudaMlpTest, ShortTrainingTracksCpu) {
  const std::vector<size_t> sizes = {16, 32, 4};
  absl::StatusOr<Mlp> cpu = Mlp::Create(sizes, 21);
  absl::StatusOr<CudaMlp> gpu = CudaMlp::Create(sizes, 21);
  ASSERT_TRUE(cpu.ok() && gpu.ok());
  OptimizerConfig config;
  config.kind = OptimizerKind::kMomentum;
  config.lr = 0.05;
  absl::StatusOr<Optimizer> cpu_opt =
      Optimizer::Create(config, cpu->num_parameters());
  absl::StatusOr<CudaOptimizer> gpu_opt =
      CudaOptimizer::Create(config, gpu->num_parameters(), gpu->device());
  ASSERT_TRUE(cpu_opt.ok() && gpu_opt.ok()) << gpu_opt.status();
  double first_loss = 0.0;
  double last_loss = 0.0;
  for (int step = 0; step < 20; ++step) {
    const TestBatch b = MakeBatch(32, sizes.front(), sizes.back(), 900 + step);
    absl::StatusOr<BatchMetrics> want = cpu->ForwardBackward(b.x, b.y);
    absl::StatusOr<BatchMetrics> got = gpu->ForwardBackward(b.x, b.y);
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_NEAR(got->loss, want->loss, 1e-4 * std::max(1.0, want->loss))
        << "step " << step;
    ASSERT_TRUE(cpu_opt->Step(cpu->params(), cpu->grads()).ok());
    ASSERT_TRUE(
        gpu_opt->Step(gpu->params_device(), gpu->grads_device(), gpu->stream())
            .ok());
    if (step == 0) first_loss = got->loss;
    last_loss = got->loss;
  }
  ExpectNear(HostParams(*gpu), cpu->params(), "parameters after 20 steps");
  EXPECT_NE(first_loss, last_loss);
}

TEST_F(CudaMlpTest, BadInputIsRejectedWithoutChanges) {
  absl::StatusOr<CudaMlp> gpu = CudaMlp::Create({4, 3, 2}, 1);
  ASSERT_TRUE(gpu.ok());
  const std::vector<float> params = HostParams(*gpu);
  const TestBatch b = MakeBatch(5, 4, 2, 1);
  std::vector<float> short_x(b.x.begin(), b.x.end() - 1);
  EXPECT_THAT(gpu->ForwardBackward(short_x, b.y).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  std::vector<int32_t> bad_y = b.y;
  bad_y[3] = 2;
  EXPECT_THAT(gpu->ForwardBackward(b.x, bad_y).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  bad_y[3] = -1;
  EXPECT_THAT(gpu->Evaluate(b.x, bad_y, 2).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(gpu->Evaluate(b.x, b.y, 0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  std::vector<float> out(3);
  EXPECT_THAT(
      gpu->CopyParamsToHost(gpu->num_parameters() - 2, absl::MakeSpan(out)),
      StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(gpu->CopyParamsFromHost(gpu->num_parameters() + 1, out),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(BitwiseEqual(HostParams(*gpu), params));
  const std::vector<float> grads = HostGrads(*gpu);
  EXPECT_TRUE(BitwiseEqual(grads, std::vector<float>(grads.size(), 0.0f)));
  // Still usable afterwards.
  EXPECT_TRUE(gpu->ForwardBackward(b.x, b.y).ok());
}

TEST_F(CudaMlpTest, MissingDeviceIsFailedPrecondition) {
  const int count = gpu::VisibleCudaDeviceCount();
  CudaMlpOptions options;
  options.device = count;
  EXPECT_THAT(CudaMlp::Create({4, 2}, 1, options).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  options.device = -1;
  EXPECT_THAT(CudaMlp::Create({4, 2}, 1, options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(CudaMlp::Create({4}, 1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace gradsync
