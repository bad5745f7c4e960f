// The ring handshake's proof of the job secret
// (collectives/transports/tcp/wire.h): ranks that share the secret connect and
// reduce exactly; a client that knows the job id and a rank but not the secret
// is refused, named, and does not stall the real ranks; a listener at a forged
// address is refused by the connecting rank before it proves anything itself.
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "collectives/memory_store.h"
#include "collectives/tcp/tcp_communicator.h"
#include "collectives/transports/tcp/socket.h"
#include "collectives/transports/tcp/wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/secret.h"
#include "tests/collectives/rank_group.h"

namespace gradsync::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr absl::string_view kJob = "job-7/1";

TcpOptions SecretOptions(std::string secret) {
  TcpOptions o = SmallPipelineOptions();
  o.job_id = std::string(kJob);
  o.job_secret = std::move(secret);
  o.connect_timeout = absl::Seconds(5);
  o.timeout = absl::Seconds(5);
  return o;
}

// Sums rank+1 over `comms`' ranks and checks every rank got 1+...+N.
void ExpectExactAllReduce(
    std::vector<absl::StatusOr<std::unique_ptr<Communicator>>>& comms) {
  const int n = static_cast<int>(comms.size());
  std::vector<std::thread> threads;
  std::vector<std::vector<float>> bufs(n);
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(comms[r].ok()) << "rank " << r << ": " << comms[r].status();
    bufs[r].assign(1000, static_cast<float>(r + 1));
  }
  std::vector<absl::Status> status(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      status[r] =
          (*comms[r])->AllReduce(bufs[r].data(), bufs[r].data(), bufs[r].size(),
                                 DataType::kFloat32, ReduceOp::kSum);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(status[r].ok()) << status[r];
    EXPECT_EQ(bufs[r], std::vector<float>(1000, n * (n + 1) / 2.0f));
  }
}

// Connects to `rank`'s published address.
[[nodiscard]] absl::StatusOr<Socket> Dial(Store& store, int rank) {
  absl::StatusOr<std::string> addr = store.Get(absl::StrCat("tcp/addr/", rank),
                                               absl::Now() + absl::Seconds(5));
  if (!addr.ok()) return addr.status();
  std::string host;
  int port = 0;
  if (absl::Status s = SplitHostPort(*addr, &host, &port); !s.ok()) return s;
  return Socket::Connect(host, port, absl::Now() + absl::Seconds(5));
}

TEST(TcpSecretTest, RanksSharingTheSecret_ConnectAndReduceExactly) {
  MemoryStore store;
  const std::string secret = RandomSecret();
  std::vector<absl::StatusOr<std::unique_ptr<Communicator>>> comms(4);
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&, r] {
      comms[r] = CreateTcpCommunicator(&store, r, 4, SecretOptions(secret));
    });
  }
  for (std::thread& t : threads) t.join();
  ExpectExactAllReduce(comms);
}

// Observation 2 of issue 24: a client with the right job id, claiming
// rank 1, used to be accepted. Now it must prove the secret; it is
// refused, the log names it, and the real rank 1 still gets in.
TEST(TcpSecretTest, ImpostorWithoutTheSecret_IsRefusedNamedAndDoesNotStall) {
  MemoryStore store;
  const std::string secret = RandomSecret();
  absl::Mutex mu;
  std::vector<std::string> refused;
  TcpOptions options0 = SecretOptions(secret);
  options0.on_rejected = [&](absl::string_view why) {
    absl::MutexLock lock(&mu);
    refused.emplace_back(why);
  };
  absl::StatusOr<std::unique_ptr<Communicator>> c0;
  std::thread t0([&] { c0 = CreateTcpCommunicator(&store, 0, 2, options0); });

  absl::StatusOr<Socket> impostor = Dial(store, 0);
  ASSERT_TRUE(impostor.ok()) << impostor.status();
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  const Handshake hs = MakeHandshake(kJob, 1, 0, 2);
  ASSERT_TRUE(impostor->SendAll(&hs, sizeof(hs), deadline, nullptr).ok());
  HandshakeAnswer answer{};
  ASSERT_TRUE(
      impostor->RecvAll(&answer, sizeof(answer), deadline, nullptr).ok());
  ASSERT_EQ(answer.reply, 0u);  // the fields are right...
  // ...but a proof under a guessed secret is not.
  HandshakeProof proof{};
  const std::string guess = HandshakeProofOf(
      "not-the-secret", HandshakeRole::kConnector, hs, answer.nonce);
  std::memcpy(proof.proof, guess.data(), kProofBytes);
  ASSERT_TRUE(impostor->SendAll(&proof, sizeof(proof), deadline, nullptr).ok());
  uint32_t reply = 0;
  ASSERT_TRUE(impostor->RecvAll(&reply, sizeof(reply), deadline, nullptr).ok());
  EXPECT_EQ(reply, static_cast<uint32_t>(HandshakeReply::kBadProof));

  std::vector<absl::StatusOr<std::unique_ptr<Communicator>>> comms(2);
  comms[1] = CreateTcpCommunicator(&store, 1, 2, SecretOptions(secret));
  t0.join();
  comms[0] = std::move(c0);
  ExpectExactAllReduce(comms);
  absl::MutexLock lock(&mu);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_THAT(refused[0], AllOf(HasSubstr("127.0.0.1:"),
                                HasSubstr("rank 1 of 2 for rank 0 in job "
                                          "'job-7/1'"),
                                HasSubstr("no proof of the job secret")));
}

