// PsRegistry (ids, leases, lookups) and ModeHistory (modes and switches
// from rank 0's steps).
#include "server/coordinator/ps_registry.h"

#include <string>
#include <vector>

#include "common/wire_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/coordinator/mode_history.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

RegisterParameterServerRequest Request(const std::string& address) {
  RegisterParameterServerRequest request;
  request.set_host("node");
  request.set_address(address);
  request.set_pid(7);
  request.set_wire_version(kWireVersion);
  return request;
}

TEST(PsRegistryTest, Register_NumbersFromOneAndFindsByExactId) {
  PsRegistry registry;
  absl::StatusOr<const PsRecord*> a = registry.Register(Request("h:1"), kT0);
  absl::StatusOr<const PsRecord*> b = registry.Register(Request("h:2"), kT0);
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ((*a)->id, "ps-1");
  EXPECT_EQ((*b)->id, "ps-2");
  EXPECT_EQ(registry.Find("ps-2"), *b);
  EXPECT_EQ(registry.Find("ps-02"), nullptr);
  EXPECT_EQ(registry.Find("w-1"), nullptr);
  EXPECT_EQ(registry.FindLiveByAddress("h:1"), *a);
  EXPECT_EQ(registry.FindLiveByAddress("h:3"), nullptr);
}

TEST(PsRegistryTest, Register_BadInput_InvalidArgumentAddsNothing) {
  PsRegistry registry;
  EXPECT_THAT(registry.Register(Request("no-port"), kT0),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(registry.Register(Request("h:70000"), kT0),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(registry.All(), IsEmpty());
  ASSERT_THAT(registry.Register(Request("[::1]:5"), kT0), IsOk());
  EXPECT_EQ(registry.All()[0]->id, "ps-1");
}

TEST(PsRegistryTest, Register_OtherWireVersion_FailedPreconditionAddsNothing) {
  PsRegistry registry;
  RegisterParameterServerRequest old_build = Request("h:1");
  old_build.clear_wire_version();
  EXPECT_THAT(registry.Register(old_build, kT0),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("run the coordinator, gradsync-ps and "
                                 "gradsync-worker from the same gradsync "
                                 "build")));
  EXPECT_THAT(registry.All(), IsEmpty());
  ASSERT_THAT(registry.Register(Request("h:1"), kT0), IsOk());
  EXPECT_EQ(registry.All()[0]->id, "ps-1");
}

TEST(PsRegistryTest, Leases_ExpireUnlessRenewed_LostLeavesLive) {
  PsRegistry registry;
  ASSERT_THAT(registry.Register(Request("h:1"), kT0), IsOk());
  ASSERT_THAT(registry.Register(Request("h:2"), kT0), IsOk());
  PsRegistry::Renew(*registry.Find("ps-2"), kT0 + absl::Seconds(4));
  PsRegistry::Renew(*registry.Find("ps-2"), kT0);  // never backwards
  const absl::Time now = kT0 + absl::Seconds(6);
  EXPECT_THAT(registry.Expired(now, absl::Seconds(5)), ElementsAre("ps-1"));
  PsRegistry::MarkLost(*registry.Find("ps-1"), now);
  EXPECT_THAT(registry.Expired(now, absl::Seconds(5)), IsEmpty());
  ASSERT_THAT(registry.Live(), SizeIs(1));
  EXPECT_EQ(registry.Live()[0]->id, "ps-2");
  EXPECT_EQ(registry.FindLiveByAddress("h:1"), nullptr);
  const ParameterServerInfo info = PsRegistry::Info(*registry.Find("ps-1"));
  EXPECT_TRUE(info.lost());
  EXPECT_EQ(info.address(), "h:1");
}

TEST(ModeHistoryTest, NoSteps_TheInitialMode) {
  EXPECT_EQ(ModeHistory(SYNC_MODE_PS).current(), SYNC_MODE_PS);
  EXPECT_EQ(ModeHistory(SYNC_MODE_UNSPECIFIED).current(), SYNC_MODE_RING);
  EXPECT_THAT(ModeHistory(SYNC_MODE_PS).Switches(), IsEmpty());
}

TEST(ModeHistoryTest, OutOfOrderAndRepeatedSteps_SwitchesBetweenNeighbours) {
  ModeHistory modes(SYNC_MODE_RING);
  modes.Record(5, SYNC_MODE_RING, 0, /*switch_s=*/0.25);
  modes.Record(0, SYNC_MODE_UNSPECIFIED, 0);  // reads as ring
  EXPECT_THAT(modes.Switches(), IsEmpty());
  modes.Record(3, SYNC_MODE_PS, 2);
  // 0 R, 3 P, 5 R: two switches.
  ASSERT_THAT(modes.Switches(), SizeIs(2));
  modes.Record(4, SYNC_MODE_PS, 0);
  modes.Record(2, SYNC_MODE_PS, 0);
  // 0 R, 2 P, 3 P, 4 P, 5 R: the switch moved to step 2 (its epoch, 0).
  std::vector<SwitchRecord> switches = modes.Switches();
  ASSERT_THAT(switches, SizeIs(2));
  EXPECT_EQ(switches[0].step(), 2);
  EXPECT_EQ(switches[0].epoch(), 0);
  EXPECT_EQ(switches[1].step(), 5);
  EXPECT_EQ(switches[1].to_mode(), SYNC_MODE_RING);
  EXPECT_EQ(switches[1].move_s(), 0.25);
  EXPECT_EQ(modes.current(), SYNC_MODE_RING);
  // Step 5 reported again in PS: no switch back any more.
  modes.Record(5, SYNC_MODE_PS, 0);
  switches = modes.Switches();
  ASSERT_THAT(switches, SizeIs(1));
  EXPECT_EQ(switches[0].step(), 2);
  EXPECT_EQ(modes.current(), SYNC_MODE_PS);
}

}  // namespace
}  // namespace gradsync
