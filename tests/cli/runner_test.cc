#include "cli/bench/runner.h"

#include <cstring>
#include <memory>

#include "gtest/gtest.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {

// A one-rank communicator: every collective copies send to recv (what N=1
// means), and can damage one element of every result to show that the
// runner counts it.
class LoopbackCommunicator : public Communicator {
 public:
  explicit LoopbackCommunicator(size_t corrupt_index = 0)
      : corrupt_index_(corrupt_index) {}

  int rank() const override { return 0; }
  int size() const override { return 1; }
  absl::Duration timeout() const override { return absl::Seconds(1); }

  std::unique_ptr<Work> AllReduceAsync(const void* send, void* recv,
                                       size_t count, DataType type,
                                       ReduceOp) override {
    return Copy(send, recv, count, type);
  }
  std::unique_ptr<Work> ReduceScatterAsync(const void* send, void* recv,
                                           size_t recv_count, DataType type,
                                           ReduceOp) override {
    return Copy(send, recv, recv_count, type);
  }
  std::unique_ptr<Work> AllGatherAsync(const void* send, void* recv,
                                       size_t send_count,
                                       DataType type) override {
    return Copy(send, recv, send_count, type);
  }
  std::unique_ptr<Work> BroadcastAsync(const void* send, void* recv,
                                       size_t count, DataType type,
                                       int) override {
    return Copy(send, recv, count, type);
  }
  std::unique_ptr<Work> BarrierAsync() override {
    return MakeDoneWork(absl::OkStatus());
  }
  void Abort(const absl::Status&) override {}

  int calls = 0;

 private:
  std::unique_ptr<Work> Copy(const void* send, void* recv, size_t count,
                             DataType type) {
    ++calls;
    const size_t element = DataTypeSize(type);
    std::memmove(recv, send, count * element);
    // Index 0 is never damaged: the runner's 1-element scalar all-reduces
    // (time, wrong counts) stay right.
    if (corrupt_index_ > 0 && count > corrupt_index_) {
      FillPoisonOne(static_cast<std::byte*>(recv) + corrupt_index_ * element,
                    type);
    }
    return MakeDoneWork(absl::OkStatus());
  }
  static void FillPoisonOne(std::byte* at, DataType type) {
    const int32_t i = -7;
    const float f = -7;
    const double d = -7;
    if (type == DataType::kInt32) std::memcpy(at, &i, sizeof(i));
    if (type == DataType::kFloat32) std::memcpy(at, &f, sizeof(f));
    if (type == DataType::kFloat64) std::memcpy(at, &d, sizeof(d));
  }

  const size_t corrupt_index_;
};

SweepConfig Config(Collective collective, DataType type) {
  SweepConfig config;
  config.collective = collective;
  config.type = type;
  config.iters = 3;
  config.warmup = 2;
  config.max_bytes = 4096;
  return config;
}

TEST(SweepRunnerTest, RightResultsCountNoWrongElements) {
  std::unique_ptr<BenchMemory> memory = MakeHostMemory();
  for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter,
                       Collective::kAllGather, Collective::kBroadcast}) {
    for (DataType type :
         {DataType::kFloat32, DataType::kFloat64, DataType::kInt32}) {
      LoopbackCommunicator comm;
      absl::StatusOr<std::unique_ptr<SweepRunner>> runner =
          SweepRunner::Create(&comm, memory.get(), Config(c, type));
      ASSERT_TRUE(runner.ok()) << runner.status();
      for (size_t bytes : {size_t{0}, size_t{8}, size_t{1000}, size_t{4096}}) {
        absl::StatusOr<SizeResult> result = (*runner)->RunSize(bytes);
        ASSERT_TRUE(result.ok()) << result.status();
        EXPECT_EQ(result->out_of_place.wrong, 0)
            << CollectiveName(c) << " " << DataTypeName(type) << " " << bytes;
        EXPECT_EQ(result->in_place.wrong, 0)
            << CollectiveName(c) << " " << DataTypeName(type) << " " << bytes;
        EXPECT_EQ(result->size_bytes,
                  bytes / DataTypeSize(type) * DataTypeSize(type));
        EXPECT_GE(result->out_of_place.time_us, 0.0);
      }
    }
  }
}

TEST(SweepRunnerTest, OneDamagedElementIsCountedInEachPass) {
  std::unique_ptr<BenchMemory> memory = MakeHostMemory();
  LoopbackCommunicator comm(/*corrupt_index=*/5);
  absl::StatusOr<std::unique_ptr<SweepRunner>> runner = SweepRunner::Create(
      &comm, memory.get(), Config(Collective::kAllReduce, DataType::kFloat32));
  ASSERT_TRUE(runner.ok()) << runner.status();
  absl::StatusOr<SizeResult> result = (*runner)->RunSize(4096);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->out_of_place.wrong, 1);
  EXPECT_EQ(result->in_place.wrong, 1);
}

TEST(SweepRunnerTest, IterationCountsAndUncheckedRuns) {
  std::unique_ptr<BenchMemory> memory = MakeHostMemory();
  LoopbackCommunicator comm;
  SweepConfig config = Config(Collective::kBroadcast, DataType::kInt32);
  config.check = false;
  absl::StatusOr<std::unique_ptr<SweepRunner>> runner =
      SweepRunner::Create(&comm, memory.get(), config);
  ASSERT_TRUE(runner.ok()) << runner.status();
  absl::StatusOr<SizeResult> result = (*runner)->RunSize(1024);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->out_of_place.wrong, -1);
  EXPECT_EQ(result->in_place.wrong, -1);
  // warmup 2 + 3 timed + 1 time all-reduce, then 3 timed + 1 in place.
  EXPECT_EQ(comm.calls, 2 + 3 + 1 + 3 + 1);
}

TEST(SweepRunnerTest, SizeAboveMaximum_ReturnsInvalidArgument) {
  std::unique_ptr<BenchMemory> memory = MakeHostMemory();
  LoopbackCommunicator comm;
  absl::StatusOr<std::unique_ptr<SweepRunner>> runner = SweepRunner::Create(
      &comm, memory.get(), Config(Collective::kAllReduce, DataType::kFloat32));
  ASSERT_TRUE(runner.ok()) << runner.status();
  EXPECT_EQ((*runner)->RunSize(8192).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace bench
}  // namespace cli
}  // namespace gradsync
