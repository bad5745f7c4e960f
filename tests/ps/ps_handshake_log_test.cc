// A parameter server names the clients its gRPC port turns away
// (security/grpc_listener.h, as the coordinator does): at a TLS server in
// this process, a plaintext gRPC client and a client with a certificate of
// another CA are each reported with their address, the cause and what to
// do, in the words of a parameter server. Every wait has a deadline.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/grpc_log_tap.h"
#include "security/tls.h"
#include "server/ps/client/ps_admin_client.h"
#include "server/ps/daemon/ps_server.h"
#include "tests/util/status_matchers.h"
#include "tests/util/two_clusters.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::testing::AllOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(10);

GrpcSecurity Daemon(const ClusterCertificates& certs) {
  return GrpcSecurity::Mtls(certs.ca.cert_pem, certs.node.cert_pem,
                            certs.node.key_pem, "test node");
}

class PsHandshakeLogTest : public ::gradsync::testing::TwoClustersTest {
 protected:
  void SetUp() override {
    GrpcLogTap::Options tap_options;
    tap_options.sink = [](absl::string_view) {};  // gRPC's own: not checked
    absl::StatusOr<std::unique_ptr<GrpcLogTap>> tap =
        GrpcLogTap::Install(tap_options);
    ASSERT_THAT(tap, IsOk());
    tap_ = *std::move(tap);
    PsServerOptions options;
    options.transport.security = Daemon(certs());
    options.handshakes.tap = tap_.get();
    options.handshakes.log = [this](absl::string_view line) {
      absl::MutexLock lock(&mu_);
      lines_.emplace_back(line);
    };
    absl::StatusOr<std::unique_ptr<PsServer>> server =
        PsServer::Start("127.0.0.1:0", options);
    ASSERT_THAT(server, IsOk());
    server_ = *std::move(server);
  }
  void TearDown() override {
    server_.reset();  // before the tap it uses
    tap_.reset();
  }

  // The first line said containing `text`, waiting up to kWait; "" if none.
  std::string WaitFor(absl::string_view text) {
    for (const absl::Time deadline = absl::Now() + kWait;
         absl::Now() < deadline; absl::SleepFor(absl::Milliseconds(20))) {
      absl::MutexLock lock(&mu_);
      for (const std::string& line : lines_) {
        if (absl::StrContains(line, text)) return line;
      }
    }
    return "";
  }

  absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<GrpcLogTap> tap_;
  std::unique_ptr<PsServer> server_;
};

TEST_F(PsHandshakeLogTest, PlaintextClient_IsNamed) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(server_->port()));
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)),
            0);
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length);
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  EXPECT_EQ(write(fd, preface.data(), preface.size()),
            static_cast<ssize_t>(preface.size()));
  const std::string peer = absl::StrCat("127.0.0.1:", ntohs(local.sin_port));
  EXPECT_THAT(WaitFor(peer),
              AllOf(HasSubstr(absl::StrCat("plaintext gRPC from ", peer)),
                    HasSubstr("this parameter server serves mutual TLS only"),
                    HasSubstr("--tls-dir")));
  close(fd);
}

TEST_F(PsHandshakeLogTest, ClientWithAnotherCasCertificate_IsNamed) {
  // It trusts our CA but presents another's certificate.
  const GrpcSecurity stranger = GrpcSecurity::Mtls(
      certs().ca.cert_pem, other().node.cert_pem, other().node.key_pem, "x");
  std::unique_ptr<PsAdminClient> admin =
      PsAdminClient::Connect(server_->address(), absl::Seconds(2), stranger);
  EXPECT_FALSE(admin->GetShardStats("job", -1).ok());
  EXPECT_THAT(
      WaitFor("TLS handshake with"),
      AllOf(ContainsRegex("with 127\\.0\\.0\\.1:[0-9]+ at this "
                          "parameter server failed"),
            HasSubstr("another CA"), HasSubstr("certificate verify failed")));
}

}  // namespace
}  // namespace gradsync
