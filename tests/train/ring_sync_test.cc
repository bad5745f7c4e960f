// RingSync over real TCP communicators (ranks as threads): bucketed,
// overlapped all-reduces produce exactly the sum of the ranks' gradients
// (synthetic integer gradients, so the check is exact), every element is
// reduced once whatever the bucket size, scalars ride along, and a broken
// backward fails every rank instead of hanging.
#include "worker/train/ring_sync.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collectives/half.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/collectives/rank_group.h"
#include "tests/util/status_matchers.h"
#include "worker/model/synthetic.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::RankGroup;
using ::gradsync::testing::SmallPipelineOptions;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

absl::Time Deadline() { return absl::Now() + absl::Seconds(20); }

// Every rank runs `steps` synthetic backward passes with buckets of
// `bucket_bytes`; afterwards its gradient must equal the exact sum.
void RunExactSum(int world, size_t floats, size_t chunk, size_t bucket_bytes,
                 int steps) {
  SCOPED_TRACE(absl::StrCat("world ", world, ", floats ", floats, ", chunk ",
                            chunk, ", bucket bytes ", bucket_bytes));
  RankGroup group(world, SmallPipelineOptions());
  SyntheticConfig sc;
  sc.num_floats = floats;
  sc.chunk_floats = chunk;
  absl::StatusOr<SyntheticWorkload> work = SyntheticWorkload::Create(sc);
  ASSERT_THAT(work, IsOk());
  std::vector<absl::Status> status = group.Run([&](int r) -> absl::Status {
    std::vector<float> grads(floats);
    RingSyncOptions options;
    options.bucket_bytes = bucket_bytes;
    absl::StatusOr<std::unique_ptr<RingSync>> sync =
        RingSync::Create(&group.comm(r), absl::MakeSpan(grads), options);
    if (!sync.ok()) return sync.status();
    for (int step = 0; step < steps; ++step) {
      const absl::Time began = absl::Now();
      if (absl::Status s = (*sync)->BeginStep(step, 0); !s.ok()) return s;
      absl::Status s = work->Backward(
          r, step, absl::MakeSpan(grads), GradMode::kOverwrite,
          [&](size_t b, size_t e) { (*sync)->OnGradReady(b, e); });
      if (!s.ok()) return s;
      double scalars[2] = {static_cast<double>(r), 1.0};
      absl::StatusOr<SyncStats> stats =
          (*sync)->FinishStep(absl::MakeSpan(scalars), Deadline());
      if (!stats.ok()) return stats.status();
      EXPECT_EQ(scalars[0], world * (world - 1) / 2.0);
      EXPECT_EQ(scalars[1], static_cast<double>(world));
      EXPECT_EQ(stats->operations,
                static_cast<int64_t>((*sync)->bucketer().buckets().size()) + 1);
      EXPECT_EQ(stats->bytes_sent, stats->bytes_received);
      // algbw/busbw inputs: S is the whole gradient; the buckets' own
      // durations fit inside the step.
      EXPECT_EQ(stats->payload_bytes,
                static_cast<int64_t>(floats * sizeof(float)));
      EXPECT_DOUBLE_EQ(stats->bus_factor,
                       world > 1 ? 2.0 * (world - 1) / world : 0.0);
      EXPECT_GT(stats->busy, absl::ZeroDuration());
      EXPECT_LE(stats->busy, absl::Now() - began);
      if (world == 1) {
        EXPECT_EQ(stats->bytes_sent, 0);
      }
      size_t wrong = 0;
      for (size_t i = 0; i < floats; ++i) {
        if (grads[i] != SyntheticWorkload::ExpectedSum(world, step, i)) {
          if (wrong++ == 0) {
            ADD_FAILURE() << "rank " << r << " step " << step << " index " << i
                          << ": got " << grads[i] << ", want "
                          << SyntheticWorkload::ExpectedSum(world, step, i);
          }
        }
      }
      EXPECT_EQ(wrong, 0u) << "rank " << r << " step " << step;
    }
    return absl::OkStatus();
  });
  for (int r = 0; r < world; ++r) EXPECT_THAT(status[r], IsOk()) << r;
}

TEST(RingSyncTest, BucketedSum_IsExact_ForManyBucketSizes) {
  // Buckets smaller than, equal to, straddling and larger than the chunks.
  for (size_t bucket_bytes : {4, 28, 400, 4096, 1 << 20}) {
    RunExactSum(3, 1000, 64, bucket_bytes, 2);
  }
}

TEST(RingSyncTest, BucketedSum_IsExact_ForWorldSizes) {
  for (int world : {1, 2, 4, 5}) RunExactSum(world, 777, 100, 256, 3);
}

