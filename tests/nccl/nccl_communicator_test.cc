// NCCL backend behaviour other than the collectives' results: GPU
// detection and DeviceBuffer, argument validation, bounded init (a rank that
// never joins), collective timeouts, Abort and sticky errors. Tests that
// need a GPU skip without one; the rest run everywhere, so a CPU host still
// checks that nothing crashes when CUDA has no device or driver.
#include "collectives/nccl/nccl_communicator.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "collectives/memory_store.h"
#include "collectives/nccl/device_buffer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/nccl/nccl_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::nccl_test::CreateComms;
using ::gradsync::nccl_test::CreateMode;
using ::gradsync::nccl_test::Download;
using ::gradsync::nccl_test::GpuCount;
using ::gradsync::nccl_test::Inputs;
using ::gradsync::nccl_test::RunRanks;
using ::gradsync::nccl_test::Upload;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

NcclOptions ShortOptions(absl::Duration timeout) {
  NcclOptions options;
  options.job_id = "job-under-test";
  options.connect_timeout = timeout;
  options.timeout = timeout;
  return options;
}

// --- Runs everywhere -------------------------------------------------------

TEST(CudaDeviceCountTest, NeverFailsOrCrashes) {
  absl::StatusOr<int> count = CudaDeviceCount();
  ASSERT_THAT(count, IsOk());
  EXPECT_GE(*count, 0);
}

