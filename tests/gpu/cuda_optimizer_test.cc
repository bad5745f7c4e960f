// CudaOptimizer against common/optimizer.h: bitwise the same parameters and
// state for every kind over several steps, state moving GPU -> CPU -> GPU
// without a trace, and bad input.
#include "worker/model/cuda/cuda_optimizer.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/optimizer.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_test_util.h"
#include "worker/model/cuda/cuda_resources.h"

namespace gradsync {
namespace {

using gpu_test::BitwiseEqual;
using gpu_test::GpuTest;
using gpu_test::RandomVector;
using gpu_test::StatusIs;

struct NamedConfig {
  std::string name;
  OptimizerConfig config;
};

std::vector<NamedConfig> Configs() {
  std::vector<NamedConfig> out;
  auto add = [&](std::string name, OptimizerKind kind, auto&& tweak) {
    OptimizerConfig c;
    c.kind = kind;
    c.lr = 0.03;
    tweak(c);
    out.push_back({std::move(name), c});
  };
  auto none = [](OptimizerConfig&) {};
  add("sgd", OptimizerKind::kSgd, none);
  add("sgd_wd", OptimizerKind::kSgd,
      [](OptimizerConfig& c) { c.weight_decay = 0.01; });
  add("momentum", OptimizerKind::kMomentum, none);
  add("momentum_dampening_wd", OptimizerKind::kMomentum,
      [](OptimizerConfig& c) {
        c.momentum = 0.8;
        c.dampening = 0.3;
        c.weight_decay = 1e-3;
      });
  add("nesterov", OptimizerKind::kMomentum, [](OptimizerConfig& c) {
    c.nesterov = true;
    c.weight_decay = 1e-4;
  });
  add("adam", OptimizerKind::kAdam, none);
  add("adam_wd", OptimizerKind::kAdam, [](OptimizerConfig& c) {
    c.weight_decay = 0.02;
    c.eps = 1e-6;
  });
  // beta1 < 0.5: the other branch of the two-sided lerp.
  add("adam_low_beta1", OptimizerKind::kAdam, [](OptimizerConfig& c) {
    c.beta1 = 0.3;
    c.beta2 = 0.9;
  });
  add("adamw", OptimizerKind::kAdamW,
      [](OptimizerConfig& c) { c.weight_decay = 0.05; });
  return out;
}

// Parameters, gradients and a stream on the device for one test.
class DeviceVectors {
 public:
  explicit DeviceVectors(size_t n) : n_(n) {
    absl::StatusOr<gpu::DeviceMemory> p =
        gpu::DeviceMemory::Allocate(0, n * sizeof(float) + 4);
    absl::StatusOr<gpu::DeviceMemory> g =
        gpu::DeviceMemory::Allocate(0, n * sizeof(float) + 4);
    absl::StatusOr<gpu::CudaStream> s = gpu::CudaStream::Create(0);
    EXPECT_TRUE(p.ok() && g.ok() && s.ok());
    if (!p.ok() || !g.ok() || !s.ok()) return;
    params_ = std::move(*p);
    grads_ = std::move(*g);
    stream_ = std::move(*s);
  }
  absl::Span<float> params() { return {params_.as<float>(), n_}; }
  absl::Span<float> grads() { return {grads_.as<float>(), n_}; }
  cudaStream_t stream() const { return stream_.get(); }
  // Copies on stream() (the non-blocking stream the optimizer uses: a
  // plain cudaMemcpy on the legacy stream would not be ordered with it)
  // and waits.
  void Upload(absl::Span<float> dst, const std::vector<float>& src) {
    ASSERT_EQ(cudaMemcpyAsync(dst.data(), src.data(), n_ * sizeof(float),
                              cudaMemcpyHostToDevice, stream()),
              cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream()), cudaSuccess);
  }
  std::vector<float> Download(absl::Span<float> src) {
    std::vector<float> out(n_);
    EXPECT_EQ(cudaMemcpyAsync(out.data(), src.data(), n_ * sizeof(float),
                              cudaMemcpyDeviceToHost, stream()),
              cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream()), cudaSuccess);
    return out;
  }

 private:
  size_t n_;
  gpu::DeviceMemory params_;
  gpu::DeviceMemory grads_;
  gpu::CudaStream stream_;
};

void ExpectSameState(const OptimizerState& gpu, const OptimizerState& cpu) {
  EXPECT_EQ(gpu.kind, cpu.kind);
  EXPECT_EQ(gpu.step, cpu.step);
  EXPECT_EQ(gpu.size, cpu.size);
  ASSERT_EQ(gpu.buffers.size(), cpu.buffers.size());
  for (size_t i = 0; i < cpu.buffers.size(); ++i) {
    EXPECT_TRUE(BitwiseEqual(gpu.buffers[i], cpu.buffers[i]))
        << "state buffer " << i;
  }
}

class CudaOptimizerTest : public GpuTest {};

