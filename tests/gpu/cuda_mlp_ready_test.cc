// CudaMlp's ready-range reports: the same ranges in the same order as the
// CPU Mlp, and a reported range is final for its consumer under both
// orderings (host-synchronised, and stream-ordered through ready_event()).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_test_util.h"
#include "worker/model/cuda/cuda_mlp.h"
#include "worker/model/cuda/cuda_resources.h"
#include "worker/model/mlp.h"

namespace gradsync {
namespace {

using gpu_test::BitwiseEqual;
using gpu_test::GpuTest;
using gpu_test::MakeBatch;
using gpu_test::TestBatch;
using Range = std::pair<size_t, size_t>;

class CudaMlpReadyTest : public GpuTest {};

TEST_F(CudaMlpReadyTest, RangesAndOrderMatchCpu) {
  const std::vector<std::vector<size_t>> all_sizes = {
      {1, 1}, {3, 1, 2}, {5, 37, 65, 3}, {784, 64, 32, 10}};
  for (const std::vector<size_t>& sizes : all_sizes) {
    for (size_t batch : {0u, 1u, 17u}) {
      absl::StatusOr<Mlp> cpu = Mlp::Create(sizes, 2);
      absl::StatusOr<CudaMlp> gpu = CudaMlp::Create(sizes, 2);
      ASSERT_TRUE(cpu.ok() && gpu.ok());
      const TestBatch b = MakeBatch(batch, sizes.front(), sizes.back(), 4);
      for (ReadyOrdering ordering :
           {ReadyOrdering::kHostSynchronized, ReadyOrdering::kStreamOrdered}) {
        gpu->set_ready_ordering(ordering);
        std::vector<Range> want, got;
        ForwardBackwardOptions cpu_opts, gpu_opts;
        cpu_opts.on_grad_ready = [&](size_t begin, size_t end) {
          want.emplace_back(begin, end);
        };
        gpu_opts.on_grad_ready = [&](size_t begin, size_t end) {
          got.emplace_back(begin, end);
        };
        ASSERT_TRUE(cpu->ForwardBackward(b.x, b.y, cpu_opts).ok());
        ASSERT_TRUE(gpu->ForwardBackward(b.x, b.y, gpu_opts).ok());
        EXPECT_EQ(got, want) << "batch " << batch;
        // They tile the buffer from its end.
        ASSERT_EQ(got.size(), sizes.size() - 1);
        EXPECT_EQ(got.front().second, gpu->num_parameters());
        EXPECT_EQ(got.back().first, 0u);
      }
    }
  }
}

// Copying a range out at its report (synchronously on the host) gives the
// final gradients: nothing writes the range afterwards. The copy runs on a
// stream of its own that waits for nothing, so it shows the range as it is
// on the device at the report: without the model's host synchronisation it
// would race the range's backward (layers large enough that the device
// lags behind the host's enqueueing).
TEST_F(CudaMlpReadyTest, HostSynchronizedRangeIsFinalAtReport) {
  const std::vector<size_t> sizes = {500, 2000, 2000, 10};
  absl::StatusOr<CudaMlp> gpu = CudaMlp::Create(sizes, 9);
  ASSERT_TRUE(gpu.ok());
  absl::StatusOr<gpu::CudaStream> side = gpu::CudaStream::Create(0);
  ASSERT_TRUE(side.ok()) << side.status();
  std::vector<float> seen(gpu->num_parameters(), -1.0f);
  ForwardBackwardOptions opts;
  opts.on_grad_ready = [&](size_t b, size_t e) {
    ASSERT_EQ(cudaMemcpyAsync(seen.data() + b, gpu->grads_device().data() + b,
                              (e - b) * sizeof(float), cudaMemcpyDeviceToHost,
                              side->get()),
              cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(side->get()), cudaSuccess);
  };
  const TestBatch batch = MakeBatch(1024, sizes.front(), sizes.back(), 8);
  ASSERT_TRUE(gpu->ForwardBackward(batch.x, batch.y, opts).ok());
  std::vector<float> final_grads(gpu->num_parameters());
  ASSERT_TRUE(gpu->CopyGradsToHost(0, absl::MakeSpan(final_grads)).ok());
  EXPECT_TRUE(BitwiseEqual(seen, final_grads));
}

// Stream-ordered: a consumer stream that waits on ready_event() inside the
// callback and copies the range from there sees the final gradients, and
// parameters written into a reported range (a PS pull) are not read by the
// rest of the pass.
TEST_F(CudaMlpReadyTest, StreamOrderedConsumerWaitsOnReadyEvent) {
  const std::vector<size_t> sizes = {200, 300, 100, 10};
  CudaMlpOptions options;
  options.ready_ordering = ReadyOrdering::kStreamOrdered;
  absl::StatusOr<CudaMlp> gpu = CudaMlp::Create(sizes, 12, options);
  ASSERT_TRUE(gpu.ok());
  absl::StatusOr<gpu::CudaStream> comm_stream = gpu::CudaStream::Create(0);
  ASSERT_TRUE(comm_stream.ok()) << comm_stream.status();
  const cudaStream_t comm = comm_stream->get();
  const size_t n = gpu->num_parameters();
  absl::StatusOr<gpu::PinnedMemory> staging =
      gpu::PinnedMemory::Allocate(0, n * sizeof(float));
  ASSERT_TRUE(staging.ok()) << staging.status();
  float* pinned = staging->as<float>();
  ForwardBackwardOptions opts;
  opts.on_grad_ready = [&](size_t b, size_t e) {
    ASSERT_EQ(cudaStreamWaitEvent(comm, gpu->ready_event(), 0), cudaSuccess);
    ASSERT_EQ(
        cudaMemcpyAsync(pinned + b, gpu->grads_device().data() + b,
                        (e - b) * sizeof(float), cudaMemcpyDeviceToHost, comm),
        cudaSuccess);
  };
  const TestBatch batch = MakeBatch(512, sizes.front(), sizes.back(), 13);
  ASSERT_TRUE(gpu->ForwardBackward(batch.x, batch.y, opts).ok());
  ASSERT_EQ(cudaStreamSynchronize(comm), cudaSuccess);
  std::vector<float> final_grads(n);
  ASSERT_TRUE(gpu->CopyGradsToHost(0, absl::MakeSpan(final_grads)).ok());
  EXPECT_TRUE(BitwiseEqual(absl::MakeConstSpan(pinned, n), final_grads));

  // Same pass again, but overwriting each reported layer's parameters on
  // the consumer stream: the gradients must not change (the pass no longer
  // reads them).
  opts.on_grad_ready = [&](size_t b, size_t e) {
    ASSERT_EQ(cudaStreamWaitEvent(comm, gpu->ready_event(), 0), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(gpu->params_device().data() + b, 0,
                              (e - b) * sizeof(float), comm),
              cudaSuccess);
  };
  ASSERT_TRUE(gpu->ForwardBackward(batch.x, batch.y, opts).ok());
  ASSERT_EQ(cudaStreamSynchronize(comm), cudaSuccess);
  std::vector<float> again(n);
  ASSERT_TRUE(gpu->CopyGradsToHost(0, absl::MakeSpan(again)).ok());
  EXPECT_TRUE(BitwiseEqual(again, final_grads));
}

}  // namespace
}  // namespace gradsync
