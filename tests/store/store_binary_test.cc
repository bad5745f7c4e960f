// The `gradsync-store` binary: prints its bound address first, serves the
// store, and exits cleanly on SIGTERM. GRADSYNC_STORE_BINARY is its path,
// set by CMake.
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/grpc_store.h"
#include "tests/util/daemon_process.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::DaemonProcess;

using ::gradsync::testing::IsOk;
using ::testing::StartsWith;

constexpr absl::Duration kProcessTimeout = absl::Seconds(10);

TEST(GradsyncStoreBinaryTest, Run_PrintsAddressServesAndExitsOnSigterm) {
  DaemonProcess process(GRADSYNC_STORE_BINARY, {"--listen", "127.0.0.1:0"});
  ASSERT_TRUE(process.started());
  const std::string address = process.ReadLine(kProcessTimeout);
  ASSERT_THAT(address, StartsWith("127.0.0.1:"));

  absl::StatusOr<std::unique_ptr<Store>> store =
      ConnectGrpcStore(address, kProcessTimeout);
  ASSERT_THAT(store, IsOk());
  ASSERT_THAT((*store)->Set("addr/0", "10.0.0.1:4000"), IsOk());
  absl::StatusOr<std::string> value =
      (*store)->Get("addr/0", absl::Now() + absl::Seconds(1));
  ASSERT_THAT(value, IsOk());
  EXPECT_EQ(*value, "10.0.0.1:4000");

  process.Signal(SIGTERM);
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 0);
}

TEST(GradsyncStoreBinaryTest, Run_ListenFlagWithEquals_IsAccepted) {
  DaemonProcess process(GRADSYNC_STORE_BINARY, {"--listen=127.0.0.1:0"});
  ASSERT_TRUE(process.started());
  EXPECT_THAT(process.ReadLine(kProcessTimeout), StartsWith("127.0.0.1:"));
  process.Signal(SIGINT);
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 0);
}

TEST(GradsyncStoreBinaryTest, Run_UnknownFlag_ExitsTwo) {
  DaemonProcess process(GRADSYNC_STORE_BINARY, {"--bogus"});
  ASSERT_TRUE(process.started());
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 2);
}

TEST(GradsyncStoreBinaryTest, Run_BadListenAddress_ExitsOne) {
  DaemonProcess process(GRADSYNC_STORE_BINARY, {"--listen", "nonsense"});
  ASSERT_TRUE(process.started());
  EXPECT_EQ(process.WaitForExit(kProcessTimeout), 1);
}

}  // namespace
}  // namespace gradsync
