// Failure cases of the TCP backend: each must end in a clear error within
// its deadline — never a hang, a crash or silently wrong data.
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "collectives/file_store.h"
#include "collectives/transports/tcp/socket.h"
#include "collectives/transports/tcp/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/collectives/kill_one_rank.h"
#include "tests/collectives/rank_group.h"

namespace gradsync::testing {
namespace {

using ::testing::AllOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;

TcpOptions ShortOptions(absl::string_view job) {
  TcpOptions o = SmallPipelineOptions();
  o.job_id = std::string(job);
  o.connect_timeout = absl::Seconds(2);
  o.timeout = absl::Seconds(2);
  return o;
}

TEST(TcpRendezvousTest, WrongJobId_RefusedWithReasonOnBothSides) {
  MemoryStore store;
  absl::Status s0, s1;
  std::thread t0([&] {
    s0 = CreateTcpCommunicator(&store, 0, 2, ShortOptions("job-a")).status();
  });
  std::thread t1([&] {
    s1 = CreateTcpCommunicator(&store, 1, 2, ShortOptions("job-b")).status();
  });
  t0.join();
  t1.join();
  EXPECT_TRUE(absl::IsFailedPrecondition(s1)) << s1;
  EXPECT_THAT(std::string(s1.message()), HasSubstr("job/generation id"));
  EXPECT_THAT(std::string(s1.message()), HasSubstr("rank 0"));
  EXPECT_TRUE(absl::IsDeadlineExceeded(s0)) << s0;
  EXPECT_THAT(std::string(s0.message()), HasSubstr("rank(s) 1 never"));
  EXPECT_THAT(std::string(s0.message()), HasSubstr("job-b"));
}

TEST(TcpRendezvousTest, MissingRank_DeadlineNamesIt) {
  MemoryStore store;
  auto c = CreateTcpCommunicator(&store, 0, 3, ShortOptions("j"));
  EXPECT_TRUE(absl::IsDeadlineExceeded(c.status())) << c.status();
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("rank(s) 1, 2"));
}

TEST(TcpRendezvousTest, Cancelled_ReturnsPromptlyWithCancelled) {
  MemoryStore store;
  std::atomic<bool> cancelled{false};
  TcpOptions o = SmallPipelineOptions();
  o.connect_timeout = absl::Seconds(30);
  o.cancelled = &cancelled;
  absl::Status s0, s2;
  std::thread t0([&] { s0 = CreateTcpCommunicator(&store, 0, 3, o).status(); });
  std::thread t2([&] { s2 = CreateTcpCommunicator(&store, 2, 3, o).status(); });
  // Both wait for rank 1, which never comes: one accepting, one reading
  // rank 1's address from the store.
  ASSERT_TRUE(
      store.Wait({"tcp/addr/0", "tcp/addr/2"}, absl::Now() + absl::Seconds(10))
          .ok());
  const absl::Time start = absl::Now();
  cancelled = true;
  t0.join();
  t2.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_TRUE(absl::IsCancelled(s0)) << s0;
  EXPECT_TRUE(absl::IsCancelled(s2)) << s2;
}

// Connects to rank 0's published port with raw bytes of our choosing.
[[nodiscard]] absl::StatusOr<Socket> DialRank0(Store& store) {
  auto addr = store.Get("tcp/addr/0", absl::Now() + absl::Seconds(5));
  if (!addr.ok()) return addr.status();
  std::string host;
  int port;
  if (auto s = SplitHostPort(*addr, &host, &port); !s.ok()) return s;
  return Socket::Connect(host, port, absl::Now() + absl::Seconds(5));
}

TEST(TcpRendezvousTest, StrayConnection_IsRefusedAndRendezvousGoesOn) {
  MemoryStore store;
  absl::StatusOr<std::unique_ptr<Communicator>> c0, c1;
  std::thread t0([&] {
    c0 = CreateTcpCommunicator(&store, 0, 2, SmallPipelineOptions());
  });
  auto stray = DialRank0(store);
  ASSERT_TRUE(stray.ok()) << stray.status();
  std::string garbage(sizeof(Handshake), 'x');
  ASSERT_TRUE(stray
                  ->SendAll(garbage.data(), garbage.size(),
                            absl::Now() + absl::Seconds(5), nullptr)
                  .ok());
  uint32_t reply = 0;
  ASSERT_TRUE(stray
                  ->RecvAll(&reply, sizeof(reply),
                            absl::Now() + absl::Seconds(5), nullptr)
                  .ok());
  EXPECT_EQ(static_cast<uint32_t>(HandshakeReply::kBadMagic), reply);
  std::thread t1([&] {
    c1 = CreateTcpCommunicator(&store, 1, 2, SmallPipelineOptions());
  });
  t0.join();
  t1.join();
  ASSERT_TRUE(c0.ok()) << c0.status();
  ASSERT_TRUE(c1.ok()) << c1.status();
}

// Idle connections (an intruder that connects and says nothing) hold up
// no peer: handshakes are read side by side. Read one at a time, with
// 5 s each, 30 of them would outlast this 15 s rendezvous.
TEST(TcpRendezvousTest, IdleConnections_DoNotStallRendezvous) {
  MemoryStore store;
  TcpOptions options = SmallPipelineOptions();
  options.connect_timeout = absl::Seconds(15);
  absl::StatusOr<std::unique_ptr<Communicator>> c0, c1;
  std::thread t0([&] { c0 = CreateTcpCommunicator(&store, 0, 2, options); });
  std::vector<Socket> idle;
  for (int i = 0; i < 30; ++i) {
    absl::StatusOr<Socket> s = DialRank0(store);
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) break;
    idle.push_back(*std::move(s));
  }
  std::thread t1([&] { c1 = CreateTcpCommunicator(&store, 1, 2, options); });
  t0.join();
  t1.join();
  ASSERT_TRUE(c0.ok()) << c0.status();
  ASSERT_TRUE(c1.ok()) << c1.status();
}