TEST(RingSyncTest, BucketedSum_LargeBuffer_RingAlgorithm) {
  // 1 MiB buckets above the halving-doubling threshold of the default
  // options would use the ring; SmallPipelineOptions pipelines in 4 KiB.
  RunExactSum(4, 600000, 1 << 16, 1 << 20, 1);
}

TEST(RingSyncTest, RingAllReduceBytes_FollowsTwoNMinusOneOverN) {
  EXPECT_EQ(RingAllReduceBytes(1000, 1), 0);
  EXPECT_EQ(RingAllReduceBytes(1000, 2), 1000);
  EXPECT_EQ(RingAllReduceBytes(1000, 4), 1500);
  EXPECT_EQ(RingAllReduceBytes(0, 4), 0);
}

TEST(RingSyncTest, Create_NullCommunicator_ReturnsInvalidArgument) {
  std::vector<float> grads(4);
  EXPECT_THAT(RingSync::Create(nullptr, absl::MakeSpan(grads), {}),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(RingSyncTest, FinishStep_WithoutBeginStep_ReturnsFailedPrecondition) {
  RankGroup group(1, SmallPipelineOptions());
  std::vector<float> grads(4);
  absl::StatusOr<std::unique_ptr<RingSync>> sync =
      RingSync::Create(&group.comm(0), absl::MakeSpan(grads), {});
  ASSERT_THAT(sync, IsOk());
  EXPECT_THAT((*sync)->FinishStep({}, Deadline()),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  ASSERT_THAT((*sync)->BeginStep(0, 0), IsOk());
  EXPECT_THAT((*sync)->BeginStep(1, 0),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

// Rank 1's backward "forgets" the first layer: it fails with INTERNAL and
// aborts, so rank 0, waiting for the missing bucket, fails promptly too.
TEST(RingSyncTest, IncompleteBackward_FailsEveryRankPromptly) {
  RankGroup group(2, SmallPipelineOptions());
  const absl::Time start = absl::Now();
  std::vector<absl::Status> status = group.Run([&](int r) -> absl::Status {
    std::vector<float> grads(100, 1.0f);
    RingSyncOptions options;
    options.bucket_bytes = 40 * 4;
    absl::StatusOr<std::unique_ptr<RingSync>> sync =
        RingSync::Create(&group.comm(r), absl::MakeSpan(grads), options);
    if (!sync.ok()) return sync.status();
    if (absl::Status s = (*sync)->BeginStep(7, 0); !s.ok()) return s;
    (*sync)->OnGradReady(50, 100);
    if (r == 0) (*sync)->OnGradReady(0, 50);
    return (*sync)->FinishStep({}, Deadline()).status();
  });
  EXPECT_THAT(status[1], StatusIs(absl::StatusCode::kInternal,
                                  HasSubstr("step 7: backward did not report "
                                            "every gradient element")));
  EXPECT_FALSE(status[0].ok());
  EXPECT_THAT(std::string(status[0].message()), HasSubstr("step 7"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

TEST(RingSyncTest, OverlappingRange_IsReportedByFinishStep) {
  RankGroup group(1, SmallPipelineOptions());
  std::vector<float> grads(10);
  absl::StatusOr<std::unique_ptr<RingSync>> sync =
      RingSync::Create(&group.comm(0), absl::MakeSpan(grads), {});
  ASSERT_THAT(sync, IsOk());
  ASSERT_THAT((*sync)->BeginStep(0, 0), IsOk());
  (*sync)->OnGradReady(5, 10);
  (*sync)->OnGradReady(4, 6);
  EXPECT_THAT(
      (*sync)->FinishStep({}, Deadline()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overlaps")));
}

TEST(RingSyncTest, AllReduceScalars_SumsAcrossRanks) {
  RankGroup group(3, SmallPipelineOptions());
  std::vector<absl::Status> status = group.Run([&](int r) -> absl::Status {
    std::vector<float> grads(4);
    absl::StatusOr<std::unique_ptr<RingSync>> sync =
        RingSync::Create(&group.comm(r), absl::MakeSpan(grads), {});
    if (!sync.ok()) return sync.status();
    double v[3] = {1.0, static_cast<double>(r), 0.5};
    if (absl::Status s =
            (*sync)->AllReduceScalars(absl::MakeSpan(v), Deadline());
        !s.ok()) {
      return s;
    }
    EXPECT_EQ(v[0], 3.0);
    EXPECT_EQ(v[1], 3.0);
    EXPECT_EQ(v[2], 1.5);
    return absl::OkStatus();
  });
  for (const absl::Status& s : status) EXPECT_THAT(s, IsOk());
}

// The hook runs once per bucket, in bucket order, before its all-reduce
// (the NCCL path orders the collective after backward there).
TEST(RingSyncTest, BeforeLaunch_RunsOncePerBucket) {
  RankGroup group(2, SmallPipelineOptions());
  std::vector<absl::Status> status = group.Run([&](int r) -> absl::Status {
    std::vector<float> grads(100, 1.0f);
    int calls = 0;
    RingSyncOptions options;
    options.bucket_bytes = 30 * 4;
    options.before_launch = [&calls]() {
      ++calls;
      return absl::OkStatus();
    };
    absl::StatusOr<std::unique_ptr<RingSync>> sync =
        RingSync::Create(&group.comm(r), absl::MakeSpan(grads), options);
    if (!sync.ok()) return sync.status();
    for (int step = 0; step < 2; ++step) {
      if (absl::Status s = (*sync)->BeginStep(step, 0); !s.ok()) return s;
      (*sync)->OnGradReady(50, 100);
      (*sync)->OnGradReady(0, 50);
      absl::StatusOr<SyncStats> stats = (*sync)->FinishStep({}, Deadline());
      if (!stats.ok()) return stats.status();
    }
    EXPECT_EQ(calls, 2 * 4) << "rank " << r;  // 4 buckets of <= 30 floats
    EXPECT_EQ(grads[0], 4.0f);                // summed twice over two ranks
    return absl::OkStatus();
  });
  for (const absl::Status& s : status) EXPECT_THAT(s, IsOk());
}

// A failing hook fails the step, naming the bucket, and aborts the
// communicator so that the peer waiting for that bucket fails promptly.
TEST(RingSyncTest, BeforeLaunchError_FailsTheStepNamingTheBucket) {
  RankGroup group(2, SmallPipelineOptions());
  const absl::Time start = absl::Now();
  std::vector<absl::Status> status = group.Run([&](int r) -> absl::Status {
    std::vector<float> grads(100, 1.0f);
    int calls = 0;
    RingSyncOptions options;
    options.bucket_bytes = 30 * 4;
    options.before_launch = [&calls, r]() {
      if (r == 1 && ++calls == 2) {
        return absl::InternalError("cudaStreamWaitEvent failed");
      }
      return absl::OkStatus();
    };
    absl::StatusOr<std::unique_ptr<RingSync>> sync =
        RingSync::Create(&group.comm(r), absl::MakeSpan(grads), options);
    if (!sync.ok()) return sync.status();
    if (absl::Status s = (*sync)->BeginStep(4, 0); !s.ok()) return s;
    (*sync)->OnGradReady(0, 100);
    return (*sync)->FinishStep({}, Deadline()).status();
  });
  EXPECT_THAT(status[1],
              StatusIs(absl::StatusCode::kInternal,
                       AllOf(HasSubstr("step 4: ordering bucket 1"),
                             HasSubstr("cudaStreamWaitEvent failed"))));
  EXPECT_FALSE(status[0].ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

// A caller's 16-bit staging (the NCCL path's device buffer and kernels)
// replaces the host's: each bucket is rounded through it before
// before_launch and widened through it after its all-reduce, and the sum
// arrives exactly. (Host lambdas here; tests/gpu runs the CUDA ones.)
TEST(RingSyncTest, WireStaging_NarrowsBeforeLaunch_WidensAfterTheSum) {
  RankGroup group(2, SmallPipelineOptions());
  std::vector<absl::Status> status = group.Run([&](int r) -> absl::Status {
    std::vector<float> grads(100, 3.0f);
    std::vector<uint16_t> staging(grads.size());
    std::string log;
    RingSyncOptions options;
    options.bucket_bytes = 30 * 4;
    options.wire_type = DataType::kBFloat16;
    options.before_launch = [&log]() {
      log += 'b';
      return absl::OkStatus();
    };
    options.wire_staging.buffer = staging.data();
    options.wire_staging.narrow = [&](const float* from, uint16_t* to,
                                      size_t n) {
      EXPECT_EQ(to - staging.data(), from - grads.data());
      log += 'n';
      FloatsToBFloat16(from, to, n);
      return absl::OkStatus();
    };
    options.wire_staging.widen = [&](const uint16_t* from, float* to,
                                     size_t n) {
      log += 'w';
      BFloat16ToFloats(from, to, n);
      return absl::OkStatus();
    };
    absl::StatusOr<std::unique_ptr<RingSync>> sync =
        RingSync::Create(&group.comm(r), absl::MakeSpan(grads), options);
    if (!sync.ok()) return sync.status();
    if (absl::Status s = (*sync)->BeginStep(0, 0); !s.ok()) return s;
    (*sync)->OnGradReady(0, 100);
    absl::StatusOr<SyncStats> stats = (*sync)->FinishStep({}, Deadline());
    if (!stats.ok()) return stats.status();
    EXPECT_EQ(log, "nbnbnbnbwwww") << "rank " << r;  // 4 buckets
    for (size_t i = 0; i < grads.size(); ++i) {
      EXPECT_EQ(grads[i], 6.0f) << "rank " << r << " at index " << i;
    }
    return absl::OkStatus();
  });
  for (const absl::Status& s : status) EXPECT_THAT(s, IsOk());
}

TEST(RingSyncTest, WireStaging_InPart_ReturnsInvalidArgument) {
  RankGroup group(1, SmallPipelineOptions());
  std::vector<float> grads(10);
  std::vector<uint16_t> staging(grads.size());
  RingSyncOptions options;
  options.wire_type = DataType::kFloat16;
  options.wire_staging.buffer = staging.data();
  EXPECT_THAT(RingSync::Create(&group.comm(0), absl::MakeSpan(grads), options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("buffer, narrow and widen together")));
}

// A failing rounding (a kernel launch) fails the step, naming the bucket.
TEST(RingSyncTest, WireStagingError_FailsTheStepNamingTheBucket) {
  RankGroup group(1, SmallPipelineOptions());
  std::vector<float> grads(10, 1.0f);
  std::vector<uint16_t> staging(grads.size());
  RingSyncOptions options;
  options.wire_type = DataType::kFloat16;
  options.wire_staging.buffer = staging.data();
  options.wire_staging.narrow = [](const float*, uint16_t*, size_t) {
    return absl::InternalError("16-bit rounding kernel: launch failed");
  };
  options.wire_staging.widen = [](const uint16_t*, float*, size_t) {
    return absl::OkStatus();
  };
  absl::StatusOr<std::unique_ptr<RingSync>> sync =
      RingSync::Create(&group.comm(0), absl::MakeSpan(grads), options);
  ASSERT_THAT(sync.status(), IsOk());
  ASSERT_THAT((*sync)->BeginStep(7, 0), IsOk());
  (*sync)->OnGradReady(0, 10);
  EXPECT_THAT(
      (*sync)->FinishStep({}, Deadline()).status(),
      StatusIs(absl::StatusCode::kInternal,
               AllOf(HasSubstr("step 7: rounding bucket 0"),
                     HasSubstr("to half"), HasSubstr("launch failed"))));
}

// With a scalar communicator, the step's scalars and the switch requests
// travel there, not over the gradient communicator: the device ring sums
// host scalars over TCP while NCCL reduces the device buckets.
TEST(RingSyncTest, ScalarComm_CarriesTheScalars) {
  RankGroup gradients(2, SmallPipelineOptions());
  RankGroup scalars(2, SmallPipelineOptions());
  std::vector<absl::Status> status = gradients.Run([&](int r) -> absl::Status {
    std::vector<float> grads(10, 1.0f + r);
    RingSyncOptions options;
    options.scalar_comm = &scalars.comm(r);
    absl::StatusOr<std::unique_ptr<RingSync>> sync =
        RingSync::Create(&gradients.comm(r), absl::MakeSpan(grads), options);
    if (!sync.ok()) return sync.status();
    if (absl::Status s = (*sync)->BeginStep(0, r == 1 ? 6 : 0); !s.ok()) {
      return s;
    }
    (*sync)->OnGradReady(0, 10);
    double loss[1] = {r + 0.5};
    absl::StatusOr<SyncStats> stats =
        (*sync)->FinishStep(absl::MakeSpan(loss), Deadline());
    if (!stats.ok()) return stats.status();
    EXPECT_EQ(grads[3], 3.0f);
    EXPECT_EQ(loss[0], 2.0);
    EXPECT_EQ(stats->switch_epoch, 6);
    EXPECT_EQ(stats->switch_step, 1);
    // The gradient communicator is gone; scalars still reduce.
    gradients.comm(r).Abort(absl::CancelledError("gradients done"));
    double v[1] = {1.0};
    if (absl::Status s =
            (*sync)->AllReduceScalars(absl::MakeSpan(v), Deadline());
        !s.ok()) {
      return s;
    }
    EXPECT_EQ(v[0], 2.0);
    return absl::OkStatus();
  });
  for (const absl::Status& s : status) EXPECT_THAT(s, IsOk());
}

}  // namespace
}  // namespace gradsync