TEST_F(CudaOptimizerTest, EveryKindMatchesCpuBitwiseOverSteps) {
  for (const NamedConfig& nc : Configs()) {
    // 2,500,003: more than two passes of the kernels' grid (4096 blocks of
    // 256 threads), so that a wrong grid stride shows.
    for (size_t n : {1u, 1000u, 4099u, 2500003u}) {
      SCOPED_TRACE(nc.name + " n=" + std::to_string(n));
      absl::StatusOr<Optimizer> cpu = Optimizer::Create(nc.config, n);
      absl::StatusOr<CudaOptimizer> gpu =
          CudaOptimizer::Create(nc.config, n, 0);
      ASSERT_TRUE(cpu.ok() && gpu.ok()) << gpu.status();
      DeviceVectors dev(n);
      std::vector<float> params = RandomVector(n, 1.0f, 1);
      dev.Upload(dev.params(), params);
      for (int step = 0; step < 5; ++step) {
        const std::vector<float> grads = RandomVector(n, 0.5f, 10 + step);
        dev.Upload(dev.grads(), grads);
        ASSERT_TRUE(cpu->Step(absl::MakeSpan(params), grads).ok());
        ASSERT_TRUE(gpu->Step(dev.params(), dev.grads(), dev.stream()).ok());
        EXPECT_EQ(gpu->step_count(), cpu->step_count());
        ASSERT_TRUE(BitwiseEqual(dev.Download(dev.params()), params))
            << "parameters differ after step " << step + 1;
        absl::StatusOr<OptimizerState> state = gpu->ExportState(dev.stream());
        ASSERT_TRUE(state.ok()) << state.status();
        ExpectSameState(*state, cpu->ExportState());
      }
    }
  }
}

// 2 steps on the GPU, 2 on the CPU, 2 on a fresh GPU optimizer: bitwise the
// same as 6 steps on one GPU optimizer.
TEST_F(CudaOptimizerTest, StateRoundTripsThroughCpuAndContinues) {
  const size_t n = 777;
  for (const NamedConfig& nc : Configs()) {
    SCOPED_TRACE(nc.name);
    absl::StatusOr<CudaOptimizer> straight =
        CudaOptimizer::Create(nc.config, n, 0);
    absl::StatusOr<CudaOptimizer> first =
        CudaOptimizer::Create(nc.config, n, 0);
    absl::StatusOr<CudaOptimizer> third =
        CudaOptimizer::Create(nc.config, n, 0);
    absl::StatusOr<Optimizer> second = Optimizer::Create(nc.config, n);
    ASSERT_TRUE(straight.ok() && first.ok() && third.ok() && second.ok());
    DeviceVectors a(n), b(n);
    std::vector<float> host_params = RandomVector(n, 1.0f, 3);
    a.Upload(a.params(), host_params);
    b.Upload(b.params(), host_params);
    for (int step = 0; step < 6; ++step) {
      const std::vector<float> grads = RandomVector(n, 0.5f, 50 + step);
      a.Upload(a.grads(), grads);
      ASSERT_TRUE(straight->Step(a.params(), a.grads(), a.stream()).ok());
      if (step < 2) {
        b.Upload(b.grads(), grads);
        ASSERT_TRUE(first->Step(b.params(), b.grads(), b.stream()).ok());
      } else if (step < 4) {
        if (step == 2) {
          absl::StatusOr<OptimizerState> s = first->ExportState(b.stream());
          ASSERT_TRUE(s.ok());
          ASSERT_TRUE(second->ImportState(*s).ok());
          host_params = b.Download(b.params());
        }
        ASSERT_TRUE(second->Step(absl::MakeSpan(host_params), grads).ok());
      } else {
        if (step == 4) {
          ASSERT_TRUE(
              third->ImportState(second->ExportState(), b.stream()).ok());
          b.Upload(b.params(), host_params);
        }
        b.Upload(b.grads(), grads);
        ASSERT_TRUE(third->Step(b.params(), b.grads(), b.stream()).ok());
      }
    }
    EXPECT_EQ(third->step_count(), 6u);
    EXPECT_TRUE(BitwiseEqual(b.Download(b.params()), a.Download(a.params())));
    absl::StatusOr<OptimizerState> want = straight->ExportState(a.stream());
    absl::StatusOr<OptimizerState> got = third->ExportState(b.stream());
    ASSERT_TRUE(want.ok() && got.ok());
    ExpectSameState(*got, *want);
  }
}

TEST_F(CudaOptimizerTest, BadInputIsRejected) {
  OptimizerConfig config;
  config.kind = OptimizerKind::kAdam;
  const size_t n = 64;
  EXPECT_THAT(CudaOptimizer::CreateByName("rmsprop", config, n, 0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  OptimizerConfig bad = config;
  bad.lr = -1;
  EXPECT_THAT(CudaOptimizer::Create(bad, n, 0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  absl::StatusOr<CudaOptimizer> opt = CudaOptimizer::Create(config, n, 0);
  ASSERT_TRUE(opt.ok());
  DeviceVectors dev(n);
  // Host memory instead of device memory.
  std::vector<float> host(n), host_grads(n);
  EXPECT_THAT(opt->Step(absl::MakeSpan(host), host_grads, dev.stream()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  // Wrong lengths; overlapping buffers.
  EXPECT_THAT(opt->Step(dev.params().subspan(1), dev.grads(), dev.stream()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(opt->Step(dev.params(),
                        absl::Span<const float>(dev.params().data() + 1, n),
                        dev.stream()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(opt->step_count(), 0u);
  // A state of another kind or size.
  OptimizerState state;
  state.kind = OptimizerKind::kMomentum;
  state.size = n;
  state.buffers = {std::vector<float>(n)};
  EXPECT_THAT(opt->ImportState(state, dev.stream()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  state.kind = OptimizerKind::kAdam;
  state.buffers.push_back(std::vector<float>(n - 1));
  EXPECT_THAT(opt->ImportState(state, dev.stream()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  // A device index this process does not see.
  EXPECT_THAT(
      CudaOptimizer::Create(config, n, gpu::VisibleCudaDeviceCount()).status(),
      StatusIs(absl::StatusCode::kFailedPrecondition));
}

}  // namespace
}  // namespace gradsync
