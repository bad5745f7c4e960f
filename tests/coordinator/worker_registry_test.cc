// WorkerRegistry: registration checks, leases, and device allocation that
// keeps the ranks of one host next to each other.
#include "server/coordinator/worker_registry.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/wire_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

RegisterWorkerRequest Request(const std::string& host, int devices,
                              const std::string& kind = "cpu") {
  RegisterWorkerRequest request;
  request.set_host(host);
  request.set_address("10.1.1.1");
  request.set_wire_version(kWireVersion);
  for (int i = 0; i < devices; ++i) {
    Device* device = request.add_devices();
    device->set_kind(kind);
    device->set_index(i);
  }
  return request;
}

std::string Add(WorkerRegistry& registry, const RegisterWorkerRequest& r) {
  absl::StatusOr<const WorkerRecord*> worker = registry.Register(r, kT0);
  EXPECT_THAT(worker, IsOk());
  return worker.ok() ? (*worker)->id : "";
}

// "worker:device" of each slot, in rank order.
std::vector<std::string> Places(const std::vector<DeviceSlot>& slots) {
  std::vector<std::string> places;
  places.reserve(slots.size());
  for (const DeviceSlot& slot : slots) {
    places.push_back(slot.worker_id + ":" +
                     std::to_string(slot.device.index()));
  }
  return places;
}

TEST(WorkerRegistryTest, Register_AssignsSequentialIds) {
  WorkerRegistry registry;
  EXPECT_EQ(Add(registry, Request("a", 1)), "w-1");
  EXPECT_EQ(Add(registry, Request("b", 2)), "w-2");
  ASSERT_NE(registry.Find("w-2"), nullptr);
  EXPECT_EQ(registry.Find("w-2")->host, "b");
  EXPECT_EQ(registry.Find("w-02"), nullptr);
  EXPECT_EQ(registry.Find("w-3"), nullptr);
  EXPECT_EQ(registry.Find("x-1"), nullptr);
  EXPECT_EQ(registry.TotalDevices("cpu"), 3);
}

struct BadRegistration {
  std::string name;
  std::function<void(RegisterWorkerRequest*)> mutate;
  std::string message;
};

class BadRegistrationTest : public ::testing::TestWithParam<BadRegistration> {};

TEST_P(BadRegistrationTest, Register_BadRequest_ReturnsInvalidArgument) {
  WorkerRegistry registry;
  RegisterWorkerRequest request = Request("a", 2);
  GetParam().mutate(&request);
  EXPECT_THAT(registry.Register(request, kT0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(GetParam().message)));
  EXPECT_THAT(registry.All(), IsEmpty());
  // The failed registration used no id.
  EXPECT_EQ(Add(registry, Request("a", 1)), "w-1");
}

INSTANTIATE_TEST_SUITE_P(
    AllChecks, BadRegistrationTest,
    ::testing::Values(
        BadRegistration{"EmptyHost",
                        [](RegisterWorkerRequest* r) { r->clear_host(); },
                        "host is empty"},
        BadRegistration{"EmptyAddress",
                        [](RegisterWorkerRequest* r) { r->clear_address(); },
                        "address is empty"},
        BadRegistration{"NoDevices",
                        [](RegisterWorkerRequest* r) { r->clear_devices(); },
                        "no devices"},
        BadRegistration{"UnknownKind",
                        [](RegisterWorkerRequest* r) {
                          r->mutable_devices(0)->set_kind("tpu");
                        },
                        "'tpu'"},
        BadRegistration{"NegativeIndex",
                        [](RegisterWorkerRequest* r) {
                          r->mutable_devices(1)->set_index(-1);
                        },
                        "negative"},
        BadRegistration{"DuplicateDevice",
                        [](RegisterWorkerRequest* r) {
                          r->mutable_devices(1)->set_index(0);
                        },
                        "listed twice"}),
    [](const ::testing::TestParamInfo<BadRegistration>& info) {
      return info.param.name;
    });

TEST(WorkerRegistryTest,
     Register_OtherWireVersion_FailedPreconditionAddsNothing) {
  WorkerRegistry registry;
  for (const int32_t version : {0, kWireVersion + 1}) {
    RegisterWorkerRequest request = Request("a", 1);
    request.set_wire_version(version);
    EXPECT_THAT(registry.Register(request, kT0),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         HasSubstr(absl::StrCat("speaks gradsync wire version ",
                                                version, " "))))
        << version;
  }
  EXPECT_THAT(registry.All(), IsEmpty());
  EXPECT_EQ(Add(registry, Request("a", 1)), "w-1");
}

