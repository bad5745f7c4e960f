#include "tests/collectives/rank_group.h"

#include <algorithm>
#include <cstdint>
#include <thread>

#include "gtest/gtest.h"

namespace gradsync::testing {

TcpOptions SmallPipelineOptions() {
  TcpOptions o;
  o.segment_bytes = 4096;
  o.sub_block_bytes = 1024;
  o.connect_timeout = absl::Seconds(20);
  o.timeout = absl::Seconds(20);
  o.job_id = "test";
  // The TCP tests test TCP; shm_transport_test picks shared memory itself.
  o.transport = Transport::kTcp;
  return o;
}

RankGroup::RankGroup(int size, const TcpOptions& options)
    : RankGroup(size, [&options](int) { return options; }) {}

RankGroup::RankGroup(int size,
                     const std::function<TcpOptions(int rank)>& options) {
  comms_.resize(size);
  std::vector<absl::Status> status(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      auto c = CreateTcpCommunicator(&store_, r, size, options(r));
      if (c.ok()) {
        comms_[r] = *std::move(c);
      } else {
        status[r] = c.status();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < size; ++r) {
    EXPECT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
  }
}

std::vector<absl::Status> RankGroup::Run(
    const std::function<absl::Status(int)>& fn) {
  std::vector<absl::Status> status(size());
  std::vector<std::thread> threads;
  for (int r = 0; r < size(); ++r) {
    threads.emplace_back([&, r] { status[r] = fn(r); });
  }
  for (auto& t : threads) t.join();
  return status;
}

namespace {

// A naive reduction over the ranks' inputs, independent of the closed
// forms of collectives/verifiable.h.
template <typename T>
T ExpectedTyped(ReduceOp op, int size, size_t i) {
  // Inputs are small positive integers: int64 holds them exactly.
  auto input = [i](int r) { return static_cast<int64_t>(InputValue(r, i)); };
  int64_t sum = 0;
  int64_t mx = input(0), mn = mx;
  for (int r = 0; r < size; ++r) {
    sum += input(r);
    mx = std::max(mx, input(r));
    mn = std::min(mn, input(r));
  }
  switch (op) {
    case ReduceOp::kSum:
      return static_cast<T>(sum);
    case ReduceOp::kAvg:
      return static_cast<T>(static_cast<T>(sum) / static_cast<T>(size));
    case ReduceOp::kMax:
      return static_cast<T>(mx);
    case ReduceOp::kMin:
      return static_cast<T>(mn);
  }
  return T{};
}

}  // namespace

void ExpectedReduction(DataType type, ReduceOp op, int size, size_t i,
                       void* out) {
  switch (type) {
    case DataType::kFloat32:
      *static_cast<float*>(out) = ExpectedTyped<float>(op, size, i);
      return;
    case DataType::kFloat64:
      *static_cast<double*>(out) = ExpectedTyped<double>(op, size, i);
      return;
    case DataType::kInt32:
      *static_cast<int32_t*>(out) = ExpectedTyped<int32_t>(op, size, i);
      return;
  }
}

}  // namespace gradsync::testing
