// The gRPC CoordinatorClient against the fake coordinator on loopback: the
// coordinator's own statuses pass unchanged, a coordinator that is not
// there is marked unreachable, and CancellableCalls cancels a call in
// flight and refuses later ones.
#include "server/coordinator/grpc_coordinator_client.h"

#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/wire_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/fake_coordinator.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::FakeCoordinatorServer;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::gradsync::testing::UnusedAddress;
using ::testing::HasSubstr;

constexpr absl::Duration kTimeout = absl::Seconds(10);

RegisterWorkerRequest Worker() {
  RegisterWorkerRequest request;
  request.set_host("host-a");
  request.set_address("127.0.0.1");
  request.set_wire_version(kWireVersion);
  Device* device = request.add_devices();
  device->set_kind("cpu");
  return request;
}

TEST(GrpcCoordinatorClientTest, Register_ThenHeartbeat_ReachTheCoordinator) {
  FakeCoordinatorServer server;
  std::shared_ptr<CoordinatorClient> client = NewGrpcCoordinatorClient(
      NewCoordinatorChannel(server.address()), server.address());
  EXPECT_EQ(client->target(), server.address());
  absl::StatusOr<RegisterWorkerResponse> registered =
      client->RegisterWorker(Worker(), {absl::Now() + kTimeout});
  ASSERT_THAT(registered, IsOk());
  EXPECT_EQ(registered->worker_id(), "w-1");
  ASSERT_EQ(server.fake().registrations().size(), 1u);
  EXPECT_EQ(server.fake().registrations()[0].host(), "host-a");

  HeartbeatRequest beat;
  beat.set_worker_id("w-1");
  EXPECT_THAT(client->Heartbeat(beat, {absl::Now() + kTimeout}), IsOk());
  EXPECT_EQ(server.fake().heartbeats(), 1);
}

TEST(GrpcCoordinatorClientTest, CoordinatorsOwnError_PassesUnmarked) {
  FakeCoordinatorServer server;
  std::shared_ptr<CoordinatorClient> client = NewGrpcCoordinatorClient(
      NewCoordinatorChannel(server.address()), server.address());
  HeartbeatRequest beat;
  beat.set_worker_id("w-404");
  const absl::Status status =
      client->Heartbeat(beat, {absl::Now() + kTimeout}).status();
  EXPECT_THAT(status,
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("w-404")));
  EXPECT_FALSE(IsCoordinatorUnreachable(status));
}

TEST(GrpcCoordinatorClientTest, NothingListening_UnavailableAndUnreachable) {
  const std::string address = UnusedAddress();
  std::shared_ptr<CoordinatorClient> client =
      NewGrpcCoordinatorClient(NewCoordinatorChannel(address), address);
  const absl::Status status =
      client->RegisterWorker(Worker(), {absl::Now() + kTimeout}).status();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_TRUE(IsCoordinatorUnreachable(status));
  EXPECT_FALSE(IsCoordinatorUnreachable(absl::OkStatus()));
}

TEST(GrpcCoordinatorClientTest, CancelAll_EndsALongPollAndRefusesMore) {
  FakeCoordinatorServer server;
  std::shared_ptr<CoordinatorClient> client = NewGrpcCoordinatorClient(
      NewCoordinatorChannel(server.address()), server.address());
  ASSERT_THAT(client->RegisterWorker(Worker(), {absl::Now() + kTimeout}),
              IsOk());
  CancellableCalls calls;
  HeartbeatRequest beat;
  beat.set_worker_id("w-1");
  // No news comes: uncancelled, the long-poll would end OK after 3 s.
  beat.set_wait_ms(3000);
  absl::Status status;
  absl::Notification done;
  std::thread poller([&] {
    status = client->Heartbeat(beat, {absl::Now() + absl::Seconds(90), &calls})
                 .status();
    done.Notify();
  });
  // Until the long-poll is in the fake's hands, nothing can be cancelled.
  ASSERT_TRUE(
      server.fake().WaitFor([&] { return server.fake().heartbeats() == 1; }));
  calls.CancelAll(absl::CancelledError("worker stopping"));
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(kTimeout));
  poller.join();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kCancelled));
  EXPECT_THAT(
      client->Heartbeat(beat, {absl::Now() + kTimeout, &calls}),
      StatusIs(absl::StatusCode::kCancelled, HasSubstr("worker stopping")));
}

}  // namespace
}  // namespace gradsync
