// PsClient::StartStep / PsStep over real gRPC on 127.0.0.1:0: exactly the
// parameters of PushPull when backward reports buckets end first; streams
// that start before the whole range is ready; the step control of shard
// 0's reply; cancellation, bad calls and dead servers ending the step
// promptly with the shard and its address named.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/client/ps_admin_client.h"
#include "server/ps/client/ps_client.h"
#include "server/ps/daemon/ps_server.h"
#include "tests/ps/ps_grpc_test_util.h"
#include "tests/ps/ps_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::Eventually;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::MakeClient;
using ::gradsync::testing::StartServer;
using ::gradsync::testing::StartServers;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Rank r's integer gradient of step t.
std::vector<float> IntegerGradient(size_t n, int rank, int64_t step) {
  std::vector<float> g(n);
  for (size_t i = 0; i < n; ++i) {
    g[i] =
        static_cast<float>(static_cast<int64_t>(i % 7) + 3 * rank - 2 * step);
  }
  return g;
}

// Marks [0, total) ready bucket by bucket, the last bucket first (the
// order backward finishes them).
void ReadyReverse(PsStep& step, size_t total, size_t bucket) {
  size_t end = total;
  while (end > 0) {
    const size_t begin = end > bucket ? end - bucket : 0;
    step.Ready(begin, end);
    end = begin;
  }
}

// The bytes the shard took so far.
int64_t BytesIn(const std::string& address, const std::string& job, int shard) {
  absl::StatusOr<std::vector<ps::ShardStats>> stats =
      PsAdminClient::Connect(address)->GetShardStats(job, shard);
  return stats.ok() && stats->size() == 1 ? (*stats)[0].bytes_in() : -1;
}

