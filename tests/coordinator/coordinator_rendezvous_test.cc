// CoordinatorService rendezvous: the store scoped to (job, generation) and
// to the job's own workers, and barriers that name the missing ranks.
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "collectives/host_placement.h"
#include "collectives/subgroup_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/coordinator/coordinator_service.h"
#include "tests/coordinator/coordinator_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kLong = absl::Seconds(10);

// Three ranks: 0 and 1 on w-1 (host-a), 2 on w-2 (host-b); w-3 idle.
class RendezvousTest : public ThreeRankJobTest {
 protected:
  [[nodiscard]] absl::Status Set(const std::string& worker,
                                 const std::string& key,
                                 const std::string& value,
                                 int64_t generation = 1) {
    StoreSetRequest request;
    *request.mutable_scope() = Scope(worker, job_, generation);
    request.set_key(key);
    request.set_value(value);
    return service_->StoreSet(request);
  }

  [[nodiscard]] absl::StatusOr<std::string> Get(
      const std::string& worker, const std::string& key, absl::Duration timeout,
      CancelledFn cancelled = NeverCancelled) {
    StoreGetRequest request;
    *request.mutable_scope() = Scope(worker, job_);
    request.set_key(key);
    request.set_timeout_ms(absl::ToInt64Milliseconds(timeout));
    absl::StatusOr<StoreGetResponse> response =
        service_->StoreGet(request, absl::InfiniteFuture(), cancelled);
    if (!response.ok()) return response.status();
    return response->value();
  }

  [[nodiscard]] absl::Status Barrier(const std::string& worker, int rank,
                                     absl::Duration timeout,
                                     const std::string& name = "start") {
    BarrierRequest request;
    *request.mutable_scope() = Scope(worker, job_);
    request.set_name(name);
    request.set_rank(rank);
    request.set_timeout_ms(absl::ToInt64Milliseconds(timeout));
    return service_->Barrier(request);
  }
};

TEST_F(RendezvousTest, StoreSetGet_WithinJob_RoundTripsUnderJobPrefix) {
  ASSERT_THAT(Set(w1_, "tcp/addr/0", "10.0.0.1:4000"), IsOk());
  EXPECT_EQ(Get(w2_, "tcp/addr/0", kLong).value_or(""), "10.0.0.1:4000");
  EXPECT_EQ(service_->store()
                ->Get("job/job-1/gen/1/tcp/addr/0", absl::Now())
                .value_or(""),
            "10.0.0.1:4000");
}

TEST_F(RendezvousTest, StoreSet_KeyOfAnotherWorkersRank_IsRefusedAndUnchanged) {
  ASSERT_THAT(Set(w2_, "tcp/addr/2", "10.0.0.2:4000"), IsOk());
  EXPECT_THAT(
      Set(w1_, "tcp/addr/2", "10.6.6.6:1"),
      StatusIs(absl::StatusCode::kPermissionDenied,
               AllOf(HasSubstr("'tcp/addr/2' of job job-1 belongs to rank 2"),
                     HasSubstr("worker 'w-1' holds ranks 0, 1"))));
  EXPECT_THAT(Set(w2_, "nccl/unique_id/0", "forged"),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("belongs to rank 0")));
  EXPECT_EQ(Get(w1_, "tcp/addr/2", kLong).value_or(""), "10.0.0.2:4000");
  EXPECT_THAT(
      service_->store()->Get("job/job-1/gen/1/nccl/unique_id/0", absl::Now()),
      StatusIs(absl::StatusCode::kDeadlineExceeded));
  // Its own ranks' keys, keys that end in no rank, and numbers past the
  // last rank are the worker's to set.
  EXPECT_THAT(Set(w1_, "tcp/addr/1", "10.0.0.1:4001"), IsOk());
  EXPECT_THAT(Set(w2_, "shared/flag", "x"), IsOk());
  EXPECT_THAT(Set(w2_, "epoch/3", "x"), IsOk());
  EXPECT_THAT(Set(w2_, "tcp/addr/0x", "x"), IsOk());
}