// A rendezvous that fails anyway names the connections it turned away.
TEST(TcpRendezvousTest, IdleConnection_NamedWhenTheRendezvousTimesOut) {
  MemoryStore store;
  TcpOptions options = ShortOptions("job");
  options.connect_timeout = absl::Seconds(8);
  absl::StatusOr<std::unique_ptr<Communicator>> c0;
  std::thread t0([&] { c0 = CreateTcpCommunicator(&store, 0, 2, options); });
  absl::StatusOr<Socket> idle = DialRank0(store);
  t0.join();
  ASSERT_TRUE(idle.ok()) << idle.status();
  ASSERT_FALSE(c0.ok());
  EXPECT_TRUE(absl::IsDeadlineExceeded(c0.status())) << c0.status();
  EXPECT_THAT(std::string(c0.status().message()),
              AllOf(HasSubstr("rank(s) 1 never connected"),
                    HasSubstr("1 rejected connection(s)"),
                    HasSubstr("sent no valid handshake within 5s")));
}

TEST(TcpCollectiveTest, GarbagePacket_DataLossNamingTheRank) {
  MemoryStore store;
  absl::StatusOr<std::unique_ptr<Communicator>> c0;
  std::thread t0(
      [&] { c0 = CreateTcpCommunicator(&store, 0, 2, ShortOptions("job")); });
  auto fake = DialRank0(store);  // plays rank 1, then misbehaves
  ASSERT_TRUE(fake.ok()) << fake.status();
  // A full handshake of a job without a secret: zero proofs.
  Handshake hs = MakeHandshake("job", 1, 0, 2);
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  ASSERT_TRUE(fake->SendAll(&hs, sizeof(hs), deadline, nullptr).ok());
  HandshakeAnswer answer{};
  ASSERT_TRUE(fake->RecvAll(&answer, sizeof(answer), deadline, nullptr).ok());
  ASSERT_EQ(0u, answer.reply);
  const HandshakeProof proof{};
  ASSERT_TRUE(fake->SendAll(&proof, sizeof(proof), deadline, nullptr).ok());
  uint32_t reply = 1;
  ASSERT_TRUE(fake->RecvAll(&reply, sizeof(reply), deadline, nullptr).ok());
  ASSERT_EQ(0u, reply);
  // The transport choice (wire.h): this fake stays on TCP.
  ShmHello theirs{};
  ASSERT_TRUE(fake->RecvAll(&theirs, sizeof(theirs), deadline, nullptr).ok());
  const ShmHello hello = MakeShmHello(false, "fake-host");
  ASSERT_TRUE(fake->SendAll(&hello, sizeof(hello), deadline, nullptr).ok());
  t0.join();
  ASSERT_TRUE(c0.ok()) << c0.status();
  std::string garbage(64, '\xab');
  ASSERT_TRUE(
      fake->SendAll(garbage.data(), garbage.size(), deadline, nullptr).ok());
  std::vector<float> buf(10, 1.0f);
  absl::Status s = (*c0)->AllReduce(buf.data(), buf.data(), buf.size(),
                                    DataType::kFloat32, ReduceOp::kSum);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("garbage from rank 1"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("allreduce #1"));
  EXPECT_TRUE(std::all_of(buf.begin(), buf.end(), [](float v) {
    return v == 1.0f;
  })) << "garbage must not reach the user's buffer";
  // A failed communicator stays failed and says why.
  absl::Status again = (*c0)->Barrier();
  EXPECT_TRUE(absl::IsAborted(again)) << again;
  EXPECT_THAT(std::string(again.message()), HasSubstr("garbage"));
}

