// Every collective of the NCCL backend against a naive reduction, on one
// rank per GPU (at most 4), with exact integer-valued inputs: results must
// equal the expected values exactly and be bitwise identical on every rank.
// Parameterised over element count (0, 1, fewer than the ranks, odd,
// large) and over how the communicators are created (a thread per rank, or
// one grouped in-process init). Skips without a GPU.
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collectives/memory_store.h"
#include "collectives/nccl/device_buffer.h"
#include "collectives/nccl/nccl_communicator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/nccl/nccl_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::nccl_test::Bytes;
using ::gradsync::nccl_test::CreateComms;
using ::gradsync::nccl_test::CreateMode;
using ::gradsync::nccl_test::CreateModeName;
using ::gradsync::nccl_test::Download;
using ::gradsync::nccl_test::ExpectExact;
using ::gradsync::nccl_test::Inputs;
using ::gradsync::nccl_test::RunRanks;
using ::gradsync::nccl_test::TestRanks;
using ::gradsync::nccl_test::Upload;
using ::gradsync::nccl_test::Value;
using ::gradsync::testing::IsOk;

// Results of one rank, by operation name, for the cross-rank comparison.
using RankResults = std::map<std::string, std::string>;

// fp32 all-reduce of every op, out of place; returns nothing, records bytes.
void CheckAllReduce(Communicator* comm, size_t count, RankResults* out) {
  const int n = comm->size();
  const int device = comm->rank();
  DeviceBuffer send = Upload(device, Inputs<float>(comm->rank(), count));
  DeviceBuffer recv = Upload(device, std::vector<float>(count));
  for (ReduceOp op :
       {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kAvg}) {
    const std::string what =
        absl::StrCat("allreduce ", ReduceOpName(op), " count ", count);
    // NaN in every element first, so that an op that writes nothing fails
    // (on one GPU every op's result equals the input).
    ASSERT_THAT(recv.Memset(0xff), IsOk()) << what;
    ASSERT_THAT(comm->AllReduce(send.data(), recv.data(), count,
                                DataType::kFloat32, op),
                IsOk())
        << what;
    std::vector<float> expected(count);
    for (size_t i = 0; i < count; ++i) {
      float sum = 0, max = Value<float>(0, i), min = Value<float>(0, i);
      for (int r = 0; r < n; ++r) {
        sum += Value<float>(r, i);
        max = std::max(max, Value<float>(r, i));
        min = std::min(min, Value<float>(r, i));
      }
      expected[i] = op == ReduceOp::kSum   ? sum
                    : op == ReduceOp::kMax ? max
                    : op == ReduceOp::kMin ? min
                                           : sum / static_cast<float>(n);
    }
    const std::vector<float> got = Download<float>(recv, count);
    // ncclAvg pre-multiplies by 1/n: exact only when n is a power of two.
    if (op == ReduceOp::kAvg && (n & (n - 1)) != 0) {
      for (size_t i = 0; i < count; ++i) {
        ASSERT_NEAR(expected[i], got[i], 1e-5 * expected[i])
            << what << " at " << i;
      }
    } else {
      ExpectExact(expected, got, what);
    }
    (*out)[what] = Bytes(got);
  }
}

// In-place sums in int32 and float64, and several async calls in flight.
void CheckInPlaceTypesAndAsync(Communicator* comm, size_t count,
                               RankResults* out) {
  const int n = comm->size();
  const int device = comm->rank();
  DeviceBuffer ints = Upload(device, Inputs<int32_t>(comm->rank(), count));
  DeviceBuffer doubles = Upload(device, Inputs<double>(comm->rank(), count));
  DeviceBuffer floats = Upload(device, Inputs<float>(comm->rank(), count));
  const absl::Time issued = absl::Now();
  std::unique_ptr<Work> w1 = comm->AllReduceAsync(
      ints.data(), ints.data(), count, DataType::kInt32, ReduceOp::kSum);
  std::unique_ptr<Work> w2 =
      comm->AllReduceAsync(doubles.data(), doubles.data(), count,
                           DataType::kFloat64, ReduceOp::kSum);
  std::unique_ptr<Work> w3 = comm->AllReduceAsync(
      floats.data(), floats.data(), count, DataType::kFloat32, ReduceOp::kMax);
  const absl::Time deadline = absl::Now() + comm->timeout();
  ASSERT_THAT(w3->Wait(deadline), IsOk());  // Out of order on purpose.
  ASSERT_THAT(w1->Wait(deadline), IsOk());
  ASSERT_THAT(w2->Wait(deadline), IsOk());
  EXPECT_TRUE(w1->Done());
  // The device's own time of each collective (Work::Elapsed): positive when
  // NCCL launched a kernel, and the three back to back on one stream fit in
  // the wall time from before the first was issued to after the last was
  // done. An empty call, or an in-place one on one rank, launches nothing,
  // and its two timing events may read 0 apart.
  const bool launched = count > 0 && n > 1;
  absl::Duration device_time = absl::ZeroDuration();
  for (Work* w : {w1.get(), w2.get(), w3.get()}) {
    absl::StatusOr<absl::Duration> elapsed = w->Elapsed();
    ASSERT_THAT(elapsed, IsOk());
    if (launched) {
      EXPECT_GT(*elapsed, absl::ZeroDuration());
    } else {
      EXPECT_GE(*elapsed, absl::ZeroDuration());
    }
    device_time += *elapsed;
  }
  EXPECT_LE(device_time, absl::Now() - issued);

  std::vector<int32_t> int_sum(count);
  std::vector<double> double_sum(count);
  std::vector<float> float_max(count);
  for (size_t i = 0; i < count; ++i) {
    for (int r = 0; r < n; ++r) {
      int_sum[i] += Value<int32_t>(r, i);
      double_sum[i] += Value<double>(r, i);
    }
    float_max[i] = Value<float>(n - 1, i);
  }
  const std::vector<int32_t> got_ints = Download<int32_t>(ints, count);
  const std::vector<double> got_doubles = Download<double>(doubles, count);
  const std::vector<float> got_floats = Download<float>(floats, count);
  ExpectExact(int_sum, got_ints, "in-place int32 sum");
  ExpectExact(double_sum, got_doubles, "in-place float64 sum");
  ExpectExact(float_max, got_floats, "in-place async float max");
  (*out)["int32"] = Bytes(got_ints);
  (*out)["float64"] = Bytes(got_doubles);
  (*out)["async max"] = Bytes(got_floats);
}

