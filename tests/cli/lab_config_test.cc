// The lab's layout and its network plan, without privileges: names,
// addresses, the daemons per host, and the ip/tc commands.
#include "cli/lab/lab_config.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/lab/lab_network.h"
#include "cli/lab/lab_probe.h"
#include "cli/lab/lab_state.h"
#include "cli/lab/lab_up.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace lab {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Texts(const std::vector<NetCommand>& commands) {
  std::vector<std::string> texts;
  for (const NetCommand& c : commands) texts.push_back(CommandText(c));
  return texts;
}

LabConfig TwoWorkersOneServer() {
  LabConfig config;
  config.worker_hosts = 2;
  config.ps_hosts = 1;
  config.link.rate_bps = 500'000'000;
  return config;
}

TEST(LabConfigTest, HostsAreTheHeadThenWorkersThenServers) {
  const std::vector<LabHost> hosts = LabHosts(TwoWorkersOneServer());
  ASSERT_EQ(hosts.size(), 4u);
  EXPECT_EQ(hosts[0].name, "head");
  EXPECT_EQ(hosts[0].role, HostRole::kHead);
  EXPECT_EQ(hosts[0].address, "10.77.0.1");
  EXPECT_EQ(hosts[0].netns, "gsl-head");
  EXPECT_EQ(hosts[1].name, "w1");
  EXPECT_EQ(hosts[1].address, "10.77.0.2");
  EXPECT_EQ(hosts[1].workers, 1);
  EXPECT_EQ(hosts[1].servers, 0);
  EXPECT_EQ(hosts[2].name, "w2");
  EXPECT_EQ(hosts[3].name, "s1");
  EXPECT_EQ(hosts[3].role, HostRole::kServer);
  EXPECT_EQ(hosts[3].address, "10.77.0.4");
  EXPECT_EQ(hosts[3].servers, 1);
  EXPECT_EQ(BridgeName("gsl"), "gsl-br");
  EXPECT_EQ(BridgeAddress("10.77.0"), "10.77.0.254");
}

TEST(LabConfigTest, ColocatedServersRunOnEveryWorkerHost) {
  LabConfig config = TwoWorkersOneServer();
  config.colocate_ps = true;
  config.workers_per_host = 3;
  const std::vector<LabHost> hosts = LabHosts(config);
  EXPECT_EQ(hosts[1].workers, 3);
  EXPECT_EQ(hosts[1].servers, 1);
  EXPECT_EQ(hosts[2].servers, 1);
  EXPECT_EQ(hosts[0].servers, 0);
}

TEST(LabConfigTest, EveryInterfaceNameFitsFifteenCharacters) {
  LabConfig config;
  config.prefix = "abcdefgh";
  config.worker_hosts = 120;
  config.ps_hosts = 120;
  ASSERT_THAT(ValidateLabConfig(config), IsOk());
  for (const LabHost& host : LabHosts(config)) {
    EXPECT_LE(host.veth.size() + 1, 15u) << host.veth << "p";
  }
  EXPECT_LE(BridgeName(config.prefix).size(), 15u);
}

TEST(LabConfigTest, ValidationNamesTheBadSetting) {
  LabConfig config;
  config.prefix = "Lab";
  EXPECT_THAT(ValidateLabConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--prefix 'Lab'")));
  config = LabConfig();
  config.prefix = "toolongname";
  EXPECT_THAT(
      ValidateLabConfig(config),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("15 characters")));
  config = LabConfig();
  config.subnet = "10.77";
  EXPECT_THAT(ValidateLabConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--subnet '10.77'")));
  config.subnet = "10.300.0";
  EXPECT_THAT(ValidateLabConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument));
  config = LabConfig();
  config.worker_hosts = 0;
  EXPECT_THAT(ValidateLabConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("at least one worker host")));
  config = LabConfig();
  config.worker_hosts = 200;
  config.ps_hosts = 100;
  EXPECT_THAT(ValidateLabConfig(config),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("do not fit one /24")));
  config = LabConfig();
  config.link.queue = absl::ZeroDuration();
  EXPECT_THAT(
      ValidateLabConfig(config),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--queue")));
  config = LabConfig();
  config.link.latency = absl::Milliseconds(-1);
  EXPECT_THAT(
      ValidateLabConfig(config),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("negative")));
}