TEST(TcpCollectiveTest, MismatchedCounts_FailNamingBothRanks) {
  RankGroup group(2, ShortOptions("job"));
  auto status = group.Run([&](int r) {
    std::vector<float> buf(100 + r, 1.0f);
    return group.comm(r).AllReduce(buf.data(), buf.data(), buf.size(),
                                   DataType::kFloat32, ReduceOp::kSum);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(absl::IsFailedPrecondition(status[r])) << status[r];
    EXPECT_THAT(std::string(status[r].message()),
                HasSubstr("element count differs"));
    EXPECT_THAT(std::string(status[r].message()),
                ContainsRegex("rank [01] called allreduce #1 \\(10[01] x"));
  }
}

TEST(TcpCollectiveTest, MismatchedOps_FailWithinDeadline) {
  RankGroup group(3, ShortOptions("job"));
  const absl::Time start = absl::Now();
  auto status = group.Run([&](int r) {
    std::vector<float> buf(1000, 1.0f);
    return group.comm(r).AllReduce(buf.data(), buf.data(), buf.size(),
                                   DataType::kFloat32,
                                   r == 2 ? ReduceOp::kMax : ReduceOp::kSum);
  });
  EXPECT_LT(absl::Now() - start, absl::Seconds(4));
  int named = 0;
  for (int r = 0; r < 3; ++r) {
    EXPECT_FALSE(status[r].ok()) << "rank " << r;
    if (absl::StrContains(status[r].message(), "reduction op differs")) {
      ++named;
    }
  }
  EXPECT_GE(named, 1);
}

TEST(SocketTest, RecvAll_SpinningPastTheDeadline_StopsAtIt) {
  absl::StatusOr<Socket> listener = Socket::Listen("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok()) << listener.status();
  absl::StatusOr<int> port = listener->LocalPort();
  ASSERT_TRUE(port.ok()) << port.status();
  const absl::Time connect_by = absl::Now() + absl::Seconds(5);
  absl::StatusOr<Socket> client =
      Socket::Connect("127.0.0.1", *port, connect_by);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<Socket> server = listener->Accept(connect_by);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(server->Configure(0, 0, absl::Milliseconds(50)).ok());
  // Nothing is ever sent. Spinning for a billion polls (minutes, or hours
  // when the polls' sched_yield hands the core away) must still end at the
  // deadline.
  char byte = 0;
  const absl::Time start = absl::Now();
  const absl::Status s = server->RecvAll(
      &byte, 1, start + absl::Milliseconds(100), nullptr, 1000000000);
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(TcpCollectiveTest, PeerNeverCalls_DeadlineNamesRankAndSequence) {
  RankGroup group(2, ShortOptions("job"));
  float v = 1;
  absl::Status s =
      group.comm(0).AllReduce(&v, &v, 1, DataType::kFloat32, ReduceOp::kSum);
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("rank 1"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("allreduce #1"));
}

TEST(TcpCollectiveTest, WaitDeadline_AbortsAndReturnsPromptly) {
  RankGroup group(2, SmallPipelineOptions());
  float v = 1;
  auto work = group.comm(0).AllReduceAsync(&v, &v, 1, DataType::kFloat32,
                                           ReduceOp::kSum);
  const absl::Time start = absl::Now();
  absl::Status s = work->Wait(absl::Now() + absl::Milliseconds(300));
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_TRUE(absl::IsAborted(group.comm(0).Barrier()));
}

// Ranks as processes (fork) over a FileStore; rank 2 is SIGKILLed in the
// middle of a stream of all-reduces. Every survivor must fail well inside
// the collective timeout, naming rank 2, the op and its sequence number.
TEST(TcpProcessTest, RankKilledMidCollective_SurvivorsNameIt) {
  constexpr int kRanks = 4;
  constexpr int kVictim = 2;
  const absl::Duration timeout = absl::Seconds(30);
  TcpOptions o;
  o.job_id = "kill-test";
  o.transport = Transport::kTcp;  // shm_transport_test has its own
  o.timeout = timeout;
  const KillOneRankRun run = KillOneRankMidStream(o, kRanks, kVictim);
  ASSERT_EQ(run.hung_rank, -1)
      << "rank " << run.hung_rank << " hung after the peer died";
  for (int r = 0; r < kRanks; ++r) {
    if (r == kVictim) continue;
    const int status = run.status[r];
    const std::string& error = run.error[r];
    ASSERT_TRUE(WIFEXITED(status)) << "rank " << r;
    ASSERT_EQ(0, WEXITSTATUS(status)) << "rank " << r;
    EXPECT_THAT(error, ContainsRegex("rank(\\(s\\))? ([0-9]+, )*2[^0-9]"))
        << "rank " << r;
    EXPECT_THAT(error, ContainsRegex("allreduce #[0-9]+")) << "rank " << r;
  }
  EXPECT_LT(run.elapsed, timeout / 2);
}

}  // namespace
}  // namespace gradsync::testing