TEST(TcpSecretTest, PeerWithoutAnySecret_IsRefusedOnBothSides) {
  MemoryStore store;
  absl::Status s0, s1;
  std::thread t0([&] {
    TcpOptions o = SecretOptions(RandomSecret());
    o.connect_timeout = absl::Seconds(2);
    s0 = CreateTcpCommunicator(&store, 0, 2, o).status();
  });
  std::thread t1([&] {
    s1 = CreateTcpCommunicator(&store, 1, 2, SecretOptions("")).status();
  });
  t0.join();
  t1.join();
  // Rank 1 proves nothing; rank 0 refuses it and times out naming it.
  EXPECT_TRUE(absl::IsFailedPrecondition(s1)) << s1;
  EXPECT_THAT(std::string(s1.message()),
              HasSubstr("no proof of the job secret"));
  EXPECT_TRUE(absl::IsDeadlineExceeded(s0)) << s0;
  EXPECT_THAT(std::string(s0.message()),
              AllOf(HasSubstr("rank(s) 1 never connected"),
                    HasSubstr("no proof of the job secret")));
}

// A forged "tcp/addr/0" sends rank 1 to a listener that does not know the
// secret: rank 1 refuses it before sending a proof of its own.
TEST(TcpSecretTest, ListenerAtAForgedAddress_IsRefusedByTheConnector) {
  MemoryStore store;
  absl::StatusOr<Socket> listener = Socket::Listen("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok()) << listener.status();
  absl::StatusOr<int> port = listener->LocalPort();
  ASSERT_TRUE(port.ok());
  ASSERT_TRUE(store.Set("tcp/addr/0", absl::StrCat("127.0.0.1:", *port)).ok());
  std::atomic<bool> got_proof{false};
  std::thread impostor([&] {
    const absl::Time deadline = absl::Now() + absl::Seconds(5);
    absl::StatusOr<Socket> conn = listener->Accept(deadline);
    if (!conn.ok()) return;
    Handshake hs{};
    if (!conn->RecvAll(&hs, sizeof(hs), deadline, nullptr).ok()) return;
    HandshakeAnswer answer{};  // accepts, with a made-up proof
    const std::string made_up =
        HandshakeProofOf("a guess", HandshakeRole::kAcceptor, hs, answer.nonce);
    std::memcpy(answer.proof, made_up.data(), kProofBytes);
    if (!conn->SendAll(&answer, sizeof(answer), deadline, nullptr).ok()) return;
    HandshakeProof proof{};
    got_proof = conn->RecvAll(&proof, sizeof(proof),
                              absl::Now() + absl::Milliseconds(500), nullptr)
                    .ok();
  });
  const absl::Status s1 =
      CreateTcpCommunicator(&store, 1, 2, SecretOptions(RandomSecret()))
          .status();
  impostor.join();
  EXPECT_TRUE(absl::IsPermissionDenied(s1)) << s1;
  EXPECT_THAT(std::string(s1.message()),
              AllOf(HasSubstr(absl::StrCat("127.0.0.1:", *port)),
                    HasSubstr("published as rank 0"),
                    HasSubstr("did not prove the job's secret")));
  EXPECT_FALSE(got_proof.load()) << "rank 1 must not answer an impostor";
}

TEST(TcpSecretTest, Proofs_DependOnRoleNonceAndSecret) {
  const Handshake hs = MakeHandshake(kJob, 1, 0, 2);
  const Handshake other = MakeHandshake(kJob, 1, 0, 2);  // another nonce
  uint8_t nonce[kNonceBytes] = {1, 2, 3};
  const std::string a =
      HandshakeProofOf("s", HandshakeRole::kAcceptor, hs, nonce);
  EXPECT_EQ(a.size(), kProofBytes);
  EXPECT_NE(a, HandshakeProofOf("s", HandshakeRole::kConnector, hs, nonce));
  EXPECT_NE(a, HandshakeProofOf("t", HandshakeRole::kAcceptor, hs, nonce));
  EXPECT_NE(a, HandshakeProofOf("s", HandshakeRole::kAcceptor, other, nonce));
  uint8_t proof[kProofBytes];
  std::memcpy(proof, a.data(), kProofBytes);
  EXPECT_TRUE(
      CheckHandshakeProof("s", HandshakeRole::kAcceptor, hs, nonce, proof));
  EXPECT_FALSE(
      CheckHandshakeProof("s", HandshakeRole::kConnector, hs, nonce, proof));
  // No secret: nothing to check.
  EXPECT_TRUE(
      CheckHandshakeProof("", HandshakeRole::kConnector, hs, nonce, proof));
}

}  // namespace
}  // namespace gradsync::testing
