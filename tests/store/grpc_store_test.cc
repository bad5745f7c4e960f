// The gRPC store beyond the Store contract (store_contract_test.cc): server
// start-up, connecting, blocked waiters versus other calls, shutdown, and
// what the client reports when the server is not there.
#include "server/store/grpc_store.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/store_server.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr absl::Duration kConnectTimeout = absl::Seconds(5);
constexpr absl::Duration kShortDeadline = absl::Milliseconds(200);
constexpr absl::Duration kLongDeadline = absl::Seconds(10);

std::unique_ptr<StoreServer> StartLoopbackServer() {
  absl::StatusOr<std::unique_ptr<StoreServer>> server =
      StoreServer::Start("127.0.0.1:0");
  EXPECT_THAT(server, IsOk());
  return server.ok() ? *std::move(server) : nullptr;
}

std::unique_ptr<Store> Connect(const StoreServer& server) {
  absl::StatusOr<std::unique_ptr<Store>> store =
      ConnectGrpcStore(server.address(), kConnectTimeout);
  EXPECT_THAT(store, IsOk());
  return store.ok() ? *std::move(store) : nullptr;
}

TEST(StoreServerTest, Start_PortZero_ReportsBoundLoopbackAddress) {
  std::unique_ptr<StoreServer> server = StartLoopbackServer();
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->port(), 0);
  EXPECT_EQ(server->address(), absl::StrCat("127.0.0.1:", server->port()));
}

TEST(StoreServerTest, Start_PortInUse_ReturnsUnavailableNamingAddress) {
  std::unique_ptr<StoreServer> first = StartLoopbackServer();
  ASSERT_NE(first, nullptr);
  EXPECT_THAT(StoreServer::Start(first->address()),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr(first->address()),
                             HasSubstr("already in use"))));
}

TEST(StoreServerTest, Start_NotHostPort_ReturnsInvalidArgument) {
  for (const char* address : {"localhost", "127.0.0.1:http", "127.0.0.1:70000",
                              ":29500", "127.0.0.1:"}) {
    EXPECT_THAT(StoreServer::Start(address),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat("'", address, "'"))))
        << address;
  }
}

TEST(StoreServerTest, Start_TooFewThreads_ReturnsInvalidArgument) {
  StoreServerOptions options;
  options.max_threads = 2;
  EXPECT_THAT(
      StoreServer::Start("127.0.0.1:0", options),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_threads")));
}

TEST(StoreServerTest, InProcessStore_SharesKeysWithRemoteClients) {
  std::unique_ptr<StoreServer> server = StartLoopbackServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Store> client = Connect(*server);
  ASSERT_NE(client, nullptr);

  ASSERT_THAT(server->store()->Set("job-1/from-server", "s"), IsOk());
  absl::StatusOr<std::string> value =
      client->Get("job-1/from-server", absl::Now() + kShortDeadline);
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, "s");

  ASSERT_THAT(client->Set("job-1/from-client", "c"), IsOk());
  EXPECT_EQ(server->store()->EraseWithPrefix("job-1/"), 2);
  EXPECT_THAT(client->Get("job-1/from-client", absl::Now() + kShortDeadline),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST(GrpcStoreTest, Connect_NobodyListening_ReturnsUnavailableWithinTimeout) {
  // A port that was just free: start a server, note its port, stop it.
  std::string address;
  {
    std::unique_ptr<StoreServer> server = StartLoopbackServer();
    ASSERT_NE(server, nullptr);
    address = server->address();
  }
  constexpr absl::Duration kTimeout = absl::Milliseconds(300);
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<Store>> store =
      ConnectGrpcStore(address, kTimeout);
  const absl::Duration elapsed = absl::Now() - start;
  EXPECT_THAT(store,
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr(absl::StrCat("store at ", address,
                                                    " is unreachable after "
                                                    "300ms")),
                             HasSubstr("is the store server (or coordinator) "
                                       "running there?"))));
  EXPECT_LT(elapsed, kTimeout + absl::Seconds(2));
}

TEST(GrpcStoreTest, Connect_ServerStartsLater_ConnectsSoonAfterItListens) {
  // Ranks often start before the store: reserve a port, free it, and only
  // start the store there once the client is already trying.
  std::string address;
  {
    std::unique_ptr<StoreServer> server = StartLoopbackServer();
    ASSERT_NE(server, nullptr);
    address = server->address();
  }
  absl::StatusOr<std::unique_ptr<Store>> store;
  absl::Notification connected;
  std::thread connector([&] {
    store = ConnectGrpcStore(address, absl::Seconds(20));
    connected.Notify();
  });
  EXPECT_FALSE(connected.WaitForNotificationWithTimeout(absl::Seconds(1)));

  absl::StatusOr<std::unique_ptr<StoreServer>> server =
      StoreServer::Start(address);
  ASSERT_THAT(server, IsOk());
  // The client retries with a short backoff, not gRPC's default of up to
  // two minutes.
  EXPECT_TRUE(connected.WaitForNotificationWithTimeout(absl::Seconds(5)));
  connector.join();
  ASSERT_THAT(store, IsOk());
  EXPECT_THAT((*store)->Set("addr/0", "x"), IsOk());
}

