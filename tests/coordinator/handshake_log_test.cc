// The coordinator names the clients it turns away before any call
// (security/grpc_listener.h), over real handshakes with a coordinator in
// this process: at a TLS coordinator, a plaintext gRPC client, one that
// speaks no TLS, a client with a certificate of another CA, one with
// another cluster's whole TLS directory (it hangs up on ours) and one with
// no certificate are each reported with their address, the likely cause
// and what to do, and gRPC's own address-less line is not written besides;
// at a plaintext coordinator, a TLS client is; good clients are not. A
// flood of 100 refused handshakes says one line per host per period, and
// every refusal is counted in it or in the count that follows. Every wait
// has a deadline.
//
// Client and server share this process and its gRPC log: the listener
// must not pin a client's own "certificate verify failed" on a connection.
#include <arpa/inet.h>
#include <grpcpp/client_context.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/coordinator.grpc.pb.h"
#include "security/grpc_log_tap.h"
#include "security/tls.h"
#include "server/coordinator/coordinator_server.h"
#include "tests/util/status_matchers.h"
#include "tests/util/two_clusters.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(10);
constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr int kFlood = 100;

GrpcSecurity Daemon(const ClusterCertificates& certs) {
  return GrpcSecurity::Mtls(certs.ca.cert_pem, certs.node.cert_pem,
                            certs.node.key_pem, "test node");
}

// Lines said by one sink, for the test to read.
class Lines {
 public:
  std::function<void(absl::string_view)> Sink() {
    return [this](absl::string_view line) {
      absl::MutexLock lock(&mu_);
      lines_.emplace_back(line);
    };
  }
  std::vector<std::string> All() {
    absl::MutexLock lock(&mu_);
    return lines_;
  }
  std::vector<std::string> With(absl::string_view text) {
    std::vector<std::string> found;
    for (std::string& line : All()) {
      if (absl::StrContains(line, text)) found.push_back(std::move(line));
    }
    return found;
  }
  // The first line containing `text`, waiting up to kWait; "" if none.
  std::string WaitFor(absl::string_view text) {
    const absl::Time deadline = absl::Now() + kWait;
    while (absl::Now() < deadline) {
      std::vector<std::string> found = With(text);
      if (!found.empty()) return found[0];
      absl::SleepFor(absl::Milliseconds(20));
    }
    return "";
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

// Connects to 127.0.0.1:`port`, sends `bytes` and waits for the server to
// close the connection; the client's own address ("127.0.0.1:41234").
std::string SendAndWaitForClose(int port, absl::string_view bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
            0);
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()),
            static_cast<ssize_t>(bytes.size()));
  timeval timeout{static_cast<time_t>(absl::ToInt64Seconds(kWait)), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  char byte;
  EXPECT_LE(read(fd, &byte, 1), 0) << "the server should close, not answer";
  close(fd);
  return absl::StrCat("127.0.0.1:", ntohs(local.sin_port));
}

// One ListWorkers over a channel of its own (a new connection, so a new
// handshake) with `security`.
[[nodiscard]] absl::Status CallWith(const std::string& address,
                                    const GrpcSecurity& security) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  std::unique_ptr<Coordinator::Stub> stub =
      Coordinator::NewStub(NewGrpcChannel(address, security, args));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  ListWorkersResponse response;
  return FromGrpcStatus(
      stub->ListWorkers(&context, ListWorkersRequest(), &response));
}

// The sum of the counts of refusals held back in `lines`: "(and 57 more
// from ..." and "57 more connections from ...".
int64_t HeldBack(const std::vector<std::string>& lines) {
  static const std::regex kCount("(?:\\(and |^)([0-9]+) more");
  int64_t total = 0;
  for (const std::string& line : lines) {
    for (std::sregex_iterator it(line.begin(), line.end(), kCount), end;
         it != end; ++it) {
      int64_t count = 0;
      EXPECT_TRUE(absl::SimpleAtoi((*it)[1].str(), &count));
      total += count;
    }
  }
  return total;
}

class HandshakeLogTest : public ::gradsync::testing::TwoClustersTest {
 protected:
  void SetUp() override {
    GrpcLogTap::Options options;
    options.sink = grpc_lines_.Sink();
    absl::StatusOr<std::unique_ptr<GrpcLogTap>> tap =
        GrpcLogTap::Install(options);
    ASSERT_THAT(tap, IsOk());
    tap_ = *std::move(tap);
  }
  void TearDown() override {
    server_.reset();  // before the tap it uses
    tap_.reset();
  }

