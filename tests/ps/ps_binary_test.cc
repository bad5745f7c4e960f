// The `gradsync-ps` binary: prints its bound address first, serves shards,
// exits cleanly on SIGTERM, refuses a bad command line, registers with a
// coordinator (a tiny in-test one) and heartbeats, and, killed in the
// middle of a step, fails its clients' step promptly with UNAVAILABLE.
// GRADSYNC_PS_BINARY is its path, set by CMake.
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/client/ps_admin_client.h"
#include "server/ps/client/ps_client.h"
#include "tests/util/daemon_process.h"
#include "tests/util/fake_coordinator.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::DaemonProcess;

using ::gradsync::testing::FakeCoordinatorServer;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr absl::Duration kProcessTimeout = absl::Seconds(10);

TEST(GradsyncPsBinaryTest, Run_PrintsAddressServesAndExitsOnSigterm) {
  DaemonProcess process(GRADSYNC_PS_BINARY, {"--listen", "127.0.0.1:0"});
  ASSERT_TRUE(process.started());
  const std::string address = process.ReadLine(kProcessTimeout);
  ASSERT_THAT(address, StartsWith("127.0.0.1:"));

  ps::CreateShardRequest request;
  request.set_job_id("job");
  request.set_num_shards(1);
  request.set_total_elements(10);
  request.set_end(10);
  request.set_num_workers(1);
  request.mutable_optimizer()->set_name("sgd");
  request.mutable_optimizer()->set_learning_rate(1.0);
  request.set_zeros(true);
  ASSERT_THAT(PsAdminClient::Connect(address)->CreateShard(request), IsOk());
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create("job", 0, 10, {{address, 0, 0, 10}});
  ASSERT_THAT(client, IsOk());
  std::vector<float> grads(10, 2.0f), params(10);
  ASSERT_THAT((*client)->PushPull(0, grads, absl::MakeSpan(params)), IsOk());
  EXPECT_EQ(params, std::vector<float>(10, -2.0f));

  process.Signal(SIGTERM);
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 0);
}

TEST(GradsyncPsBinaryTest, Run_UnknownFlag_ExitsTwo) {
  DaemonProcess process(GRADSYNC_PS_BINARY, {"--bogus"});
  ASSERT_TRUE(process.started());
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 2);
}

TEST(GradsyncPsBinaryTest, Run_BadComputeThreads_ExitsTwo) {
  for (const char* value : {"-1", "two", ""}) {
    DaemonProcess process(GRADSYNC_PS_BINARY, {"--listen", "127.0.0.1:0",
                                               "--compute-threads", value});
    ASSERT_TRUE(process.started());
    EXPECT_EQ(process.WaitForExit(kProcessTimeout), 2) << "'" << value << "'";
  }
}

TEST(GradsyncPsBinaryTest, Run_PortTaken_ExitsOne) {
  DaemonProcess first(GRADSYNC_PS_BINARY, {"--listen", "127.0.0.1:0"});
  ASSERT_TRUE(first.started());
  const std::string address = first.ReadLine(kProcessTimeout);
  ASSERT_THAT(address, StartsWith("127.0.0.1:"));
  DaemonProcess second(GRADSYNC_PS_BINARY, {"--listen", address});
  ASSERT_TRUE(second.started());
  EXPECT_EQ(second.WaitForExit(kProcessTimeout), 1);
}

// A one-shard job of `total` zeros for `workers` ranks on `address`.
[[nodiscard]] absl::Status CreateJob(const std::string& address, int64_t total,
                                     int workers) {
  ps::CreateShardRequest request;
  request.set_job_id("job");
  request.set_num_shards(1);
  request.set_total_elements(total);
  request.set_end(total);
  request.set_num_workers(workers);
  request.mutable_optimizer()->set_name("sgd");
  request.mutable_optimizer()->set_learning_rate(1.0);
  request.set_zeros(true);
  // What the fake coordinator's job would carry (a daemon registered with
  // a coordinator refuses shard calls without the job's token).
  request.set_token(testing::FakeCoordinator::PsToken("job"));
  return PsAdminClient::Connect(address)->CreateShard(request);
}

template <typename Done>
bool Eventually(Done done) {
  const absl::Time deadline = absl::Now() + kProcessTimeout;
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return done();
}

