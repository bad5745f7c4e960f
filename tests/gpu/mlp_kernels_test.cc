// The elementwise kernels of worker/model/cuda on buffers larger than one
// pass of their grid (4096 blocks of 256 threads: 1,048,576 elements), so
// that a wrong grid stride would leave or double-process elements. The
// CudaMlp tests use far smaller layers. Results are compared bitwise with
// the same loops on the host: one float add and compare per element.
#include "worker/model/cuda/mlp_kernels.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_test_util.h"
#include "worker/model/cuda/cuda_resources.h"

namespace gradsync {
namespace {

using gpu_test::BitwiseEqual;
using gpu_test::GpuTest;
using gpu_test::RandomVector;

// More than two passes of the grid, and not a multiple of the block.
constexpr size_t kRows = 2500;
constexpr size_t kCols = 1001;
constexpr size_t kElements = kRows * kCols;  // 2,502,500

class MlpKernelsTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    absl::StatusOr<gpu::CudaStream> stream = gpu::CudaStream::Create(0);
    ASSERT_TRUE(stream.ok()) << stream.status();
    stream_ = std::move(*stream);
  }

  gpu::DeviceMemory Upload(const std::vector<float>& host) {
    absl::StatusOr<gpu::DeviceMemory> memory =
        gpu::DeviceMemory::Allocate(0, host.size() * sizeof(float));
    EXPECT_TRUE(memory.ok()) << memory.status();
    if (!memory.ok()) return gpu::DeviceMemory();
    EXPECT_EQ(cudaMemcpyAsync(memory->data(), host.data(),
                              host.size() * sizeof(float),
                              cudaMemcpyHostToDevice, stream_.get()),
              cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream_.get()), cudaSuccess);
    return *std::move(memory);
  }

  std::vector<float> Download(const gpu::DeviceMemory& memory, size_t n) {
    std::vector<float> host(n);
    EXPECT_EQ(cudaMemcpyAsync(host.data(), memory.data(), n * sizeof(float),
                              cudaMemcpyDeviceToHost, stream_.get()),
              cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream_.get()), cudaSuccess);
    return host;
  }

  gpu::CudaStream stream_;
};

TEST_F(MlpKernelsTest, BiasActivationCoversEveryElementOfALargeMatrix) {
  const std::vector<float> y = RandomVector(kElements, 1.0f, 21);
  const std::vector<float> bias = RandomVector(kCols, 0.5f, 22);
  for (bool relu : {false, true}) {
    SCOPED_TRACE(relu ? "relu" : "identity");
    gpu::DeviceMemory dy = Upload(y);
    gpu::DeviceMemory dbias = Upload(bias);
    ASSERT_EQ(gpu::LaunchBiasActivation(dy.as<float>(), dbias.as<float>(),
                                        kRows, kCols, relu, stream_.get()),
              cudaSuccess);
    std::vector<float> expected = y;
    for (size_t i = 0; i < kRows; ++i) {
      for (size_t j = 0; j < kCols; ++j) {
        float& v = expected[i * kCols + j];
        v += bias[j];
        if (relu) v = v < 0.0f ? 0.0f : v;
      }
    }
    EXPECT_TRUE(BitwiseEqual(Download(dy, kElements), expected));
  }
}

TEST_F(MlpKernelsTest, ReluMaskCoversEveryElementOfALargeBuffer) {
  const std::vector<float> dx = RandomVector(kElements, 1.0f, 23);
  const std::vector<float> x = RandomVector(kElements, 1.0f, 24);
  gpu::DeviceMemory ddx = Upload(dx);
  gpu::DeviceMemory dx_in = Upload(x);
  ASSERT_EQ(gpu::LaunchReluMask(ddx.as<float>(), dx_in.as<float>(), kElements,
                                stream_.get()),
            cudaSuccess);
  std::vector<float> expected = dx;
  size_t masked = 0;
  for (size_t k = 0; k < kElements; ++k) {
    if (!(x[k] > 0.0f)) {
      expected[k] = 0.0f;
      ++masked;
    }
  }
  ASSERT_GT(masked, kElements / 4);  // the mask matters in every pass
  EXPECT_TRUE(BitwiseEqual(Download(ddx, kElements), expected));
}

}  // namespace
}  // namespace gradsync