void CheckReduceScatterAllGather(Communicator* comm, size_t count,
                                 RankResults* out) {
  const int n = comm->size();
  const int rank = comm->rank();
  // ReduceScatter: n blocks of `count` in, block `rank` of the sum out.
  DeviceBuffer rs_send = Upload(rank, Inputs<float>(rank, n * count));
  DeviceBuffer rs_recv = Upload(rank, std::vector<float>(count));
  ASSERT_THAT(comm->ReduceScatter(rs_send.data(), rs_recv.data(), count,
                                  DataType::kFloat32, ReduceOp::kSum),
              IsOk());
  std::vector<float> expected(count);
  for (size_t i = 0; i < count; ++i) {
    for (int r = 0; r < n; ++r) {
      expected[i] += Value<float>(r, rank * count + i);
    }
  }
  ExpectExact(expected, Download<float>(rs_recv, count), "reducescatter");

  // AllGather: block r of the output is rank r's input.
  DeviceBuffer ag_send = Upload(rank, Inputs<float>(rank, count));
  DeviceBuffer ag_recv = Upload(rank, std::vector<float>(n * count));
  ASSERT_THAT(comm->AllGather(ag_send.data(), ag_recv.data(), count,
                              DataType::kFloat32),
              IsOk());
  std::vector<float> gathered(n * count);
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) {
      gathered[r * count + i] = Value<float>(r, i);
    }
  }
  const std::vector<float> got = Download<float>(ag_recv, n * count);
  ExpectExact(gathered, got, "allgather");
  (*out)["allgather"] = Bytes(got);
}

void CheckBroadcastAndBarrier(Communicator* comm, size_t count,
                              RankResults* out) {
  const int rank = comm->rank();
  for (int root = 0; root < comm->size(); ++root) {
    DeviceBuffer buf = Upload(rank, Inputs<float>(rank, count));
    // In place: the root's buffer is both send and recv.
    ASSERT_THAT(comm->Broadcast(buf.data(), buf.data(), count,
                                DataType::kFloat32, root),
                IsOk());
    const std::vector<float> got = Download<float>(buf, count);
    ExpectExact(Inputs<float>(root, count), got,
                absl::StrCat("broadcast from root ", root));
    (*out)[absl::StrCat("broadcast ", root)] = Bytes(got);
  }
  ASSERT_THAT(comm->Barrier(), IsOk());
  ASSERT_THAT(comm->Barrier(), IsOk());
}

class NcclCollectivesTest
    : public ::testing::TestWithParam<std::tuple<size_t, CreateMode>> {};

TEST_P(NcclCollectivesTest, EveryOp_MatchesNaiveReductionOnEveryRank) {
  GRADSYNC_SKIP_UNLESS_GPUS(1);
  const size_t count = std::get<0>(GetParam());
  const CreateMode mode = std::get<1>(GetParam());
  const int n = TestRanks();
  MemoryStore store;
  NcclOptions options;
  options.job_id = "collectives-test";
  options.connect_timeout = absl::Seconds(60);
  options.timeout = absl::Seconds(60);
  absl::StatusOr<std::vector<std::unique_ptr<Communicator>>> comms =
      CreateComms(&store, n, mode, options);
  ASSERT_THAT(comms, IsOk());
  ASSERT_EQ(comms->size(), static_cast<size_t>(n));

  std::vector<RankResults> results(n);
  RunRanks(n, [&](int r) {
    Communicator* comm = (*comms)[r].get();
    EXPECT_EQ(comm->rank(), r);
    EXPECT_EQ(comm->size(), n);
    CheckAllReduce(comm, count, &results[r]);
    CheckInPlaceTypesAndAsync(comm, count, &results[r]);
    CheckReduceScatterAllGather(comm, count, &results[r]);
    CheckBroadcastAndBarrier(comm, count, &results[r]);
  });
  for (int r = 1; r < n; ++r) {
    for (const auto& [what, bytes] : results[0]) {
      EXPECT_TRUE(results[r][what] == bytes)
          << what << ": rank " << r << " differs bitwise from rank 0";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    CountsAndModes, NcclCollectivesTest,
    ::testing::Combine(::testing::Values<size_t>(0, 1, 3, 1023, (1 << 20) + 1),
                       ::testing::Values(CreateMode::kThreadPerRank,
                                         CreateMode::kInProcessGroup)),
    [](const auto& info) {
      return absl::StrCat("Count", std::get<0>(info.param), "_",
                          CreateModeName(std::get<1>(info.param)));
    });

}  // namespace
}  // namespace gradsync