// The keys the hierarchical communicator's rendezvous writes (its host
// identity, then "tcp/addr/<sub-rank>" of each inner communicator through a
// SubgroupStore) end in the writer's global rank, so each worker may set
// those of its own ranks. Placement as above: 0 and 1 on host-a, 2 on
// host-b; keys as collectives/algorithms/hierarchical_communicator.cc names
// them.
TEST_F(RendezvousTest, HierarchicalCommunicatorKeys_EachWorkerSetsItsOwn) {
  const HostPlacement p =
      HostPlacement::FromHostIds({"host-a", "host-a", "host-b"});
  for (int rank = 0; rank < 3; ++rank) {
    const std::string& worker = rank < 2 ? w1_ : w2_;
    const int host = p.host_of(rank);
    std::vector<std::string> keys = {absl::StrCat("hier/host/", rank)};
    if (p.members(host).size() > 1) {
      keys.push_back(SubgroupStore(nullptr, absl::StrCat("hier/intra/", host),
                                   p.members(host))
                         .Key(absl::StrCat("tcp/addr/", p.local_rank(rank))));
    }
    const HostPlacement::SliceRun run = p.OwnedSlices(rank);
    for (int s = run.first; s < run.last; ++s) {
      keys.push_back(SubgroupStore(nullptr, absl::StrCat("hier/slice/", s),
                                   p.SliceGroup(s))
                         .Key(absl::StrCat("tcp/addr/", host)));
    }
    for (const std::string& key : keys) {
      EXPECT_THAT(Set(worker, key, "10.0.0.1:4000"), IsOk()) << key;
    }
  }
  // And not another worker's: rank 2's slice key from w-1.
  EXPECT_THAT(Set(w1_, "hier/slice/0/tcp/addr/2", "10.6.6.6:1"),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("belongs to rank 2")));
}

TEST_F(RendezvousTest, StoreGet_SetLater_WakesTheWaiter) {
  absl::StatusOr<std::string> value;
  absl::Notification waiting;
  std::thread getter([&] {
    value = Get(w2_, "nccl/unique_id/0", kLong, [&] {
      if (!waiting.HasBeenNotified()) waiting.Notify();
      return false;
    });
  });
  waiting.WaitForNotification();
  ASSERT_THAT(Set(w1_, "nccl/unique_id/0", "id-bytes"), IsOk());
  getter.join();
  EXPECT_EQ(value.value_or(""), "id-bytes");
}

TEST_F(RendezvousTest, StoreCalls_WorkerNotInJob_ReturnPermissionDenied) {
  EXPECT_THAT(Set(w3_, "k", "v"),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       AllOf(HasSubstr("'w-3' hosts no rank of job job-1"),
                             HasSubstr("w-1, w-2"))));
  EXPECT_THAT(Get(w3_, "k", absl::Milliseconds(1)),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(Set("w-77", "k", "v"),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(service_->store()->Get("job/job-1/gen/1/k", absl::Now()),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST_F(RendezvousTest, StoreCalls_UnknownJob_ReturnNotFoundAndWriteNothing) {
  StoreSetRequest request;
  *request.mutable_scope() = Scope(w1_, "job-9");
  request.set_key("k");
  EXPECT_THAT(service_->StoreSet(request),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("'job-9'")));
  EXPECT_THAT(service_->store()->Get("job/job-9/gen/1/k", absl::Now()),
              Not(IsOk()));
}

TEST_F(RendezvousTest, StoreCalls_PendingJob_ReturnPermissionDenied) {
  absl::StatusOr<std::string> pending = Submit(ValidSpec(3));
  ASSERT_THAT(pending, IsOk());
  StoreSetRequest request;
  *request.mutable_scope() = Scope(w1_, *pending);
  request.set_key("k");
  EXPECT_THAT(service_->StoreSet(request),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("no ranks placed yet")));
}

TEST_F(RendezvousTest, StoreCalls_StaleGeneration_ReturnFailedPrecondition) {
  EXPECT_THAT(Set(w1_, "k", "v", /*generation=*/0),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("generation 1, not 0")));
}

