// The PS's gRPC connections follow the TCP ring's congestion control policy
// (server/ps/transport/ps_socket_mutator.h): "auto" runs reno at both ends of a
// connection between processes of one host, also through a dual-stack
// listener that sees IPv4 peers as ::ffff:a.b.c.d; "default" keeps the
// system's algorithm; a named one is set at both ends; a target on
// another host gets no mutator; a name the kernel will not set fails the
// server, the client and `gradsync-ps --tcp-congestion` at start. Client and
// server live in this process, so both ends of each connection are among its
// file descriptors.
#include <dirent.h>
#include <grpc/grpc.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/tcp_congestion.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/client/ps_client.h"
#include "server/ps/daemon/ps_daemon.h"
#include "server/ps/daemon/ps_server.h"
#include "server/ps/transport/ps_socket_mutator.h"
#include "server/ps/transport/ps_transport.h"
#include "tests/util/tcp_congestion_test_util.h"

namespace gradsync {
namespace {

using ::testing::Each;
using ::testing::HasSubstr;
using ::testing::SizeIs;

int PortOf(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  }
  if (a.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  }
  return -1;
}

// The algorithm of each connected TCP socket of this process with `port`
// at either end: both ends of every connection to a server on `port`.
std::vector<std::string> AlgorithmsOnPort(int port) {
  std::vector<std::string> names;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return names;
  while (dirent* entry = readdir(dir)) {
    int fd = -1;
    if (!absl::SimpleAtoi(entry->d_name, &fd) || fd == dirfd(dir)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof(local), peer_len = sizeof(peer);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
        getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0 ||
        (PortOf(local) != port && PortOf(peer) != port)) {
      continue;
    }
    absl::StatusOr<std::string> name = GetTcpCongestionControl(fd);
    names.push_back(name.ok() ? *name : name.status().ToString());
  }
  closedir(dir);
  return names;
}

struct Connected {
  std::unique_ptr<PsServer> server;
  std::shared_ptr<grpc::Channel> channel;
};

// A server on `listen` (port 0) and a channel to 127.0.0.1 on its port,
// both under `policy`, connected; a null server if it could not listen.
Connected Connect(const std::string& listen, const std::string& policy) {
  PsServerOptions options;
  options.transport.congestion_control = policy;
  absl::StatusOr<std::unique_ptr<PsServer>> server =
      PsServer::Start(listen, options);
  if (!server.ok()) return {};
  PsTransportOptions transport;
  transport.congestion_control = policy;
  std::shared_ptr<grpc::Channel> channel =
      CreatePsChannel(absl::StrCat("127.0.0.1:", (*server)->port()), transport);
  EXPECT_TRUE(channel->WaitForConnected(std::chrono::system_clock::now() +
                                        std::chrono::seconds(20)));
  return {*std::move(server), std::move(channel)};
}

// Both ends of the one connection of `c` run `algorithm`.
void ExpectBothEndsRun(const Connected& c, const std::string& algorithm) {
  const std::vector<std::string> names = AlgorithmsOnPort(c.server->port());
  EXPECT_THAT(names, SizeIs(2));  // the client's end and the accepted one
  EXPECT_THAT(names, Each(algorithm));
}

bool HasSocketMutator(const grpc::ChannelArguments& args) {
  grpc_channel_args c{};
  args.SetChannelArgs(&c);
  for (size_t i = 0; i < c.num_args; ++i) {
    if (std::string(c.args[i].key) == GRPC_ARG_SOCKET_MUTATOR) return true;
  }
  return false;
}

TEST(PsCongestionTest, AutoRunsRenoAtBothEndsOnOneHost) {
  if (!SocketMutatorSupported()) GTEST_SKIP() << "no socket mutator";
  if (!CheckCongestionControl("reno").ok()) GTEST_SKIP() << "no reno here";
  Connected c = Connect("127.0.0.1:0", "auto");
  ASSERT_NE(c.server, nullptr);
  ExpectBothEndsRun(c, "reno");
}

TEST(PsCongestionTest, AutoJudgesIpv4PeersOfADualStackListener) {
  if (!SocketMutatorSupported()) GTEST_SKIP() << "no socket mutator";
  if (!CheckCongestionControl("reno").ok()) GTEST_SKIP() << "no reno here";
  Connected c = Connect("[::]:0", "auto");
  if (c.server == nullptr) GTEST_SKIP() << "no IPv6 listener on this host";
  ExpectBothEndsRun(c, "reno");
}

TEST(PsCongestionTest, DefaultKeepsTheSystemAlgorithm) {
  const std::string system = testing::SystemTcpCongestionControl();
  if (system.empty()) GTEST_SKIP() << "no /proc/sys/net/ipv4 here";
  Connected c = Connect("127.0.0.1:0", "default");
  ASSERT_NE(c.server, nullptr);
  ExpectBothEndsRun(c, system);
}

TEST(PsCongestionTest, NamedAlgorithmAtBothEnds) {
  if (!SocketMutatorSupported()) GTEST_SKIP() << "no socket mutator";
  // One that differs from the system's, so that the test sees it set.
  std::string named;
  for (const char* candidate : {"cubic", "reno", "bbr"}) {
    if (candidate != testing::SystemTcpCongestionControl() &&
        CheckCongestionControl(candidate).ok()) {
      named = candidate;
      break;
    }
  }
  if (named.empty()) GTEST_SKIP() << "no second algorithm allowed here";
  Connected c = Connect("127.0.0.1:0", named);
  ASSERT_NE(c.server, nullptr);
  ExpectBothEndsRun(c, named);
}

TEST(PsCongestionTest, ClientDecidesByTheTargetHost) {
  if (!SocketMutatorSupported()) GTEST_SKIP() << "no socket mutator";
  PsTransportOptions transport;  // auto
  EXPECT_TRUE(HasSocketMutator(PsChannelArguments("127.0.0.1:29600")));
  EXPECT_TRUE(HasSocketMutator(PsChannelArguments("localhost:29600")));
  EXPECT_TRUE(HasSocketMutator(PsChannelArguments("[::1]:29600")));
  // TEST-NET-1 (RFC 5737): never an address of this host.
  EXPECT_FALSE(HasSocketMutator(PsChannelArguments("192.0.2.1:29600")));
  transport.congestion_control = "default";
  EXPECT_FALSE(
      HasSocketMutator(PsChannelArguments("127.0.0.1:29600", transport)));
  transport.congestion_control = "reno";
  EXPECT_TRUE(
      HasSocketMutator(PsChannelArguments("192.0.2.1:29600", transport)));
  // Never truncated into another algorithm's name.
  transport.congestion_control = "reno-and-then-more";
  EXPECT_FALSE(
      HasSocketMutator(PsChannelArguments("127.0.0.1:29600", transport)));
}

TEST(PsCongestionTest, RefusedAlgorithmFailsServerAndClientAtCreation) {
  PsServerOptions server_options;
  server_options.transport.congestion_control = "no-such-cc";
  absl::StatusOr<std::unique_ptr<PsServer>> server =
      PsServer::Start("127.0.0.1:0", server_options);
  EXPECT_TRUE(absl::IsFailedPrecondition(server.status())) << server.status();
  EXPECT_THAT(std::string(server.status().message()),
              HasSubstr("'no-such-cc'"));
  PsClientOptions client_options;
  client_options.transport.congestion_control = "no-such-cc";
  absl::StatusOr<std::unique_ptr<PsClient>> client = PsClient::Create(
      "job", 0, 4, {{"127.0.0.1:29600", 0, 0, 4}}, client_options);
  EXPECT_TRUE(absl::IsFailedPrecondition(client.status())) << client.status();
}

TEST(PsCongestionTest, DaemonFlag) {
  auto parse = [](std::vector<std::string> args) {
    args.insert(args.begin(), "gradsync-ps");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    bool help = false;
    return ParsePsDaemonFlags(static_cast<int>(argv.size()), argv.data(),
                              &help);
  };
  absl::StatusOr<PsDaemonConfig> config = parse({});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server.transport.congestion_control, "auto");
  config = parse({"--tcp-congestion", "default"});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->server.transport.congestion_control, "default");
  config = parse({"--tcp-congestion=no-such-cc"});
  EXPECT_TRUE(absl::IsInvalidArgument(config.status())) << config.status();
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("--tcp-congestion: the kernel refused TCP congestion "
                        "control 'no-such-cc'"));
}

