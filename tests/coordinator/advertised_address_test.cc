// A daemon that advertises a loopback address from another host is refused
// at registration, naming the flag (issue 44, trap 2): the pure checks, and
// the coordinator's RegisterWorker / RegisterParameterServer with a peer.
#include "common/advertised_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/coordinator_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;

TEST(PeerAddressTest, LoopbackHosts) {
  for (const char* host : {"127.0.0.1", "127.3.2.1", "::1", "[::1]",
                           "localhost", "LOCALHOST", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host : {"10.0.0.2", "128.0.0.1", "::2", "node-1", ""}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

TEST(PeerAddressTest, PeerIpFromGrpcPeers) {
  EXPECT_THAT(PeerIp("ipv4:10.0.0.2:51234"), Optional(std::string("10.0.0.2")));
  EXPECT_THAT(PeerIp("ipv6:[fe80::1]:51234"), Optional(std::string("fe80::1")));
  EXPECT_THAT(PeerIp("ipv6:%5B::1%5D:51234"), Optional(std::string("::1")));
  EXPECT_EQ(PeerIp("unix:/tmp/sock"), std::nullopt);
  EXPECT_EQ(PeerIp(""), std::nullopt);
  EXPECT_EQ(PeerIp("ipv4:nonsense"), std::nullopt);
}

TEST(PeerAddressTest, HostOfAddresses) {
  EXPECT_EQ(HostOf("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(HostOf("127.0.0.1:29600"), "127.0.0.1");
  EXPECT_EQ(HostOf("node-1:29600"), "node-1");
  EXPECT_EQ(HostOf("[::1]:29600"), "::1");
  EXPECT_EQ(HostOf("::1"), "::1");
}

TEST(PeerAddressTest, LoopbackFromAnotherHost_RefusedNamingTheFlag) {
  EXPECT_THAT(CheckAdvertisedAddress("worker on host b", "127.0.0.1",
                                     "ipv4:10.0.0.2:4000", "--address"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("worker on host b registers the address "
                                       "127.0.0.1"),
                             HasSubstr("called from 10.0.0.2"),
                             HasSubstr("Start it with --address"))));
  // Loopback from loopback (a local cluster), or an unknown peer: fine.
  EXPECT_THAT(CheckAdvertisedAddress("w", "127.0.0.1", "ipv4:127.0.0.1:4000",
                                     "--address"),
              IsOk());
  EXPECT_THAT(CheckAdvertisedAddress("w", "127.0.0.1", "", "--address"),
              IsOk());
  EXPECT_THAT(CheckAdvertisedAddress("w", "10.0.0.2", "ipv4:10.0.0.2:4000",
                                     "--address"),
              IsOk());
}

TEST(LocalAddressTowardTest, TheInterfaceThatReachesTheAddress) {
  EXPECT_THAT(LocalAddressToward("127.0.0.1:29400"),
              IsOkAndHolds(std::string("127.0.0.1")));
  absl::StatusOr<std::string> local = LocalAddressToward("localhost:1");
  ASSERT_THAT(local, IsOk());
  EXPECT_TRUE(IsLoopbackHost(*local)) << *local;
  // Each non-loopback IPv4 address of this host reaches itself.
  ifaddrs* list = nullptr;
  ASSERT_EQ(getifaddrs(&list), 0);
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr,
              text, sizeof(text));
    if (IsLoopbackHost(text)) continue;
    EXPECT_THAT(LocalAddressToward(absl::StrCat(text, ":29400")),
                IsOkAndHolds(std::string(text)));
  }
  freeifaddrs(list);
  EXPECT_THAT(LocalAddressToward("no-such-host.invalid:29400"),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("no-such-host.invalid")));
}

TEST(CoordinatorAdvertisedAddressTest, GivenOrReachable_WildcardsRefused) {
  EXPECT_THAT(
      CoordinatorAdvertisedAddress("coord.example", "0.0.0.0", 29400, "h"),
      IsOkAndHolds(std::string("coord.example:29400")));
  EXPECT_THAT(
      CoordinatorAdvertisedAddress("coord.example:443", "10.0.0.1", 29400, "h"),
      IsOkAndHolds(std::string("coord.example:443")));
  EXPECT_THAT(CoordinatorAdvertisedAddress("[fd00::1]:5", "", 29400, "h"),
              IsOkAndHolds(std::string("[fd00::1]:5")));
  EXPECT_THAT(CoordinatorAdvertisedAddress("fd00::1", "", 7, "h"),
              IsOkAndHolds(std::string("[fd00::1]:7")));
  EXPECT_THAT(CoordinatorAdvertisedAddress("", "10.1.2.3", 29400, "h"),
              IsOkAndHolds(std::string("10.1.2.3:29400")));
  // A wildcard listen: the default route's interface, else the host name.
  for (const char* wildcard : {"0.0.0.0", "::", ""}) {
    absl::StatusOr<std::string> reached =
        CoordinatorAdvertisedAddress("", wildcard, 29400, "h");
    ASSERT_THAT(reached, IsOk());
    EXPECT_TRUE(absl::EndsWith(*reached, ":29400")) << *reached;
    EXPECT_FALSE(absl::StartsWith(*reached, "0.0.0.0")) << *reached;
    EXPECT_NE(*reached, ":29400");
  }
  for (const char* bad : {"0.0.0.0", "[::]:29400", ":29400"}) {
    EXPECT_THAT(
        CoordinatorAdvertisedAddress(bad, "", 29400, "h"),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("wildcard")))
        << bad;
  }
  for (const char* bad : {"coord:0", "coord:70000", "coord:http"}) {
    EXPECT_THAT(
        CoordinatorAdvertisedAddress(bad, "", 29400, "h"),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1..65535")))
        << bad;
  }
}

class AdvertisedAddressTest : public CoordinatorTest {};

TEST_F(AdvertisedAddressTest, RegisterWorker_LoopbackFromAnotherHost_NoWorker) {
  RegisterWorkerRequest request;
  request.set_host("node-b");
  request.set_address("127.0.0.1");
  request.set_wire_version(kWireVersion);
  Device* device = request.add_devices();
  device->set_kind("cpu");
  device->set_index(0);
  EXPECT_THAT(
      service_->RegisterWorker(request, DaemonCaller{"ipv4:10.0.0.2:40000"}),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("--address")));
  EXPECT_THAT(service_->ListWorkers().workers(), IsEmpty());
  EXPECT_THAT(
      service_->RegisterWorker(request, DaemonCaller{"ipv4:127.0.0.1:40000"}),
      IsOk());
}

TEST_F(AdvertisedAddressTest, RegisterPs_LoopbackFromAnotherHost_NoServer) {
  RegisterParameterServerRequest request;
  request.set_host("node-c");
  request.set_address("127.0.0.1:29600");
  request.set_wire_version(kWireVersion);
  EXPECT_THAT(
      service_->RegisterParameterServer(request,
                                        DaemonCaller{"ipv6:[fe80::2]:40000"}),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("--listen")));
  EXPECT_THAT(service_->ListWorkers().parameter_servers(), IsEmpty());
  request.set_address("10.0.0.3:29600");
  EXPECT_THAT(service_->RegisterParameterServer(
                  request, DaemonCaller{"ipv6:[fe80::2]:40000"}),
              IsOk());
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