TEST_F(RendezvousTest, StoreCalls_EmptyKey_ReturnInvalidArgument) {
  EXPECT_THAT(Set(w1_, "", "v"), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(RendezvousTest, StoreGet_Timeout_NamesKeyAndJob) {
  EXPECT_THAT(Get(w1_, "tcp/addr/2", absl::Milliseconds(30)),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       AllOf(HasSubstr("'tcp/addr/2'"), HasSubstr("job-1"))));
}

TEST_F(RendezvousTest, StoreGet_JobCancelledWhileWaiting_ReturnsPromptly) {
  absl::StatusOr<std::string> value;
  absl::Notification waiting;
  absl::Duration took;
  std::thread getter([&] {
    const absl::Time start = absl::Now();
    value = Get(w2_, "never", kLong, [&] {
      if (!waiting.HasBeenNotified()) waiting.Notify();
      return false;
    });
    took = absl::Now() - start;
  });
  waiting.WaitForNotification();
  CancelJobRequest cancel;
  cancel.set_job_id(job_);
  ASSERT_THAT(service_->CancelJob(cancel), IsOk());
  getter.join();
  EXPECT_THAT(value, StatusIs(absl::StatusCode::kFailedPrecondition,
                              HasSubstr("cancelled by the user")));
  EXPECT_LT(took, absl::Seconds(5));
}

TEST_F(RendezvousTest, StoreAddAndWait_CountAndNameMissingKeys) {
  StoreAddRequest add;
  *add.mutable_scope() = Scope(w1_, job_);
  add.set_key("joined");
  add.set_delta(1);
  ASSERT_THAT(service_->StoreAdd(add), IsOk());
  *add.mutable_scope() = Scope(w2_, job_);
  add.set_delta(2);
  absl::StatusOr<StoreAddResponse> sum = service_->StoreAdd(add);
  ASSERT_THAT(sum, IsOk());
  EXPECT_EQ(sum->value(), 3);

  ASSERT_THAT(Set(w1_, "a", "1"), IsOk());
  StoreWaitRequest wait;
  *wait.mutable_scope() = Scope(w2_, job_);
  wait.add_keys("a");
  wait.add_keys("b");
  wait.set_timeout_ms(30);
  EXPECT_THAT(service_->StoreWait(wait),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       AllOf(HasSubstr("'b'"), Not(HasSubstr("'a'")))));
  ASSERT_THAT(Set(w1_, "b", "2"), IsOk());
  EXPECT_THAT(service_->StoreWait(wait), IsOk());
}

TEST_F(RendezvousTest, JobEnd_ErasesItsStoreKeys) {
  ASSERT_THAT(Set(w1_, "tcp/addr/0", "x"), IsOk());
  ReportAll(job_, RANK_STATE_SUCCEEDED);
  EXPECT_THAT(service_->store()->Get("job/job-1/gen/1/tcp/addr/0", absl::Now()),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
  EXPECT_THAT(Set(w1_, "tcp/addr/0", "x"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("has ended (SUCCEEDED")));
}

TEST_F(RendezvousTest, Barrier_AllRanksArrive_ReleasesEveryRankEachRound) {
  for (int round = 0; round < 2; ++round) {
    std::vector<absl::Status> results(3);
    std::vector<std::thread> ranks;
    ranks.emplace_back([&] { results[0] = Barrier(w1_, 0, kLong); });
    ranks.emplace_back([&] { results[1] = Barrier(w1_, 1, kLong); });
    ranks.emplace_back([&] { results[2] = Barrier(w2_, 2, kLong); });
    for (std::thread& t : ranks) t.join();
    for (int r = 0; r < 3; ++r) {
      EXPECT_THAT(results[r], IsOk()) << "rank " << r << " round " << round;
    }
  }
}

TEST_F(RendezvousTest, Barrier_Timeout_NamesMissingRanksAndTheirWorkers) {
  EXPECT_THAT(Barrier(w1_, 0, absl::Milliseconds(30)),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       AllOf(HasSubstr("barrier 'start' of job job-1"),
                             HasSubstr("waiting for ranks 1, 2"),
                             HasSubstr("worker w-1 on host host-a: 1"),
                             HasSubstr("worker w-2 on host host-b: 2"))));
  // Rank 0 withdrew when it gave up: it is missing for the next one.
  EXPECT_THAT(Barrier(w2_, 2, absl::Milliseconds(30)),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       HasSubstr("waiting for ranks 0, 1")));
}

TEST_F(RendezvousTest, Barrier_RankOfAnotherWorker_ReturnsPermissionDenied) {
  EXPECT_THAT(Barrier(w2_, 0, absl::Milliseconds(30)),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("rank 0 of job job-1 is not hosted by "
                                 "worker w-2")));
  EXPECT_THAT(Barrier(w3_, 0, absl::Milliseconds(30)),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(Barrier(w1_, 0, absl::Milliseconds(30), ""),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(RendezvousTest, Barrier_JobFailsWhileWaiting_ReturnsTheReason) {
  absl::Status result;
  std::thread waiter([&] { result = Barrier(w1_, 0, kLong); });
  // Ranks 1 fails; rank 0's barrier must end with the job's message.
  ASSERT_THAT(
      Report(w1_, job_, 1, RANK_STATE_FAILED, 4, "forward", "out of memory"),
      IsOk());
  waiter.join();
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kFailedPrecondition,
                               HasSubstr("rank 1 failed at step 4 during "
                                         "forward: out of memory")));
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
