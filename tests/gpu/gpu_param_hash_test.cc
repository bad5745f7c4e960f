// CudaMlp::HashParams, the per-step parameter hash of a device-resident
// (NCCL ring) rank, computed on the device: equal to the host's
// HashParameters of the same bits, for sizes that leave a float over and
// sizes that make the grid loop more than once, with -0, NaN and
// denormals; a flipped bit changes both alike. (gpu_nccl_trainer_test
// compares whole runs' per-step hashes with the host-staged path.)
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "tests/gpu/gpu_test_util.h"
#include "worker/model/cuda/cuda_mlp.h"
#include "worker/train/param_hash.h"

namespace gradsync {
namespace {

class GpuParamHashTest : public gpu_test::GpuTest {};

TEST_F(GpuParamHashTest, EqualsTheHostHashOfTheSameBits) {
  const std::vector<std::vector<size_t>> layouts = {
      {1, 1},           // 2 parameters
      {2, 1},           // 3: one float left over
      {784, 1024, 10},  // 814090: more words than one grid pass covers
      {1000, 1001}};    // 1002001, odd
  for (const std::vector<size_t>& layers : layouts) {
    absl::StatusOr<CudaMlp> mlp = CudaMlp::Create(layers, 3);
    ASSERT_TRUE(mlp.ok()) << mlp.status();
    const size_t n = mlp->num_parameters();
    SCOPED_TRACE(n);
    std::vector<float> host = gpu_test::RandomVector(n, 2.0f, n);
    host[0] = -0.0f;
    if (n > 2) {
      host[1] = std::numeric_limits<float>::quiet_NaN();
      host[2] = std::numeric_limits<float>::denorm_min();
    }
    ASSERT_TRUE(mlp->CopyParamsFromHost(0, host).ok());
    absl::StatusOr<uint64_t> device = mlp->HashParams();
    ASSERT_TRUE(device.ok()) << device.status();
    EXPECT_EQ(*device, HashParameters(host));

    uint32_t bits;
    std::memcpy(&bits, &host.back(), sizeof(bits));
    bits ^= 1u;
    std::memcpy(&host.back(), &bits, sizeof(bits));
    ASSERT_TRUE(mlp->CopyParamsFromHost(0, host).ok());
    absl::StatusOr<uint64_t> flipped = mlp->HashParams();
    ASSERT_TRUE(flipped.ok()) << flipped.status();
    EXPECT_EQ(*flipped, HashParameters(host));
    EXPECT_NE(*flipped, *device);
  }
}

}  // namespace
}  // namespace gradsync