// The shards took nothing of the failed attempts: the rank pushes step 0
// of gradient `grads` (ones) again and gets -1 everywhere, once the servers
// noticed the cancelled streams.
void ExpectStepZeroGoesThrough(PsClient& client,
                               const std::vector<float>& grads, size_t total) {
  std::vector<float> params(total);
  absl::Status again;
  for (int i = 0; i < 100; ++i) {
    again = client.PushPull(0, grads, absl::MakeSpan(params));
    if (again.code() != absl::StatusCode::kAlreadyExists) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(params, std::vector<float>(total, -1.0f));
}

class PsStepTest : public ::testing::Test {
 protected:
  // `num_servers` servers holding one shard each of job `job`.
  void StartShards(const std::string& job, int num_servers, size_t total,
                   int workers) {
    ASSERT_TRUE(StartServers(num_servers, &servers_, &addresses_));
    CreateShards(job, total, workers);
  }
  void CreateShards(const std::string& job, size_t total, int workers) {
    ASSERT_THAT(testing::CreateShards(addresses_, job, total, workers), IsOk());
  }

  std::vector<std::unique_ptr<PsServer>> servers_;
  std::vector<std::string> addresses_;
};

TEST_F(PsStepTest, ReadyInReverseBuckets_ExactlyThePushPullParameters) {
  constexpr int kWorkers = 3;
  constexpr size_t kTotal = 1001;    // shards of 501 and 500
  constexpr size_t kChunk = 13 * 4;  // divides neither shard nor bucket
  constexpr size_t kBucket = 97;
  StartShards("stream", 2, kTotal, kWorkers);
  CreateShards("reference", kTotal, kWorkers);
  std::vector<std::vector<float>> streamed(kWorkers), reference(kWorkers);
  std::vector<std::vector<PsStepResult>> results(kWorkers);
  std::vector<absl::Status> statuses(kWorkers);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorkers; ++r) {
    ranks.emplace_back([&, r]() {
      std::unique_ptr<PsClient> a =
          MakeClient("stream", r, kTotal, addresses_, kChunk);
      std::unique_ptr<PsClient> b =
          MakeClient("reference", r, kTotal, addresses_, kChunk);
      std::vector<float> pa(kTotal), pb(kTotal);
      for (int64_t t = 0; t < 3 && statuses[r].ok(); ++t) {
        const std::vector<float> grads = IntegerGradient(kTotal, r, t);
        PsStepControl control;
        control.scalars = {static_cast<double>(r) + 0.5, 1.0};
        absl::StatusOr<std::unique_ptr<PsStep>> step =
            a->StartStep(t, grads, absl::MakeSpan(pa), control);
        if (!step.ok()) {
          statuses[r] = step.status();
          break;
        }
        ReadyReverse(**step, kTotal, kBucket);
        absl::StatusOr<PsStepResult> result =
            (*step)->Finish(absl::Now() + absl::Seconds(30));
        if (!result.ok()) {
          statuses[r] = result.status();
          break;
        }
        results[r].push_back(*result);
        statuses[r] = b->PushPull(t, grads, absl::MakeSpan(pb));
      }
      streamed[r] = pa;
      reference[r] = pb;
      EXPECT_EQ(a->last_versions(), (std::vector<int64_t>{3, 3}));
      EXPECT_EQ(a->stats().bytes_sent, 3 * kTotal * sizeof(float));
      EXPECT_EQ(a->stats().bytes_received, 3 * kTotal * sizeof(float));
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < kWorkers; ++r) {
    ASSERT_THAT(statuses[r], IsOk()) << "rank " << r;
    ASSERT_EQ(results[r].size(), 3u);
    for (size_t i = 0; i < kTotal; ++i) {
      ASSERT_EQ(std::memcmp(&streamed[r][i], &reference[r][i], 4), 0)
          << "rank " << r << " at index " << i << ": " << streamed[r][i]
          << " vs " << reference[r][i];
      // Mean per step (i % 7) + 3 - 2t; over steps 0..2: 3 (i % 7) + 3.
      ASSERT_EQ(streamed[r][i], -3.0f * static_cast<float>(i % 7) - 3.0f)
          << "rank " << r << " at index " << i;
    }
    for (int64_t t = 0; t < 3; ++t) {
      const PsStepResult& result = results[r][static_cast<size_t>(t)];
      EXPECT_THAT(result.scalar_sums, ElementsAre(4.5, 3.0));
      EXPECT_EQ(result.version, t + 1);
      EXPECT_EQ(result.bytes_sent, kTotal * sizeof(float));
      EXPECT_EQ(result.bytes_received, kTotal * sizeof(float));
      EXPECT_GT(result.busy, absl::ZeroDuration());
    }
  }
}

TEST_F(PsStepTest, PartlyReady_StreamsTheReadyEndBeforeTheRest) {
  constexpr size_t kTotal = 1000;  // shards [0, 500) and [500, 1000)
  servers_.push_back(StartServer());
  ASSERT_NE(servers_.back(), nullptr);
  addresses_ = {servers_[0]->address(), servers_[0]->address()};
  CreateShards("overlap", kTotal, 1);
  std::unique_ptr<PsClient> client =
      MakeClient("overlap", 0, kTotal, addresses_, 64);
  // As backward: an element's gradient is written just before it is marked
  // ready; until then it holds a value that no shard may ever see (a push
  // of it would show in the parameters).
  std::vector<float> grads(kTotal, 1000.0f), params(kTotal);
  const absl::Time started = absl::Now();
  absl::StatusOr<std::unique_ptr<PsStep>> step =
      client->StartStep(0, grads, absl::MakeSpan(params));
  ASSERT_THAT(step, IsOk());
  auto ready = [&](size_t begin, size_t end) {
    std::fill(grads.begin() + begin, grads.begin() + end, 1.0f);
    (*step)->Ready(begin, end);
  };
  // Backward's first bucket: shard 1 streams it while the rest is pending.
  ready(900, 1000);
  EXPECT_TRUE(Eventually([&]() {
    return BytesIn(addresses_[0], "overlap", 1) == 400;
  })) << BytesIn(addresses_[0], "overlap", 1);
  EXPECT_EQ(BytesIn(addresses_[0], "overlap", 0), 0);
  // A bucket across the shards' boundary feeds both.
  ready(450, 900);
  EXPECT_TRUE(Eventually([&]() {
    return BytesIn(addresses_[0], "overlap", 1) == 2000 &&
           BytesIn(addresses_[0], "overlap", 0) == 200;
  }));
  // An island below a gap waits for the gap: the bucket just below the
  // sent part, marked ready after the island, goes; the island does not
  // (nor anything below it: the shard refuses chunks with gaps between
  // them, and the gap's elements are not written yet).
  ready(0, 100);
  ready(400, 450);
  EXPECT_TRUE(Eventually([&]() {
    return BytesIn(addresses_[0], "overlap", 0) >= 400;
  })) << BytesIn(addresses_[0], "overlap", 0);
  EXPECT_EQ(BytesIn(addresses_[0], "overlap", 0), 400);
  // Backward takes a while for the rest.
  constexpr absl::Duration kBackward = absl::Milliseconds(300);
  absl::SleepFor(kBackward);
  ready(100, 400);
  absl::StatusOr<PsStepResult> result =
      (*step)->Finish(absl::Now() + absl::Seconds(10));
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(params, std::vector<float>(kTotal, -1.0f));
  // Busy time leaves out waiting for backward's next bucket: shard 0 was
  // idle for the pause (shard 1 had all its bytes and soon its reply).
  EXPECT_GT(result->busy, absl::ZeroDuration());
  EXPECT_LE(result->busy, absl::Now() - started - kBackward / 2);
}

TEST_F(PsStepTest, StepControl_SwitchDecisionFromTheStepsPushes) {
  constexpr size_t kTotal = 10;
  StartShards("control", 2, kTotal, 2);
  std::vector<PsStepResult> results(2);
  std::vector<absl::Status> statuses(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r]() {
      std::unique_ptr<PsClient> client =
          MakeClient("control", r, kTotal, addresses_);
      std::vector<float> grads(kTotal, 1.0f), params(kTotal);
      PsStepControl control;
      control.scalars = {r == 0 ? 1.5 : 2.5};
      control.switch_epoch = r == 0 ? 0 : 3;
      absl::StatusOr<std::unique_ptr<PsStep>> step =
          client->StartStep(0, grads, absl::MakeSpan(params), control);
      statuses[r] = step.status();
      if (!step.ok()) return;
      (*step)->Ready(0, kTotal);
      absl::StatusOr<PsStepResult> result =
          (*step)->Finish(absl::Now() + absl::Seconds(10));
      statuses[r] = result.status();
      if (result.ok()) results[r] = *result;
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_THAT(statuses[r], IsOk()) << "rank " << r;
    EXPECT_THAT(results[r].scalar_sums, ElementsAre(4.0)) << "rank " << r;
    EXPECT_EQ(results[r].switch_epoch, 3) << "rank " << r;
    EXPECT_EQ(results[r].switch_step, 1) << "rank " << r;
  }
}

TEST_F(PsStepTest, Cancel_FinishReturnsTheReasonPromptly) {
  constexpr size_t kTotal = 100;
  StartShards("cancel", 1, kTotal, 2);  // rank 1 never comes
  std::unique_ptr<PsClient> client =
      MakeClient("cancel", 0, kTotal, addresses_);
  std::vector<float> grads(kTotal, 1.0f), params(kTotal);
  absl::StatusOr<std::unique_ptr<PsStep>> step =
      client->StartStep(0, grads, absl::MakeSpan(params));
  ASSERT_THAT(step, IsOk());
  (*step)->Ready(0, kTotal);
  std::thread canceller([&]() {
    absl::SleepFor(absl::Milliseconds(200));
    (*step)->Cancel(absl::AbortedError("job cancelled by the user"));
  });
  const absl::Time start = absl::Now();
  EXPECT_THAT((*step)->Finish(absl::Now() + absl::Seconds(60)),
              StatusIs(absl::StatusCode::kAborted,
                       AllOf(HasSubstr("job cancelled by the user"),
                             HasSubstr("rank 0, step 0"))));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  canceller.join();
  EXPECT_THAT((*step)->Finish(absl::Now()),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  step->reset();
  // The client takes the next call.
  EXPECT_THAT(client->StartStep(1, grads, absl::MakeSpan(params)), IsOk());
}

// Scalars known only after backward ride to shard 0 in a trailer and come
// back summed in rank order (values where another order rounds otherwise).
TEST_F(PsStepTest, LateScalars_SummedInRankOrderByShardZero) {
  constexpr size_t kTotal = 10;
  constexpr int kWorkers = 3;
  StartShards("late", 2, kTotal, kWorkers);
  const std::vector<double> values = {1e16, 1.0, -1e16};
  std::vector<PsStepResult> results(kWorkers);
  std::vector<absl::Status> statuses(kWorkers);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorkers; ++r) {
    ranks.emplace_back([&, r]() {
      std::unique_ptr<PsClient> client =
          MakeClient("late", r, kTotal, addresses_);
      std::vector<float> grads(kTotal, 1.0f), params(kTotal);
      PsStepControl control;
      control.late_scalars = 2;
      absl::StatusOr<std::unique_ptr<PsStep>> step =
          client->StartStep(0, grads, absl::MakeSpan(params), control);
      statuses[r] = step.status();
      if (!step.ok()) return;
      ReadyReverse(**step, kTotal, 3);
      (*step)->SetScalars({values[static_cast<size_t>(r)], 1.0});
      absl::StatusOr<PsStepResult> result =
          (*step)->Finish(absl::Now() + absl::Seconds(10));
      statuses[r] = result.status();
      if (result.ok()) results[r] = *result;
      // The shards apply the mean (lr 1): -1 everywhere.
      EXPECT_EQ(params, std::vector<float>(kTotal, -1.0f)) << "rank " << r;
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < kWorkers; ++r) {
    ASSERT_THAT(statuses[r], IsOk()) << "rank " << r;
    // (1e16 + 1) - 1e16 = 0 in doubles; any other order gives 1.
    EXPECT_THAT(results[r].scalar_sums, ElementsAre(0.0, 3.0)) << "rank " << r;
  }
}

TEST_F(PsStepTest, LateScalars_MisusedCallsEndTheStepPromptly) {
  constexpr size_t kTotal = 10;
  StartShards("late-bad", 1, kTotal, 1);
  std::unique_ptr<PsClient> client =
      MakeClient("late-bad", 0, kTotal, addresses_);
  std::vector<float> grads(kTotal, 1.0f), params(kTotal);
  PsStepControl both;
  both.scalars = {1.0};
  both.late_scalars = 1;
  EXPECT_THAT(
      client->StartStep(0, grads, absl::MakeSpan(params), both),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not both")));
  PsStepControl late;
  late.late_scalars = 2;
  struct Misuse {
    bool late;                   // started with late scalars
    std::vector<double> values;  // given to SetScalars (none: not called)
    absl::StatusCode code;
    const char* why;
  };
  for (const Misuse& m :
       {Misuse{true,
               {1.0},
               absl::StatusCode::kInvalidArgument,
               "SetScalars got 1 scalars, but the step was started for 2"},
        Misuse{true,
               {},
               absl::StatusCode::kFailedPrecondition,
               "before SetScalars gave the step's 2 late scalars"},
        Misuse{false,
               {1.0},
               absl::StatusCode::kFailedPrecondition,
               "without late_scalars"}}) {
    absl::StatusOr<std::unique_ptr<PsStep>> step = client->StartStep(
        0, grads, absl::MakeSpan(params), m.late ? late : PsStepControl());
    ASSERT_THAT(step, IsOk());
    (*step)->Ready(0, kTotal);
    if (!m.values.empty()) (*step)->SetScalars(m.values);
    const absl::Time start = absl::Now();
    EXPECT_THAT((*step)->Finish(absl::Now() + absl::Seconds(30)),
                StatusIs(m.code, HasSubstr(m.why)));
    EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  }
  // The shard took none of it: step 0 goes through now.
  ExpectStepZeroGoesThrough(*client, grads, kTotal);
}

TEST_F(PsStepTest, BadCalls_RefusedAndTheShardTakesNothing) {
  constexpr size_t kTotal = 300;
  StartShards("bad", 2, kTotal, 1);
  std::unique_ptr<PsClient> client = MakeClient("bad", 0, kTotal, addresses_);
  std::vector<float> grads(kTotal, 1.0f), params(kTotal);
  EXPECT_THAT(client->StartStep(0, absl::MakeConstSpan(grads).subspan(1),
                                absl::MakeSpan(params)),
              StatusIs(absl::StatusCode::kInvalidArgument));
  std::vector<float> both(kTotal + 10);
  EXPECT_THAT(
      client->StartStep(0, absl::MakeConstSpan(both).subspan(0, kTotal),
                        absl::MakeSpan(both).subspan(10, kTotal)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overlap")));

  absl::StatusOr<std::unique_ptr<PsStep>> step =
      client->StartStep(0, grads, absl::MakeSpan(params));
  ASSERT_THAT(step, IsOk());
  EXPECT_THAT(
      client->StartStep(0, grads, absl::MakeSpan(params)),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("in flight")));
  // Bad Ready ranges end the step; Finish says why, at once.
  struct BadReady {
    size_t begin, end;
    const char* why;
  };
  for (const BadReady& bad : {BadReady{250, 260, "overlaps [200, 300)"},
                              BadReady{150, 201, "overlaps [200, 300)"},
                              BadReady{290, 301, "inside the gradient"},
                              BadReady{5, 5, "non-empty"}}) {
    if (*step == nullptr) {
      step = client->StartStep(0, grads, absl::MakeSpan(params));
      ASSERT_THAT(step, IsOk());
    }
    (*step)->Ready(200, 300);
    (*step)->Ready(bad.begin, bad.end);
    (*step)->Ready(0, 200);  // too late: the step is cancelled
    const absl::Time start = absl::Now();
    EXPECT_THAT((*step)->Finish(absl::Now() + absl::Seconds(30)),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(bad.why), HasSubstr("step 0"))))
        << bad.why;
    EXPECT_LT(absl::Now() - start, absl::Seconds(3));
    step->reset();
  }
  step = client->StartStep(0, grads, absl::MakeSpan(params));
  ASSERT_THAT(step, IsOk());
  (*step)->Ready(200, 300);
  const absl::Time start = absl::Now();
  EXPECT_THAT((*step)->Finish(absl::Now() + absl::Seconds(30)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("elements [0, 200) were marked ready")));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  step->reset();
  // Neither shard applied anything.
  ExpectStepZeroGoesThrough(*client, grads, kTotal);
}

TEST_F(PsStepTest, ServerShutDownMidStep_FailsPromptlyNamingTheShard) {
  constexpr size_t kTotal = 1000;
  StartShards("down", 2, kTotal, 2);
  std::unique_ptr<PsClient> client =
      MakeClient("down", 0, kTotal, addresses_, 64);
  std::vector<float> grads(kTotal, 1.0f), params(kTotal);
  absl::StatusOr<std::unique_ptr<PsStep>> step =
      client->StartStep(0, grads, absl::MakeSpan(params));
  ASSERT_THAT(step, IsOk());
  (*step)->Ready(750, 1000);
  ASSERT_TRUE(
      Eventually([&]() { return BytesIn(addresses_[1], "down", 1) == 1000; }));
  servers_[1]->Shutdown();
  (*step)->Ready(0, 750);
  const absl::Time start = absl::Now();
  absl::StatusOr<PsStepResult> result =
      (*step)->Finish(absl::Now() + absl::Seconds(60));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << result.status();
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(),
              HasSubstr(absl::StrCat("ps shard 1 at ", addresses_[1])));
  EXPECT_THAT(result.status().message(), HasSubstr("rank 0, step 0"));
}

TEST_F(PsStepTest, NoServer_UnavailableNamingTheAddress) {
  std::string address;
  {
    std::unique_ptr<PsServer> gone = StartServer();
    ASSERT_NE(gone, nullptr);
    address = gone->address();
  }
  std::unique_ptr<PsClient> client = MakeClient("none", 0, 10, {address});
  std::vector<float> grads(10), params(10);
  absl::StatusOr<std::unique_ptr<PsStep>> step =
      client->StartStep(0, grads, absl::MakeSpan(params));
  ASSERT_THAT(step, IsOk());
  (*step)->Ready(0, 10);
  const absl::Time start = absl::Now();
  EXPECT_THAT((*step)->Finish(absl::Now() + absl::Seconds(60)),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr(absl::StrCat("ps shard 0 at ", address)),
                             HasSubstr("may be down"))));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

// BytePS's partitions: 2 servers' slices in partitions of 48 floats (7 per
// server, the last shorter), which take turns per server. Every rank ends
// each step with exactly the parameters of one shard per server, and the
// turns cannot deadlock with ranks of one server at different partitions.
TEST_F(PsStepTest, Partitions_SameParametersAsOneShardPerServer) {
  constexpr int kWorkers = 3;
  constexpr size_t kTotal = 661;
  constexpr size_t kPartitionBytes = 48 * sizeof(float);
  ASSERT_TRUE(StartServers(2, &servers_, &addresses_));
  const std::vector<std::string> partitioned =
      PartitionAddresses(kTotal, addresses_, kPartitionBytes);
  ASSERT_EQ(partitioned.size(), 14u);  // ceil(331 / 48) = 7 per server
  EXPECT_EQ(partitioned[6], addresses_[0]);
  EXPECT_EQ(partitioned[7], addresses_[1]);
  ASSERT_THAT(testing::CreateShards(partitioned, "parts", kTotal, kWorkers),
              IsOk());
  ASSERT_THAT(testing::CreateShards(addresses_, "whole", kTotal, kWorkers),
              IsOk());
  std::vector<std::vector<float>> parts(kWorkers), whole(kWorkers);
  std::vector<absl::Status> statuses(kWorkers);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorkers; ++r) {
    ranks.emplace_back([&, r]() {
      std::unique_ptr<PsClient> a = MakeClient("parts", r, kTotal, partitioned,
                                               /*chunk_bytes=*/20 * 4);
      std::unique_ptr<PsClient> b = MakeClient("whole", r, kTotal, addresses_);
      EXPECT_EQ(a->num_servers(), 2);
      EXPECT_EQ(a->num_shards(), 14u);
      std::vector<float> pa(kTotal), pb(kTotal);
      for (int64_t t = 0; t < 4 && statuses[r].ok(); ++t) {
        const std::vector<float> grads = IntegerGradient(kTotal, r, t);
        absl::StatusOr<std::unique_ptr<PsStep>> step =
            a->StartStep(t, grads, absl::MakeSpan(pa), PsStepControl());
        if (!step.ok()) {
          statuses[r] = step.status();
          break;
        }
        ReadyReverse(**step, kTotal, 50);
        absl::StatusOr<PsStepResult> result =
            (*step)->Finish(absl::Now() + absl::Seconds(30));
        statuses[r] = result.status();
        if (statuses[r].ok()) {
          // PushPull takes the partitioned path too.
          statuses[r] = b->PushPull(t, grads, absl::MakeSpan(pb));
        }
      }
      parts[r] = pa;
      whole[r] = pb;
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < kWorkers; ++r) {
    ASSERT_THAT(statuses[r], IsOk()) << "rank " << r;
    for (size_t i = 0; i < kTotal; ++i) {
      ASSERT_EQ(std::memcmp(&parts[r][i], &whole[r][i], 4), 0)
          << "rank " << r << " at index " << i << ": " << parts[r][i] << " vs "
          << whole[r][i];
      ASSERT_EQ(std::memcmp(&parts[r][i], &parts[0][i], 4), 0)
          << "rank " << r << " differs from rank 0 at index " << i;
    }
  }
}

// A server's partitions share a writer and a reader thread (ps_step.h).
// With rank 1 absent, rank 0's writer stops at the credit (four partitions
// pushed, none answered); a Cancel then ends every partition promptly.
TEST_F(PsStepTest, Partitions_CancelWhileWaitingForCredit_EndsPromptly) {
  constexpr size_t kTotal = 1000;
  constexpr size_t kPartitionBytes = 40 * sizeof(float);
  ASSERT_TRUE(StartServers(2, &servers_, &addresses_));
  const std::vector<std::string> partitioned =
      PartitionAddresses(kTotal, addresses_, kPartitionBytes);
  ASSERT_EQ(partitioned.size(), 26u);  // 13 per server
  ASSERT_THAT(testing::CreateShards(partitioned, "credit", kTotal, 2), IsOk());
  std::unique_ptr<PsClient> client =
      MakeClient("credit", 0, kTotal, partitioned);
  std::vector<float> grads(kTotal, 1.0f), params(kTotal);
  absl::StatusOr<std::unique_ptr<PsStep>> step =
      client->StartStep(0, grads, absl::MakeSpan(params));
  ASSERT_THAT(step, IsOk());
  (*step)->Ready(0, kTotal);
  // Each server's writer pushed its last four partitions and now waits for
  // the first one's reply before the fifth (server 0: partition 12's before
  // partition 8); held there, partition 8 has none of its bytes.
  ASSERT_TRUE(Eventually([&]() { return client->stats().credit_waits == 2; }))
      << client->stats().credit_waits;
  EXPECT_EQ(BytesIn(addresses_[0], "credit", 8), 0);
  EXPECT_TRUE(Eventually([&]() {
    return BytesIn(addresses_[0], "credit", 12) > 0 &&
           BytesIn(addresses_[0], "credit", 9) > 0;
  }));
  std::thread canceller([&]() {
    absl::SleepFor(absl::Milliseconds(100));
    (*step)->Cancel(absl::AbortedError("job cancelled by the user"));
  });
  const absl::Time start = absl::Now();
  EXPECT_THAT((*step)->Finish(absl::Now() + absl::Seconds(60)),
              StatusIs(absl::StatusCode::kAborted,
                       HasSubstr("job cancelled by the user")));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  canceller.join();
  step->reset();
  EXPECT_THAT(client->StartStep(1, grads, absl::MakeSpan(params)), IsOk());
}

// A partitioned server that goes away mid-step fails the step within the
// connect deadline, naming one of its partitions and its address.
TEST_F(PsStepTest, Partitions_ServerShutDownMidStep_FailsNamingIt) {
  constexpr size_t kTotal = 1000;
  constexpr size_t kPartitionBytes = 100 * sizeof(float);
  ASSERT_TRUE(StartServers(2, &servers_, &addresses_));
  const std::vector<std::string> partitioned =
      PartitionAddresses(kTotal, addresses_, kPartitionBytes);
  ASSERT_EQ(partitioned.size(), 10u);
  ASSERT_THAT(testing::CreateShards(partitioned, "gone", kTotal, 1), IsOk());
  std::unique_ptr<PsClient> client =
      MakeClient("gone", 0, kTotal, partitioned, 64);
  std::vector<float> grads(kTotal, 1.0f), params(kTotal);
  absl::StatusOr<std::unique_ptr<PsStep>> step =
      client->StartStep(0, grads, absl::MakeSpan(params));
  ASSERT_THAT(step, IsOk());
  // Server 1's partitions (elements 500 and up) go; server 0's wait for
  // backward.
  (*step)->Ready(500, kTotal);
  ASSERT_TRUE(
      Eventually([&]() { return BytesIn(addresses_[1], "gone", 5) == 400; }));
  servers_[0]->Shutdown();
  (*step)->Ready(0, 500);
  const absl::Time start = absl::Now();
  absl::StatusOr<PsStepResult> result =
      (*step)->Finish(absl::Now() + absl::Seconds(60));
  // Server 0's partitions start their streams after it went away: the
  // first finds it unreachable (ConnectChannel's retries, about 4 s, as in
  // NoServer_UnavailableNamingTheAddress), the rest then fail at once.
  EXPECT_LT(absl::Now() - start, absl::Seconds(10)) << result.status();
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(),
              AllOf(HasSubstr(absl::StrCat(" at ", addresses_[0])),
                    HasSubstr("rank 0, step 0")));
}

TEST(PartitionsTest, EveryServerGetsTheSameNumberOfContiguousPartitions) {
  const std::vector<std::string> servers = {"a:1", "b:1", "c:1"};
  // 1000 floats: slices of 334/333/333; 100-float partitions: 4 each.
  absl::StatusOr<std::vector<PsShardLocation>> shards =
      PartitionedShardLocations(1000, servers, 100 * sizeof(float));
  ASSERT_THAT(shards, IsOk());
  ASSERT_EQ(shards->size(), 12u);
  size_t next = 0;
  for (size_t k = 0; k < shards->size(); ++k) {
    EXPECT_EQ((*shards)[k].address, servers[k / 4]) << "shard " << k;
    EXPECT_EQ((*shards)[k].shard, static_cast<int>(k));
    EXPECT_EQ((*shards)[k].begin, next);
    next = (*shards)[k].end;
  }
  EXPECT_EQ(next, 1000u);
  EXPECT_EQ(ServerCount(*shards), 3);
  // 0: one shard per server; larger than a slice: one too.
  EXPECT_EQ(PartitionAddresses(1000, servers, 0), servers);
  EXPECT_EQ(PartitionAddresses(1000, servers, 1 << 20), servers);
  // Never an empty partition: 5 floats on 2 servers in 1-float pieces.
  EXPECT_EQ(PartitionAddresses(5, {"a:1", "b:1"}, 4).size(), 4u);
}

}  // namespace
}  // namespace gradsync
