// CoordinatorStore against an in-process fake Coordinator service: the
// Store contract over the coordinator's RPCs, the scope on every call,
// deadlines, cancellation, and a real TCP rendezvous through it.
#include "worker/daemon/coordinator_store.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "collectives/tcp/tcp_communicator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/fake_coordinator.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::FakeCoordinatorServer;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::NewTestClient;
using ::gradsync::testing::StatusIs;
using ::gradsync::testing::UnusedAddress;
using ::testing::HasSubstr;

StoreScope Scope(const std::string& job, int64_t generation) {
  StoreScope scope;
  scope.set_worker_id("w-1");
  scope.set_job_id(job);
  scope.set_generation(generation);
  return scope;
}

TEST(CoordinatorStoreTest, SetGetAddWait_RoundTripWithScope) {
  FakeCoordinatorServer server;
  CoordinatorStore store(server.NewClient(), Scope("job-1", 2));
  ASSERT_THAT(store.Set("k", std::string("v\0w", 3)), IsOk());
  absl::StatusOr<std::string> got =
      store.Get("k", absl::Now() + absl::Seconds(5));
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(*got, std::string("v\0w", 3));
  EXPECT_THAT(store.Add("n", 5), IsOk());
  absl::StatusOr<int64_t> n = store.Add("n", -2);
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(*n, 3);
  EXPECT_THAT(store.Wait({"k", "n"}, absl::Now() + absl::Seconds(5)), IsOk());
  for (const StoreScope& s : server.fake().store_scopes()) {
    EXPECT_EQ(s.worker_id(), "w-1");
    EXPECT_EQ(s.job_id(), "job-1");
    EXPECT_EQ(s.generation(), 2);
  }
  EXPECT_EQ(server.fake().store_scopes().size(), 5u);
}

TEST(CoordinatorStoreTest, Generations_DoNotSeeEachOther) {
  FakeCoordinatorServer server;
  CoordinatorStore gen0(server.NewClient(), Scope("job-1", 0));
  CoordinatorStore gen1(server.NewClient(), Scope("job-1", 1));
  ASSERT_THAT(gen0.Set("k", "old"), IsOk());
  EXPECT_THAT(gen1.Get("k", absl::Now() + absl::Milliseconds(100)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST(CoordinatorStoreTest, Get_Timeout_ServerDeadlineNamesKey) {
  FakeCoordinatorServer server;
  CoordinatorStore store(server.NewClient(), Scope("job-1", 0));
  const absl::Time start = absl::Now();
  EXPECT_THAT(
      store.Get("missing", absl::Now() + absl::Milliseconds(200)),
      StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("missing")));
  EXPECT_THAT(store.Wait({"a", "b"}, absl::Now() + absl::Milliseconds(200)),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       HasSubstr("store Wait for keys 'a', 'b'")));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST(CoordinatorStoreTest, Get_BlocksUntilAnotherRankSets) {
  FakeCoordinatorServer server;
  CoordinatorStore a(server.NewClient(), Scope("job-1", 0));
  CoordinatorStore b(server.NewClient(), Scope("job-1", 0));
  std::thread setter([&] {
    absl::SleepFor(absl::Milliseconds(100));
    EXPECT_THAT(b.Set("late", "1"), IsOk());
  });
  absl::StatusOr<std::string> got =
      a.Get("late", absl::Now() + absl::Seconds(10));
  setter.join();
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(*got, "1");
}

TEST(CoordinatorStoreTest, CoordinatorErrors_PassWithTheirCode) {
  FakeCoordinatorServer server;
  CoordinatorStore store(server.NewClient(), Scope("job-9", 0));
  server.fake().FailStoreCalls(
      absl::FailedPreconditionError("job job-9 was cancelled"));
  EXPECT_THAT(store.Set("k", "v"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("job job-9 was cancelled")));
  server.fake().FailStoreCalls(
      absl::PermissionDeniedError("worker w-1 hosts no rank of job-9"));
  EXPECT_THAT(store.Get("k", absl::Now() + absl::Seconds(1)),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("store Get of key 'k' (job job-9")));
}

TEST(CoordinatorStoreTest, Unreachable_ReturnsUnavailableNamingTarget) {
  const std::string address = UnusedAddress();
  std::shared_ptr<CoordinatorClient> client = NewTestClient(address);
  CoordinatorStore store(client, Scope("job-1", 0));
  EXPECT_THAT(store.Set("k", "v"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr(address)));
}

TEST(CoordinatorStoreTest, Cancel_UnblocksGetAtOnce) {
  FakeCoordinatorServer server;
  CoordinatorStore store(server.NewClient(), Scope("job-1", 0));
  std::thread canceller([&] {
    absl::SleepFor(absl::Milliseconds(100));
    store.Cancel(absl::CancelledError("job cancelled by the user"));
  });
  const absl::Time start = absl::Now();
  EXPECT_THAT(store.Get("never", absl::Now() + absl::Seconds(30)),
              StatusIs(absl::StatusCode::kCancelled,
                       HasSubstr("job cancelled by the user")));
  canceller.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_THAT(store.Set("k", "v"), StatusIs(absl::StatusCode::kCancelled));
}

// The store is good enough for the real thing: three TCP ranks find each
// other through it and all-reduce.
TEST(CoordinatorStoreTest, TcpRendezvous_ThroughCoordinatorStore) {
  FakeCoordinatorServer server;
  CoordinatorStore store(server.NewClient(), Scope("job-1", 0));
  constexpr int kWorld = 3;
  std::vector<absl::Status> status(kWorld);
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r) {
    threads.emplace_back([&, r] {
      TcpOptions options;
      options.job_id = "job-1/0";
      options.connect_timeout = absl::Seconds(20);
      absl::StatusOr<std::unique_ptr<Communicator>> comm =
          CreateTcpCommunicator(&store, r, kWorld, options);
      if (!comm.ok()) {
        status[r] = comm.status();
        return;
      }
      float v = static_cast<float>(r + 1);
      status[r] =
          (*comm)->AllReduce(&v, &v, 1, DataType::kFloat32, ReduceOp::kSum);
      if (status[r].ok() && v != 6.0f) status[r] = absl::InternalError("sum");
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < kWorld; ++r) EXPECT_THAT(status[r], IsOk()) << r;
}

}  // namespace
}  // namespace gradsync
