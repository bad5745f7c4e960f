// TCP congestion control of the backend's connections
// (TcpOptions::congestion_control): "auto" runs reno between ranks of one
// host, "default" keeps the system's algorithm, a named one is set on every
// connection, and one the kernel refuses fails rendezvous before the rank
// publishes its address.
#include "common/tcp_congestion.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "collectives/memory_store.h"
#include "collectives/transports/tcp/rendezvous.h"
#include "collectives/transports/tcp/socket.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/collectives/rank_group.h"
#include "tests/util/tcp_congestion_test_util.h"

namespace gradsync::testing {
namespace {

using ::testing::HasSubstr;

TcpOptions Options(const std::string& congestion) {
  TcpOptions o = SmallPipelineOptions();
  o.connect_timeout = absl::Seconds(10);
  o.congestion_control = congestion;
  return o;
}

// Rendezvous of `size` ranks as threads; each rank's sockets by peer.
std::vector<std::vector<Socket>> ConnectRanks(int size,
                                              const TcpOptions& options) {
  MemoryStore store;
  std::vector<std::vector<Socket>> sockets(size);
  std::vector<absl::Status> status(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      auto s = ConnectAllPeers(&store, r, size, options);
      status[r] = s.status();
      if (s.ok()) sockets[r] = *std::move(s);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < size; ++r) EXPECT_TRUE(status[r].ok()) << status[r];
  return sockets;
}

// Every connection of every rank uses `expected`.
void ExpectAlgorithm(const std::vector<std::vector<Socket>>& sockets,
                     const std::string& expected) {
  for (size_t r = 0; r < sockets.size(); ++r) {
    for (size_t p = 0; p < sockets[r].size(); ++p) {
      if (p == r) continue;
      ASSERT_TRUE(sockets[r][p].valid()) << "rank " << r << " peer " << p;
      EXPECT_TRUE(sockets[r][p].PeerIsLocal());
      absl::StatusOr<std::string> name = sockets[r][p].CongestionControl();
      ASSERT_TRUE(name.ok()) << name.status();
      EXPECT_EQ(*name, expected) << "rank " << r << " peer " << p;
    }
  }
}

TEST(TcpCongestionTest, AutoRunsRenoBetweenRanksOfOneHost) {
  if (!CheckCongestionControl("reno").ok())
    GTEST_SKIP() << "the kernel refuses reno here";
  ExpectAlgorithm(ConnectRanks(3, Options("auto")), "reno");
}

TEST(TcpCongestionTest, DefaultKeepsTheSystemAlgorithm) {
  const std::string system = SystemTcpCongestionControl();
  if (system.empty()) GTEST_SKIP() << "no /proc/sys/net/ipv4 here";
  ExpectAlgorithm(ConnectRanks(3, Options("default")), system);
  ExpectAlgorithm(ConnectRanks(2, Options("")), system);
}

TEST(TcpCongestionTest, NamedAlgorithmOnEveryConnection) {
  const std::string system = SystemTcpCongestionControl();
  if (system.empty() || !CheckCongestionControl(system).ok()) {
    GTEST_SKIP() << "the system's algorithm is not allowed to this process";
  }
  // The system's own name, set explicitly: allowed wherever TCP runs.
  ExpectAlgorithm(ConnectRanks(2, Options(system)), system);
}

TEST(TcpCongestionTest, RefusedAlgorithmFailsBeforePublishing) {
  MemoryStore store;
  const absl::Time start = absl::Now();
  auto comm = CreateTcpCommunicator(&store, 0, 2, Options("no-such-cc"));
  EXPECT_TRUE(absl::IsFailedPrecondition(comm.status())) << comm.status();
  EXPECT_THAT(std::string(comm.status().message()), HasSubstr("'no-such-cc'"));
  EXPECT_THAT(std::string(comm.status().message()),
              HasSubstr("tcp_allowed_congestion_control"));
  // At once, not after waiting for rank 1; and peers never saw rank 0.
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_TRUE(absl::IsDeadlineExceeded(
      store.Get("tcp/addr/0", absl::Now() + absl::Milliseconds(10)).status()));
}

TEST(TcpCongestionTest, OverlongNameIsInvalidArgument) {
  MemoryStore store;
  auto comm =
      CreateTcpCommunicator(&store, 0, 2, Options("a-name-past-15-chars"));
  EXPECT_TRUE(absl::IsInvalidArgument(comm.status())) << comm.status();
  EXPECT_THAT(std::string(comm.status().message()), HasSubstr("15 characters"));
}

// The kernel would truncate "reno-and-then-more" to 15 characters and
// might find an algorithm by that prefix; the socket refuses it instead.
TEST(TcpCongestionTest, SocketRefusesNamesTheKernelWouldTruncate) {
  absl::StatusOr<Socket> s = Socket::Listen("127.0.0.1", 0);
  ASSERT_TRUE(s.ok()) << s.status();
  const std::string before = s->CongestionControl().value_or("?");
  const absl::Status set =
      s->SetCongestionControl("reno" + std::string(20, ' '));
  EXPECT_TRUE(absl::IsInvalidArgument(set)) << set;
  EXPECT_EQ(s->CongestionControl().value_or("?"), before);
}

TEST(TcpCongestionTest, SumsStayExactWithTheSystemAlgorithm) {
  RankGroup group(3, Options("default"));
  constexpr size_t kCount = 100003;
  std::vector<std::vector<float>> bufs(3, std::vector<float>(kCount));
  auto status = group.Run([&](int r) {
    FillInput(DataType::kFloat32, r, bufs[r].data(), kCount);
    return group.comm(r).AllReduce(bufs[r].data(), bufs[r].data(), kCount,
                                   DataType::kFloat32, ReduceOp::kSum);
  });
  for (const auto& s : status) ASSERT_TRUE(s.ok()) << s;
  for (size_t i = 0; i < kCount; ++i) {
    float expected = 0;
    ExpectedReduction(DataType::kFloat32, ReduceOp::kSum, 3, i, &expected);
    for (int r = 0; r < 3; ++r) {
      ASSERT_EQ(bufs[r][i], expected) << "rank " << r << " element " << i;
    }
  }
}

TEST(TcpCongestionTest, PolicyGivesEachPeerItsAlgorithm) {
  EXPECT_EQ(CongestionControlFor("auto", true), "reno");
  EXPECT_EQ(CongestionControlFor("auto", false), "");
  EXPECT_EQ(CongestionControlFor("default", true), "");
  EXPECT_EQ(CongestionControlFor("", true), "");
  EXPECT_EQ(CongestionControlFor("cubic", false), "cubic");
  EXPECT_EQ(CongestionControlFor("cubic", true), "cubic");
}

TEST(TcpCongestionTest, HostIsLocalWithoutLookups) {
  EXPECT_TRUE(HostIsLocal("127.0.0.1"));
  EXPECT_TRUE(HostIsLocal("127.3.2.1"));
  EXPECT_TRUE(HostIsLocal("localhost"));
  EXPECT_TRUE(HostIsLocal("LocalHost"));
  EXPECT_TRUE(HostIsLocal("::1"));
  EXPECT_TRUE(HostIsLocal("[::1]"));
  char name[256] = {0};
  ASSERT_EQ(gethostname(name, sizeof(name) - 1), 0);
  EXPECT_TRUE(HostIsLocal(name));
  // TEST-NET-1 and -2 (RFC 5737) and a reserved name: never this host.
  EXPECT_FALSE(HostIsLocal("192.0.2.1"));
  EXPECT_FALSE(HostIsLocal("198.51.100.7"));
  EXPECT_FALSE(HostIsLocal("no-such-host.invalid"));
  EXPECT_FALSE(HostIsLocal(""));
  EXPECT_FALSE(HostIsLocal("[]"));
}

TEST(TcpCongestionTest, CheckRefusesWhatTheKernelRefuses) {
  EXPECT_TRUE(CheckCongestionControl("auto").ok());
  EXPECT_TRUE(CheckCongestionControl("default").ok());
  EXPECT_TRUE(CheckCongestionControl("").ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(CheckCongestionControl("no-such")));
  EXPECT_TRUE(
      absl::IsInvalidArgument(CheckCongestionControl("a-name-past-15-chars")));
}

// A dual-stack listener (as gRPC's "[::]:port") sees an IPv4 client on
// 127.0.0.1 as ::ffff:127.0.0.1: still a peer on this host.
TEST(TcpCongestionTest, PeerIsLocalThroughADualStackListener) {
  const int listener = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  const int zero = 0;
  setsockopt(listener, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
  sockaddr_in6 any{};
  any.sin6_family = AF_INET6;
  any.sin6_addr = in6addr_any;
  socklen_t len = sizeof(any);
  if (bind(listener, reinterpret_cast<sockaddr*>(&any), sizeof(any)) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&any), &len) != 0) {
    close(listener);
    GTEST_SKIP() << "no IPv6 listener on this host";
  }
  absl::StatusOr<Socket> client =
      Socket::Connect("127.0.0.1", ntohs(any.sin6_port),
                      absl::Now() + absl::Seconds(10), nullptr);
  ASSERT_TRUE(client.ok()) << client.status();
  const int accepted = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(accepted, 0);
  sockaddr_in6 peer{};
  len = sizeof(peer);
  ASSERT_EQ(getpeername(accepted, reinterpret_cast<sockaddr*>(&peer), &len), 0);
  EXPECT_TRUE(IN6_IS_ADDR_V4MAPPED(&peer.sin6_addr));
  EXPECT_TRUE(TcpPeerIsLocal(accepted));
  EXPECT_TRUE(client->PeerIsLocal());
  EXPECT_FALSE(TcpPeerIsLocal(listener));  // not connected
  close(accepted);
  close(listener);
}

}  // namespace
}  // namespace gradsync::testing
