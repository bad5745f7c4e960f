// The GPU model on a host without a GPU: creating it is a clear
// FAILED_PRECONDITION, never a crash. Runs everywhere; skips where a GPU is
// visible (the GPU cases cover that host).
#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "common/optimizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_test_util.h"
#include "worker/model/cuda/cuda_mlp.h"
#include "worker/model/cuda/cuda_optimizer.h"
#include "worker/model/cuda/cuda_status.h"

namespace gradsync {
namespace {

using gpu_test::StatusIs;
using ::testing::HasSubstr;

TEST(NoCudaDeviceTest, CreateReturnsFailedPrecondition) {
  if (gpu::VisibleCudaDeviceCount() > 0) {
    GTEST_SKIP() << "a CUDA device is visible; this case covers GPU-less "
                    "hosts";
  }
  absl::StatusOr<CudaMlp> mlp = CudaMlp::Create({784, 128, 10}, 1);
  EXPECT_THAT(mlp.status(), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(std::string(mlp.status().message()),
              HasSubstr("no CUDA device visible"));
  OptimizerConfig config;
  absl::StatusOr<CudaOptimizer> opt = CudaOptimizer::Create(config, 10, 0);
  EXPECT_THAT(opt.status(), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(std::string(opt.status().message()),
              HasSubstr("no CUDA device visible"));
}

// Argument checks come before any CUDA call, with or without a GPU.
TEST(NoCudaDeviceTest, BadArgumentsAreInvalidEverywhere) {
  EXPECT_THAT(gpu::RequireCudaDevice(-1, "test"),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(CudaMlp::Create({}, 1).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  OptimizerConfig bad;
  bad.lr = -0.1;
  EXPECT_THAT(CudaOptimizer::Create(bad, 10, 0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(gpu::CudaStatus(cudaSuccess, "noop"), absl::OkStatus());
  EXPECT_THAT(gpu::CudaStatus(cudaErrorMemoryAllocation, "cudaMalloc"),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(gpu::CublasStatus(CUBLAS_STATUS_INVALID_VALUE, "cublasSgemm"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace gradsync