  // A coordinator on 127.0.0.1:0, mTLS with certs() unless `plaintext`.
  void Serve(bool plaintext = false, absl::Duration period = absl::Minutes(1)) {
    CoordinatorServerOptions options;
    if (!plaintext) options.security = Daemon(certs());
    options.handshakes.log = said_.Sink();
    options.handshakes.tap = tap_.get();
    options.handshakes.period = period;
    absl::StatusOr<std::unique_ptr<CoordinatorServer>> server =
        CoordinatorServer::Start("127.0.0.1:0", CoordinatorConfig(), options);
    ASSERT_THAT(server, IsOk());
    server_ = *std::move(server);
  }

  // Waits out the pairing of gRPC's last lines with their connections.
  static void Settle() {
    absl::SleepFor(GrpcListener::kPairAfter + absl::Milliseconds(500));
  }

  Lines said_;        // the coordinator's lines
  Lines grpc_lines_;  // gRPC's, through the tap
  std::unique_ptr<GrpcLogTap> tap_;
  std::unique_ptr<CoordinatorServer> server_;
};

TEST_F(HandshakeLogTest, PlaintextClient_IsNamedWithWhatToDo) {
  ASSERT_NO_FATAL_FAILURE(Serve());
  const std::string peer = SendAndWaitForClose(server_->port(), kPreface);
  EXPECT_THAT(said_.WaitFor(peer),
              AllOf(HasSubstr(absl::StrCat("plaintext gRPC from ", peer)),
                    HasSubstr("serves mutual TLS only"), HasSubstr("--tls-dir"),
                    HasSubstr("not --insecure")));
  // What a gRPC client in plaintext sees: refused.
  EXPECT_THAT(CallWith(server_->address(), GrpcSecurity()),
              StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(HandshakeLogTest, ClientSpeakingNoTls_IsNamedWithWhatItSent) {
  ASSERT_NO_FATAL_FAILURE(Serve());
  const std::string peer =
      SendAndWaitForClose(server_->port(), "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_THAT(said_.WaitFor(peer),
              AllOf(HasSubstr("spoke no TLS"), HasSubstr("GET /metrics"),
                    HasSubstr("wrong port")));
}

TEST_F(HandshakeLogTest, ClientWithAnotherCasCertificate_IsNamedWithTheCause) {
  ASSERT_NO_FATAL_FAILURE(Serve());
  // It trusts our CA, so its side of the handshake succeeds; ours refuses
  // the certificate it presents.
  const GrpcSecurity stranger = GrpcSecurity::Mtls(
      certs().ca.cert_pem, other().node.cert_pem, other().node.key_pem, "x");
  EXPECT_THAT(CallWith(server_->address(), stranger),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(
      said_.WaitFor("TLS handshake with"),
      AllOf(ContainsRegex(
                "with 127\\.0\\.0\\.1:[0-9]+ at this coordinator failed"),
            HasSubstr("certificate this cluster's CA did not sign"),
            HasSubstr("another CA"), HasSubstr("certificate verify failed"),
            HasSubstr("copy this cluster's TLS files to that host"),
            HasSubstr("ca.pem, node.pem and node.key"),
            HasSubstr("--tls-dir")));
  Settle();
  // Said once, in our words: gRPC's line went to the coordinator.
  EXPECT_THAT(grpc_lines_.With("Handshake failed"), ::testing::IsEmpty());
}

TEST_F(HandshakeLogTest, ClientOfAnotherCluster_IsNamedAsRefusingOurs) {
  ASSERT_NO_FATAL_FAILURE(Serve());
  // A daemon with another cluster's TLS directory: it refuses this
  // coordinator's certificate and hangs up without a word, before its own
  // is ever looked at.
  EXPECT_THAT(CallWith(server_->address(), Daemon(other())),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(said_.WaitFor("TLS handshake with"),
              AllOf(ContainsRegex("with 127\\.0\\.0\\.1:[0-9]+ at this "
                                  "coordinator failed"),
                    HasSubstr("refused this coordinator's certificate"),
                    HasSubstr("another cluster's CA"),
                    HasSubstr("copy this cluster's TLS files to that host")));
}

TEST_F(HandshakeLogTest, ClientWithoutACertificate_IsNamedWithTheCause) {
  ASSERT_NO_FATAL_FAILURE(Serve());
  const GrpcSecurity anonymous =
      GrpcSecurity::Mtls(certs().ca.cert_pem, "", "", "x");
  EXPECT_THAT(CallWith(server_->address(), anonymous),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(
      said_.WaitFor("TLS handshake with"),
      AllOf(ContainsRegex(
                "with 127\\.0\\.0\\.1:[0-9]+ at this coordinator failed"),
            HasSubstr("presented no certificate"), HasSubstr("--tls-dir")));
}

TEST_F(HandshakeLogTest, TlsClientAtAPlaintextCoordinator_IsNamed) {
  ASSERT_NO_FATAL_FAILURE(Serve(/*plaintext=*/true));
  EXPECT_THAT(CallWith(server_->address(), Daemon(certs())),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(said_.WaitFor("refused a TLS handshake"),
              AllOf(ContainsRegex("from 127\\.0\\.0\\.1:[0-9]+"),
                    HasSubstr("runs plaintext"), HasSubstr("--insecure")));
  // A plaintext client still gets through.
  EXPECT_THAT(CallWith(server_->address(), GrpcSecurity()), IsOk());
}

TEST_F(HandshakeLogTest, GoodClients_AreNotReported) {
  ASSERT_NO_FATAL_FAILURE(Serve());
  for (int i = 0; i < 5; ++i) {
    ASSERT_THAT(CallWith(server_->address(), Daemon(certs())), IsOk());
  }
  Settle();
  EXPECT_THAT(said_.All(), ::testing::IsEmpty());
  EXPECT_THAT(grpc_lines_.With("Handshake failed"), ::testing::IsEmpty());
}

TEST_F(HandshakeLogTest, FloodOfBadTlsHandshakes_SaysOneLinePerHost) {
  ASSERT_NO_FATAL_FAILURE(Serve());
  const GrpcSecurity stranger = GrpcSecurity::Mtls(
      certs().ca.cert_pem, other().node.cert_pem, other().node.key_pem, "x");
  for (int i = 0; i < kFlood; ++i) {
    ASSERT_THAT(CallWith(server_->address(), stranger),
                StatusIs(absl::StatusCode::kUnavailable))
        << "handshake " << i;
  }
  Settle();
  // All from one host within the minute: one line, with the cause; any
  // line of gRPC's the coordinator did not pair is held to one as well.
  const std::vector<std::string> said = said_.With("127.0.0.1");
  ASSERT_EQ(said.size(), 1u) << ::testing::PrintToString(said);
  EXPECT_THAT(said[0], HasSubstr("certificate verify failed"));
  EXPECT_LE(grpc_lines_.With("Handshake failed").size(), 1u);
  // Still serving the cluster's own.
  EXPECT_THAT(CallWith(server_->address(), Daemon(certs())), IsOk());
}

TEST_F(HandshakeLogTest, FloodOfPlaintextClients_IsCountedToTheLast) {
  ASSERT_NO_FATAL_FAILURE(Serve(/*plaintext=*/false,
                                /*period=*/absl::Seconds(1)));
  const absl::Time start = absl::Now();
  for (int i = 0; i < kFlood; ++i) {
    SendAndWaitForClose(server_->port(), kPreface);
  }
  const absl::Duration took = absl::Now() - start;
  // Each refusal is in a line or in a count of those held back; the last
  // period's count is said on its own once the period ends.
  int64_t accounted = 0;
  std::vector<std::string> said;
  for (const absl::Time deadline = absl::Now() + kWait;
       accounted < kFlood && absl::Now() < deadline;
       absl::SleepFor(absl::Milliseconds(50))) {
    said = said_.All();
    accounted = HeldBack(said) +
                static_cast<int64_t>(
                    said_.With("refused plaintext gRPC from 127.0.0.1").size());
  }
  EXPECT_EQ(accounted, kFlood) << ::testing::PrintToString(said);
  // At most a line and a count per period.
  EXPECT_LE(static_cast<int64_t>(said.size()),
            2 * (absl::ToInt64Seconds(took) + 2))
      << ::testing::PrintToString(said);
}

}  // namespace
}  // namespace gradsync