TEST(DeviceBufferTest, Allocate_NonexistentDevice_ReturnsInvalidArgument) {
  EXPECT_THAT(DeviceBuffer::Allocate(GpuCount(), 16),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("does not exist")));
  EXPECT_THAT(DeviceBuffer::Allocate(-1, 16),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(CreateNcclCommunicatorTest, RankOutOfRange_ReturnsInvalidArgument) {
  MemoryStore store;
  EXPECT_THAT(
      CreateNcclCommunicator(&store, 2, 2, NcclOptions()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank 2")));
  EXPECT_THAT(CreateNcclCommunicator(&store, -1, 2, NcclOptions()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(CreateNcclCommunicator(&store, 0, 0, NcclOptions()),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(CreateNcclCommunicatorTest,
     NullStoreOrZeroTimeout_ReturnsInvalidArgument) {
  EXPECT_THAT(CreateNcclCommunicator(nullptr, 0, 1, NcclOptions()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  MemoryStore store;
  EXPECT_THAT(
      CreateNcclCommunicator(&store, 0, 1, ShortOptions(absl::ZeroDuration())),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("timeouts")));
}

TEST(CreateNcclCommunicatorsInProcessTest,
     BadRankRange_ReturnsInvalidArgument) {
  MemoryStore store;
  EXPECT_THAT(CreateNcclCommunicatorsInProcess(&store, 0, 2, {}, NcclOptions()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(
      CreateNcclCommunicatorsInProcess(&store, 1, 2, {0, 1}, NcclOptions()),
      StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(CreateNcclCommunicatorTest, NoGpu_ReturnsFailedPrecondition) {
  if (GpuCount() > 0) GTEST_SKIP() << "this host has a GPU";
  MemoryStore store;
  EXPECT_THAT(CreateNcclCommunicator(&store, 0, 1, NcclOptions()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("TCP backend")));
  EXPECT_THAT(
      CreateNcclCommunicatorsInProcess(&store, 0, 1, {0}, NcclOptions()),
      StatusIs(absl::StatusCode::kFailedPrecondition));
}

// --- Needs one GPU ---------------------------------------------------------

TEST(DeviceBufferTest, CopyRoundTrip_AndOutOfRange) {
  GRADSYNC_SKIP_UNLESS_GPUS(1);
  absl::StatusOr<DeviceBuffer> buffer = DeviceBuffer::Allocate(0, 64);
  ASSERT_THAT(buffer, IsOk());
  EXPECT_EQ(buffer->size_bytes(), 64u);
  EXPECT_EQ(buffer->device(), 0);
  const std::vector<float> in = Inputs<float>(3, 16);
  ASSERT_THAT(buffer->CopyFromHost(in.data(), 64), IsOk());
  EXPECT_EQ(Download<float>(*buffer, 16), in);
  std::vector<float> out(16);
  EXPECT_THAT(buffer->CopyToHost(out.data(), 8, 60),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(buffer->CopyFromHost(in.data(), 65),
              StatusIs(absl::StatusCode::kInvalidArgument));
  DeviceBuffer moved = *std::move(buffer);
  EXPECT_EQ(moved.size_bytes(), 64u);
}

TEST(NcclCommunicatorTest, InvalidArguments_EnqueueNothingAndKeepWorking) {
  GRADSYNC_SKIP_UNLESS_GPUS(1);
  MemoryStore store;
  absl::StatusOr<std::unique_ptr<Communicator>> comm =
      CreateNcclCommunicator(&store, 0, 1, ShortOptions(absl::Seconds(30)));
  ASSERT_THAT(comm, IsOk());
  Communicator& c = **comm;
  DeviceBuffer buf = Upload(0, Inputs<float>(0, 8));
  std::vector<float> host(8);
  const auto kInvalid = absl::StatusCode::kInvalidArgument;

  EXPECT_THAT(
      c.AllReduce(nullptr, buf.data(), 8, DataType::kFloat32, ReduceOp::kSum),
      StatusIs(kInvalid, HasSubstr("null send")));
  EXPECT_THAT(
      c.AllReduce(buf.data(), nullptr, 8, DataType::kFloat32, ReduceOp::kSum),
      StatusIs(kInvalid, HasSubstr("null recv")));
  EXPECT_THAT(c.AllReduce(buf.data(), buf.data(), 8, static_cast<DataType>(9),
                          ReduceOp::kSum),
              StatusIs(kInvalid, HasSubstr("data type")));
  EXPECT_THAT(c.AllReduce(buf.data(), buf.data(), 8, DataType::kFloat32,
                          static_cast<ReduceOp>(9)),
              StatusIs(kInvalid, HasSubstr("operator")));
  EXPECT_THAT(c.AllReduce(host.data(), host.data(), 8, DataType::kFloat32,
                          ReduceOp::kSum),
              StatusIs(kInvalid, HasSubstr("host memory")));
  EXPECT_THAT(c.Broadcast(buf.data(), buf.data(), 8, DataType::kFloat32, 1),
              StatusIs(kInvalid, HasSubstr("root 1")));
  EXPECT_THAT(c.Broadcast(buf.data(), buf.data(), 8, DataType::kFloat32, -1),
              StatusIs(kInvalid));
  EXPECT_THAT(c.ReduceScatter(buf.data(), nullptr, 8, DataType::kFloat32,
                              ReduceOp::kSum),
              StatusIs(kInvalid));
  EXPECT_THAT(c.AllGather(nullptr, buf.data(), 8, DataType::kFloat32),
              StatusIs(kInvalid));
  // Null buffers are fine when there is nothing to move.
  EXPECT_THAT(
      c.AllReduce(nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kSum),
      IsOk());

  // Nothing was enqueued and the communicator still works.
  ASSERT_THAT(c.AllReduce(buf.data(), buf.data(), 8, DataType::kFloat32,
                          ReduceOp::kSum),
              IsOk());
  EXPECT_EQ(Download<float>(buf, 8), Inputs<float>(0, 8));
  EXPECT_THAT(c.Barrier(), IsOk());
}

TEST(NcclCommunicatorTest, Abort_FailsLaterCallsWithAborted) {
  GRADSYNC_SKIP_UNLESS_GPUS(1);
  MemoryStore store;
  absl::StatusOr<std::unique_ptr<Communicator>> comm =
      CreateNcclCommunicator(&store, 0, 1, ShortOptions(absl::Seconds(30)));
  ASSERT_THAT(comm, IsOk());
  DeviceBuffer buf = Upload(0, Inputs<float>(0, 8));
  ASSERT_THAT((*comm)->Barrier(), IsOk());

  (*comm)->Abort(absl::CancelledError("job cancelled by the user"));
  EXPECT_THAT((*comm)->AllReduce(buf.data(), buf.data(), 8, DataType::kFloat32,
                                 ReduceOp::kSum),
              StatusIs(absl::StatusCode::kAborted,
                       HasSubstr("job cancelled by the user")));
  EXPECT_THAT((*comm)->Barrier(), StatusIs(absl::StatusCode::kAborted));
}

TEST(NcclInitTest, RankNeverJoins_TimesOutNamingIt) {
  GRADSYNC_SKIP_UNLESS_GPUS(1);
  MemoryStore store;
  const absl::Time start = absl::Now();
  // Rank 0 of 2 on device 0; rank 1 never starts.
  absl::StatusOr<std::unique_ptr<Communicator>> comm =
      CreateNcclCommunicator(&store, 0, 2, ShortOptions(absl::Seconds(3)));
  EXPECT_THAT(comm, StatusIs(absl::StatusCode::kDeadlineExceeded,
                             AllOf(HasSubstr("rank 0 of 2"),
                                   HasSubstr("rank 1 never joined"))));
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
}

TEST(NcclInitTest, RootNeverPublishesId_TimesOutNamingRankZero) {
  GRADSYNC_SKIP_UNLESS_GPUS(1);
  MemoryStore store;
  absl::StatusOr<std::unique_ptr<Communicator>> comm =
      CreateNcclCommunicator(&store, 1, 2, ShortOptions(absl::Seconds(1)));
  EXPECT_THAT(
      comm, StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("rank 0")));
}

TEST(NcclInitTest, IdOfAnotherJob_ReturnsFailedPrecondition) {
  GRADSYNC_SKIP_UNLESS_GPUS(1);
  MemoryStore store;
  ASSERT_THAT(store.Set("nccl/unique_id/0", "other-job\nAAAA"), IsOk());
  absl::StatusOr<std::unique_ptr<Communicator>> comm =
      CreateNcclCommunicator(&store, 1, 2, ShortOptions(absl::Seconds(5)));
  EXPECT_THAT(comm, StatusIs(absl::StatusCode::kFailedPrecondition,
                             HasSubstr("other-job")));
}

// --- Needs two GPUs --------------------------------------------------------

TEST(NcclCommunicatorTest, PeerSkipsCollective_TimesOutThenStaysFailed) {
  GRADSYNC_SKIP_UNLESS_GPUS(2);
  MemoryStore store;
  absl::StatusOr<std::vector<std::unique_ptr<Communicator>>> comms =
      CreateComms(&store, 2, CreateMode::kThreadPerRank,
                  ShortOptions(absl::Seconds(5)));
  ASSERT_THAT(comms, IsOk());
  absl::Notification rank0_done;
  RunRanks(2, [&](int r) {
    Communicator* comm = (*comms)[r].get();
    DeviceBuffer buf = Upload(r, Inputs<float>(r, 1024));
    // Warm-up on both ranks: NCCL connects the peers here.
    ASSERT_THAT(comm->AllReduce(buf.data(), buf.data(), 1024,
                                DataType::kFloat32, ReduceOp::kSum),
                IsOk());
    if (r == 1) {
      // Rank 1 skips the next collective but stays alive.
      rank0_done.WaitForNotificationWithTimeout(absl::Seconds(60));
      return;
    }
    const absl::Time start = absl::Now();
    EXPECT_THAT(comm->AllReduce(buf.data(), buf.data(), 1024,
                                DataType::kFloat32, ReduceOp::kSum),
                StatusIs(absl::StatusCode::kDeadlineExceeded,
                         AllOf(HasSubstr("allreduce #1 (1024 x float sum)"),
                               HasSubstr("on rank 0 timed out"))));
    EXPECT_LT(absl::Now() - start, absl::Seconds(20));
    EXPECT_THAT(comm->Barrier(),
                StatusIs(absl::StatusCode::kAborted, HasSubstr("timed out")));
    rank0_done.Notify();
  });
}

}  // namespace
}  // namespace gradsync