TEST(GrpcStoreTest, Connect_EmptyTarget_ReturnsInvalidArgument) {
  EXPECT_THAT(ConnectGrpcStore("", kConnectTimeout),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(GrpcStoreTest, Get_ThirtyTwoBlockedGets_DoNotStarveSetOrGet) {
  constexpr int kWaiters = 32;
  std::unique_ptr<StoreServer> server = StartLoopbackServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<Store> waiters_client = Connect(*server);
  std::unique_ptr<Store> other_client = Connect(*server);
  ASSERT_NE(waiters_client, nullptr);
  ASSERT_NE(other_client, nullptr);

  std::vector<absl::StatusOr<std::string>> got(kWaiters);
  std::atomic<int> finished{0};
  absl::Notification all_finished;
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      absl::StatusOr<int64_t> arrived = waiters_client->Add("arrived", 1);
      if (arrived.ok() && *arrived == kWaiters) {
        (void)waiters_client->Set("all-arrived", "1");
      }
      got[i] = waiters_client->Get("go", absl::Now() + kLongDeadline);
      if (finished.fetch_add(1) + 1 == kWaiters) all_finished.Notify();
    });
  }
  ASSERT_THAT(other_client->Get("all-arrived", absl::Now() + kLongDeadline),
              IsOk());
  // "go" is not set: every waiter must still be blocked (on the server).
  EXPECT_FALSE(
      all_finished.WaitForNotificationWithTimeout(absl::Milliseconds(200)));
  EXPECT_EQ(finished.load(), 0);

  // Other calls are still served promptly, not after the waiters' deadline.
  for (int i = 0; i < 10; ++i) {
    const absl::Time start = absl::Now();
    const std::string key = absl::StrCat("other/", i);
    ASSERT_THAT(other_client->Set(key, "x"), IsOk());
    ASSERT_THAT(other_client->Get(key, absl::Now() + kShortDeadline), IsOk());
    ASSERT_THAT(other_client->Add("other/count", 1), IsOk());
    EXPECT_LT(absl::Now() - start, absl::Seconds(1)) << "call " << i;
  }
  EXPECT_EQ(finished.load(), 0);

  ASSERT_THAT(other_client->Set("go", "now"), IsOk());
  EXPECT_TRUE(all_finished.WaitForNotificationWithTimeout(kLongDeadline));
  for (std::thread& waiter : waiters) waiter.join();
  for (int i = 0; i < kWaiters; ++i) {
    ASSERT_THAT(got[i], IsOk()) << "waiter " << i;
    EXPECT_EQ(*got[i], "now") << "waiter " << i;
  }
}

TEST(GrpcStoreTest,
     Get_MoreWaitersThanMaxThreads_ExtraOnesGetResourceExhausted) {
  constexpr int kWaiters = 40;
  StoreServerOptions options;
  options.max_threads = 12;
  absl::StatusOr<std::unique_ptr<StoreServer>> server =
      StoreServer::Start("127.0.0.1:0", options);
  ASSERT_THAT(server, IsOk());
  std::unique_ptr<Store> client = Connect(**server);
  ASSERT_NE(client, nullptr);

  std::vector<absl::Status> got(kWaiters);
  std::vector<std::thread> waiters;
  const absl::Time deadline = absl::Now() + absl::Seconds(1);
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back(
        [&, i] { got[i] = client->Get("never", deadline).status(); });
  }
  for (std::thread& waiter : waiters) waiter.join();

  // The server waited for as many as it had threads for and refused the
  // others at once, with a message that says what to change.
  int exhausted = 0;
  for (int i = 0; i < kWaiters; ++i) {
    if (got[i].code() == absl::StatusCode::kResourceExhausted) {
      ++exhausted;
      EXPECT_THAT(got[i].message(),
                  AllOf(HasSubstr("'never'"), HasSubstr("max_threads")));
    } else {
      EXPECT_THAT(got[i], StatusIs(absl::StatusCode::kDeadlineExceeded,
                                   HasSubstr("'never'")))
          << "waiter " << i;
    }
  }
  EXPECT_GT(exhausted, 0);
  EXPECT_LT(exhausted, kWaiters);
}

TEST(GrpcStoreTest, Get_ServerShutsDownWhileWaiting_ReturnsUnavailableSoon) {
  std::unique_ptr<StoreServer> server = StartLoopbackServer();
  ASSERT_NE(server, nullptr);
  const std::string address = server->address();
  std::unique_ptr<Store> client = Connect(*server);
  ASSERT_NE(client, nullptr);

  absl::StatusOr<std::string> got;
  absl::Notification done;
  std::thread getter([&] {
    got = client->Get("never", absl::Now() + absl::Seconds(60));
    done.Notify();
  });
  EXPECT_FALSE(done.WaitForNotificationWithTimeout(absl::Milliseconds(100)));

  // Shutdown does not wait for the Get's 60 s deadline.
  const absl::Time start = absl::Now();
  server->Shutdown();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(kLongDeadline));
  getter.join();
  EXPECT_THAT(got, StatusIs(absl::StatusCode::kUnavailable,
                            AllOf(HasSubstr("'never'"), HasSubstr(address))));
}

TEST(GrpcStoreTest, Set_ServerGone_ReturnsUnavailableNamingTargetAndKey) {
  std::unique_ptr<StoreServer> server = StartLoopbackServer();
  ASSERT_NE(server, nullptr);
  const std::string address = server->address();
  std::unique_ptr<Store> client = Connect(*server);
  ASSERT_NE(client, nullptr);
  server.reset();

  EXPECT_THAT(client->Set("addr/0", "x"),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr("'addr/0'"), HasSubstr(address),
                             HasSubstr("still running there?"))));
}

TEST(GrpcStoreTest, Shutdown_CalledTwice_SecondReturnsAtOnce) {
  std::unique_ptr<StoreServer> server = StartLoopbackServer();
  ASSERT_NE(server, nullptr);
  server->Shutdown();
  server->Shutdown();
}

}  // namespace
}  // namespace gradsync