// What a server registers (issue 44, trap 1): --advertise, with the bound
// port when it names none, else the listen address (the host name for a
// wildcard); --host names the host.
TEST(PsDaemonAddressTest, AdvertiseAndHostFlags) {
  EXPECT_EQ(RegisteredPsAddress("10.0.0.5", "0.0.0.0", 29600),
            "10.0.0.5:29600");
  EXPECT_EQ(RegisteredPsAddress("10.0.0.5:30000", "0.0.0.0", 29600),
            "10.0.0.5:30000");
  EXPECT_EQ(RegisteredPsAddress("[fe80::1]", "::", 29600), "[fe80::1]:29600");
  EXPECT_EQ(RegisteredPsAddress("[fe80::1]:7", "::", 29600), "[fe80::1]:7");
  EXPECT_EQ(RegisteredPsAddress("node-3", "0.0.0.0", 29600), "node-3:29600");
  EXPECT_EQ(RegisteredPsAddress("", "10.0.0.2", 29600), "10.0.0.2:29600");
  EXPECT_EQ(RegisteredPsAddress("", "0.0.0.0", 29600),
            AdvertisedPsAddress("0.0.0.0", 29600));
  // A wildcard listen registers the interface that reaches the
  // coordinator, not a host name that may not resolve elsewhere.
  EXPECT_EQ(RegisteredPsAddress("", "0.0.0.0", 29600, "127.0.0.1:29400"),
            "127.0.0.1:29600");
  std::vector<std::string> args = {"gradsync-ps", "--advertise", "10.0.0.5",
                                   "--host", "ps-node"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  bool help = false;
  absl::StatusOr<PsDaemonConfig> config =
      ParsePsDaemonFlags(static_cast<int>(argv.size()), argv.data(), &help);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->advertise, "10.0.0.5");
  EXPECT_EQ(config->host, "ps-node");
}

}  // namespace
}  // namespace gradsync