TEST(GradsyncPsBinaryTest, Run_WithCoordinator_RegistersAndHeartbeats) {
  FakeCoordinatorServer coordinator;
  ASSERT_NE(coordinator.port(), 0);
  DaemonProcess process(
      GRADSYNC_PS_BINARY,
      {"--listen", "127.0.0.1:0", "--coordinator", coordinator.address()});
  ASSERT_TRUE(process.started());
  const std::string address = process.ReadLine(kProcessTimeout);
  ASSERT_THAT(address, StartsWith("127.0.0.1:"));
  // Registered before the address was printed.
  ASSERT_EQ(coordinator.fake().ps_registrations().size(), 1u);
  EXPECT_EQ(coordinator.fake().ps_registrations()[0].address(), address);
  EXPECT_EQ(coordinator.fake().ps_registrations()[0].pid(), process.pid());
  EXPECT_FALSE(coordinator.fake().ps_registrations()[0].host().empty());
  ASSERT_THAT(CreateJob(address, 10, 1), IsOk());
  ASSERT_TRUE(Eventually([&]() {
    const std::vector<PsHeartbeatRequest> beats =
        coordinator.fake().ps_heartbeats();
    return !beats.empty() && beats.back().shards_size() == 1 &&
           beats.back().shards(0).job_id() == "job";
  }));
  // The coordinator says the job ended: its shard goes.
  coordinator.fake().ReleaseJobs({"job"});
  ASSERT_TRUE(Eventually([&]() {
    return !PsAdminClient::Connect(address)->GetShardStats("job", -1).ok();
  }));
  process.Signal(SIGTERM);
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 0);
}

TEST(GradsyncPsBinaryTest, Run_CoordinatorRefuses_ExitsOneWithoutAddress) {
  FakeCoordinatorServer coordinator;
  coordinator.fake().RefusePsRegistrations();
  DaemonProcess process(
      GRADSYNC_PS_BINARY,
      {"--listen", "127.0.0.1:0", "--coordinator", coordinator.address()});
  ASSERT_TRUE(process.started());
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 1);
  EXPECT_EQ(process.ReadLine(absl::Milliseconds(100)), "");
}

TEST(GradsyncPsBinaryTest, Run_SigtermWhileRegistering_ExitsZeroPromptly) {
  std::string unreachable;
  {
    FakeCoordinatorServer gone;
    unreachable = gone.address();
  }
  DaemonProcess process(GRADSYNC_PS_BINARY, {"--listen", "127.0.0.1:0",
                                             "--coordinator", unreachable});
  ASSERT_TRUE(process.started());
  absl::SleepFor(absl::Milliseconds(300));
  process.Signal(SIGTERM);
  EXPECT_EQ(process.WaitForExit(absl::Seconds(5)), 0);
}

TEST(GradsyncPsBinaryTest, KilledMidStep_StepFailsUnavailablePromptly) {
  DaemonProcess process(GRADSYNC_PS_BINARY, {"--listen", "127.0.0.1:0"});
  ASSERT_TRUE(process.started());
  const std::string address = process.ReadLine(kProcessTimeout);
  ASSERT_THAT(address, StartsWith("127.0.0.1:"));
  ASSERT_THAT(CreateJob(address, 1000, 1), IsOk());
  PsClientOptions options;
  options.chunk_bytes = 64;
  options.timeout = absl::Seconds(60);
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create("job", 0, 1000, {{address, 0, 0, 1000}}, options);
  ASSERT_THAT(client, IsOk());
  std::vector<float> grads(1000, 1.0f), params(1000);
  absl::StatusOr<std::unique_ptr<PsStep>> step =
      (*client)->StartStep(0, grads, absl::MakeSpan(params));
  ASSERT_THAT(step, IsOk());
  (*step)->Ready(500, 1000);
  ASSERT_TRUE(Eventually([&]() {
    absl::StatusOr<std::vector<ps::ShardStats>> stats =
        PsAdminClient::Connect(address)->GetShardStats("job", 0);
    return stats.ok() && (*stats)[0].bytes_in() == 2000;
  }));
  process.Signal(SIGKILL);
  (*step)->Ready(0, 500);
  const absl::Time start = absl::Now();
  EXPECT_THAT((*step)->Finish(absl::Now() + absl::Seconds(60)),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(HasSubstr(absl::StrCat("ps shard 0 at ", address)),
                             HasSubstr("rank 0, step 0"))));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

}  // namespace
}  // namespace gradsync
