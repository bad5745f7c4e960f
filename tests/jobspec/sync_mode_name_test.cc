// The sync modes' names, both ways: one mapping for the coordinator's
// metrics and auto mode, the workers' metrics and the CLI.
#include "jobspec/sync_mode_name.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOkAndHolds;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

TEST(SyncModeNameTest, RingAndPs_UnspecifiedIsTheRing) {
  EXPECT_EQ(SyncModeName(SYNC_MODE_RING), "ring");
  EXPECT_EQ(SyncModeName(SYNC_MODE_PS), "ps");
  EXPECT_EQ(SyncModeName(SYNC_MODE_UNSPECIFIED), "ring");
  EXPECT_EQ(SyncModeName(static_cast<SyncMode>(7)), "mode 7");
}

TEST(SyncModeNameTest, ParsesItsOwnNamesOnly) {
  for (SyncMode mode : {SYNC_MODE_RING, SYNC_MODE_PS}) {
    EXPECT_THAT(ParseSyncModeName(SyncModeName(mode)), IsOkAndHolds(mode));
  }
  EXPECT_THAT(ParseSyncModeName("allreduce", "the mode"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the mode is 'allreduce'; use ps or ring")));
  for (const char* bad : {"", "PS", "Ring", "auto", "SYNC_MODE_PS"}) {
    EXPECT_THAT(ParseSyncModeName(bad),
                StatusIs(absl::StatusCode::kInvalidArgument))
        << bad;
  }
}

}  // namespace
}  // namespace gradsync