TEST(WorkerRegistryTest, Allocate_OrdersByHostThenWorkerThenDevice) {
  WorkerRegistry registry;
  Add(registry, Request("host-b", 2));  // w-1
  Add(registry, Request("host-a", 1));  // w-2
  Add(registry, Request("host-b", 1));  // w-3
  Add(registry, Request("host-a", 2));  // w-4
  std::optional<std::vector<DeviceSlot>> slots =
      registry.Allocate("job-1", "cpu", 6);
  ASSERT_TRUE(slots.has_value());
  EXPECT_THAT(Places(*slots), ElementsAre("w-2:0", "w-4:0", "w-4:1", "w-1:0",
                                          "w-1:1", "w-3:0"));
  EXPECT_EQ((*slots)[0].host, "host-a");
  EXPECT_EQ((*slots)[5].host, "host-b");
  EXPECT_EQ(registry.FreeDevices("cpu"), 0);
}

TEST(WorkerRegistryTest, Allocate_TooFewFree_TakesNothing) {
  WorkerRegistry registry;
  Add(registry, Request("a", 2));
  EXPECT_FALSE(registry.Allocate("job-1", "cpu", 3).has_value());
  EXPECT_EQ(registry.FreeDevices("cpu"), 2);
}

TEST(WorkerRegistryTest, Allocate_TakesOnlyTheRequestedKind) {
  WorkerRegistry registry;
  Add(registry, Request("a", 2, "cpu"));
  Add(registry, Request("b", 1, "cuda"));
  std::optional<std::vector<DeviceSlot>> slots =
      registry.Allocate("job-1", "cuda", 1);
  ASSERT_TRUE(slots.has_value());
  EXPECT_THAT(Places(*slots), ElementsAre("w-2:0"));
  EXPECT_FALSE(registry.Allocate("job-2", "cuda", 1).has_value());
  EXPECT_EQ(registry.FreeDevices("cpu"), 2);
}

TEST(WorkerRegistryTest, Release_FreesOnlyThatJobsDevices) {
  WorkerRegistry registry;
  Add(registry, Request("a", 3));
  ASSERT_TRUE(registry.Allocate("job-1", "cpu", 2).has_value());
  ASSERT_TRUE(registry.Allocate("job-2", "cpu", 1).has_value());
  EXPECT_THAT(registry.Find("w-1")->JobIds(), ElementsAre("job-1", "job-2"));
  registry.Release("job-1");
  EXPECT_EQ(registry.FreeDevices("cpu"), 2);
  EXPECT_THAT(registry.Find("w-1")->JobIds(), ElementsAre("job-2"));
  EXPECT_EQ(WorkerRegistry::Info(*registry.Find("w-1")).state(),
            WORKER_STATE_BUSY);
}

TEST(WorkerRegistryTest, Expired_ListsLiveWorkersPastTheLease) {
  WorkerRegistry registry;
  Add(registry, Request("a", 1));
  Add(registry, Request("b", 1));
  WorkerRegistry::Renew(*registry.Find("w-2"), kT0 + absl::Seconds(4));
  EXPECT_THAT(registry.Expired(kT0 + absl::Seconds(5), absl::Seconds(5)),
              IsEmpty());
  EXPECT_THAT(registry.Expired(kT0 + absl::Seconds(6), absl::Seconds(5)),
              ElementsAre("w-1"));
  // A renewal never moves the lease backwards.
  WorkerRegistry::Renew(*registry.Find("w-2"), kT0);
  EXPECT_EQ(registry.Find("w-2")->last_heartbeat, kT0 + absl::Seconds(4));
}

TEST(WorkerRegistryTest, MarkLost_WithdrawsDevicesAndKeepsTheRecord) {
  WorkerRegistry registry;
  Add(registry, Request("a", 2));
  ASSERT_TRUE(registry.Allocate("job-1", "cpu", 1).has_value());
  WorkerRecord* worker = registry.Find("w-1");
  WorkerRegistry::MarkLost(*worker, kT0 + absl::Seconds(9));
  EXPECT_EQ(registry.TotalDevices("cpu"), 0);
  EXPECT_EQ(registry.FreeDevices("cpu"), 0);
  EXPECT_THAT(registry.Expired(kT0 + absl::Hours(1), absl::Seconds(5)),
              IsEmpty());
  const WorkerInfo info = WorkerRegistry::Info(*worker);
  EXPECT_EQ(info.state(), WORKER_STATE_LOST);
  EXPECT_EQ(info.free_devices(), 0);
  EXPECT_EQ(info.devices_size(), 2);
  EXPECT_THAT(registry.DescribeDevices("cpu"), HasSubstr("no live workers"));
}

}  // namespace
}  // namespace gradsync