TEST(LabConfigTest, LinkRatesParseAsTcWritesThem) {
  EXPECT_EQ(*ParseLinkRate("1gbit"), 1'000'000'000);
  EXPECT_EQ(*ParseLinkRate("500mbit"), 500'000'000);
  EXPECT_EQ(*ParseLinkRate("2.5Gbit"), 2'500'000'000);
  EXPECT_EQ(*ParseLinkRate("100m"), 100'000'000);
  EXPECT_EQ(*ParseLinkRate("64kbit"), 64'000);
  EXPECT_EQ(*ParseLinkRate("1000000"), 1'000'000);
  for (const char* bad : {"", "fast", "1tbit", "-5mbit", "0.5kbit", "mbit"}) {
    EXPECT_THAT(ParseLinkRate(bad), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("give bits per second")))
        << bad;
  }
  EXPECT_EQ(FormatLinkRate(1'000'000'000), "1gbit");
  EXPECT_EQ(FormatLinkRate(1'500'000), "1500kbit");
  EXPECT_EQ(FormatLinkRate(999), "999bit");
  EXPECT_EQ(DescribeLinkRate(2'500'000'000), "2.5 Gbit/s");
  EXPECT_EQ(DescribeLinkRate(500'000'000), "500 Mbit/s");
}

TEST(LabNetworkTest, UpBuildsABridgeAndOneShapedVethPerHost) {
  const LabConfig config = TwoWorkersOneServer();
  const std::vector<std::string> texts =
      Texts(NetworkUpCommands(config, LabHosts(config)));
  EXPECT_EQ(texts[0], "ip link add gsl-br type bridge");
  EXPECT_THAT(texts, Contains("ip addr add 10.77.0.254/24 dev gsl-br"));
  EXPECT_THAT(texts, Contains("ip netns add gsl-w1"));
  EXPECT_THAT(texts,
              Contains("ip link add gsl-w1 type veth peer name gsl-w1p"));
  EXPECT_THAT(texts, Contains("ip -n gsl-w1 link set gsl-w1p name eth0"));
  EXPECT_THAT(texts, Contains("ip link set gsl-w1 master gsl-br up"));
  EXPECT_THAT(texts, Contains("ip -n gsl-s1 addr add 10.77.0.4/24 dev eth0"));
  EXPECT_THAT(texts, Contains("ip -n gsl-w2 route add default via "
                              "10.77.0.254"));
  // 500 Mbit/s: burst max(128 KiB, 1 ms = 62500 B); the host's own queue
  // 32 MiB, the switch port's 50 ms (3.125 MB) more than the burst.
  EXPECT_THAT(texts, Contains("tc -n gsl-w1 qdisc replace dev eth0 root tbf "
                              "rate 500000000bit burst 131072 limit 33554432"));
  EXPECT_THAT(texts, Contains("tc qdisc replace dev gsl-w1 root tbf rate "
                              "500000000bit burst 131072 limit 3256072"));
  // Both ends of each of the 4 hosts' links, nothing else shaped.
  EXPECT_EQ(std::count_if(texts.begin(), texts.end(),
                          [](const std::string& t) {
                            return t.find(" tbf ") != std::string::npos;
                          }),
            8);
}

TEST(LabNetworkTest, LatencyPutsHalfTheDelayOnEachEndUnderATbf) {
  LinkSettings link;
  link.rate_bps = 1'000'000'000;
  link.latency = absl::Milliseconds(2);
  const std::vector<std::string> texts =
      Texts(ShapeCommands(link, LabHosts(TwoWorkersOneServer())));
  EXPECT_THAT(texts, Contains("tc -n gsl-w1 qdisc replace dev eth0 root "
                              "handle 1: netem delay 1000us limit 100000"));
  EXPECT_THAT(texts, Contains("tc qdisc replace dev gsl-w1 parent 1:1 handle "
                              "10: tbf rate 1000000000bit burst 131072 limit "
                              "6381072"));
  // The old root goes first, and may be missing.
  const std::vector<NetCommand> commands =
      ShapeCommands(link, LabHosts(TwoWorkersOneServer()));
  EXPECT_EQ(CommandText(commands[0]), "tc -n gsl-head qdisc del dev eth0 root");
  EXPECT_TRUE(commands[0].may_fail);
}

TEST(LabNetworkTest, DownDeletesNamespacesLinksAndTheBridgeAndMayFail) {
  const std::vector<NetCommand> down =
      NetworkDownCommands("gsl", {"gsl-head", "gsl-w1"}, {"gsl-br", "gsl-w9"});
  EXPECT_THAT(Texts(down),
              ElementsAre("ip netns del gsl-head", "ip netns del gsl-w1",
                          "ip link del gsl-w9", "ip link del gsl-br"));
  for (const NetCommand& c : down) EXPECT_TRUE(c.may_fail);
}

TEST(LabUpTest, DaemonsBindTheirHostsAddresses) {
  LabConfig config = TwoWorkersOneServer();
  config.colocate_ps = true;
  const cli::control::ClusterPlan plan =
      LabClusterPlan(config, LabHosts(config), {"/c", "/w", "/p"}, "/run/lab");
  EXPECT_EQ(plan.coordinator.address, "10.77.0.1:29400");
  // 500 Mbit/s of frames carry 1448/1514 of it as payload: in GB/s, to 9
  // digits; the one-way delay is alpha.
  EXPECT_THAT(plan.coordinator.args,
              ElementsAre("--listen", "10.77.0.1:29400", "--link-gbps",
                          "0.0597754293", "--link-alpha-us", "0"));
  config.link.latency = absl::Microseconds(250);
  EXPECT_THAT(
      LabClusterPlan(config, LabHosts(config), {"/c", "/w", "/p"}, "/run/lab")
          .coordinator.args,
      ElementsAre("--listen", "10.77.0.1:29400", "--link-gbps", "0.0597754293",
                  "--link-alpha-us", "250"));
  EXPECT_EQ(plan.coordinator.netns, "gsl-head");
  EXPECT_EQ(plan.coordinator.host, "head");
  ASSERT_EQ(plan.workers.size(), 2u);
  EXPECT_EQ(plan.workers[0].name, "worker-w1");
  EXPECT_THAT(plan.workers[0].args,
              ElementsAre("--devices", "cpu:1", "--address", "10.77.0.2",
                          "--tcp-congestion", "default", "--spin-polls", "0",
                          "--ps-transport", "plane"));
  EXPECT_EQ(plan.workers[1].netns, "gsl-w2");
  ASSERT_EQ(plan.servers.size(), 3u);  // colocated on w1, w2, and s1
  EXPECT_EQ(plan.servers[0].name, "ps-w1");
  EXPECT_THAT(plan.servers[0].args, ElementsAre("--listen", "10.77.0.2:0",
                                                "--tcp-congestion", "default"));
  EXPECT_EQ(plan.servers[2].name, "ps-s1");
  EXPECT_EQ(plan.servers[2].host, "s1");
}

TEST(LabUpTest, GrpcTransport_WorkersGetItAndLabJsonKeepsIt) {
  LabConfig config = TwoWorkersOneServer();
  config.ps_transport = "grpc";
  const cli::control::ClusterPlan plan =
      LabClusterPlan(config, LabHosts(config), {"/c", "/w", "/p"}, "/run/lab");
  ASSERT_EQ(plan.workers.size(), 2u);
  EXPECT_THAT(plan.workers[1].args,
              ElementsAre("--devices", "cpu:1", "--address", "10.77.0.3",
                          "--tcp-congestion", "default", "--spin-polls", "0",
                          "--ps-transport", "grpc"));
  // Every server serves a plane (gradsync-ps's default) either way.
  ASSERT_EQ(plan.servers.size(), 1u);
  EXPECT_THAT(plan.servers[0].args, ElementsAre("--listen", "10.77.0.4:0",
                                                "--tcp-congestion", "default"));
  // lab.json keeps it, so that sweeps record which transport they measured.
  EXPECT_EQ(ToSpec(config).ps_transport(), "grpc");
  EXPECT_EQ(FromSpec(ToSpec(config)).ps_transport, "grpc");
  EXPECT_EQ(FromSpec(ToSpec(TwoWorkersOneServer())).ps_transport, "plane");
  LabSpec old_lab_json;  // from before the field: the default
  EXPECT_EQ(FromSpec(old_lab_json).ps_transport, "plane");
}

TEST(LabProbeTest, RingPairsVisitEveryLinkBothWays) {
  EXPECT_THAT(ProbePairList(3, ProbePairs::kRing),
              ElementsAre(std::pair(0, 1), std::pair(1, 2), std::pair(2, 0)));
  EXPECT_THAT(ProbePairList(2, ProbePairs::kRing),
              ElementsAre(std::pair(0, 1), std::pair(1, 0)));
  EXPECT_EQ(ProbePairList(4, ProbePairs::kAll).size(), 12u);
  EXPECT_TRUE(ProbePairList(1, ProbePairs::kAll).empty());
}

TEST(LabProbeTest, ExpectedGoodputIsThePayloadShareOfEachFrame) {
  // MSS 1448 (timestamps) in 1500-byte packets plus 14 bytes of Ethernet.
  EXPECT_DOUBLE_EQ(ExpectedGoodput(1e9, 1448, 1500), 1e9 * 1448 / 1514);
  EXPECT_DOUBLE_EQ(ExpectedGoodput(1e9, 0, 0), 1e9);
}

}  // namespace
}  // namespace lab
}  // namespace gradsync
