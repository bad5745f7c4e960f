// Mutual TLS in real gRPC handshakes (security/tls.h), on the rendezvous
// store's server: a client with the cluster CA and a certificate it signed
// gets through; a client without a certificate, with one of another CA,
// or in plaintext is refused; a TLS client refuses a plaintext server, a
// server of another CA, and a server presenting the users' certificate
// (clientAuth only, no cluster name). Every wait has a deadline.
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/grpc_status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/store.grpc.pb.h"
#include "security/certs.h"
#include "security/tls.h"
#include "server/store/grpc_store.h"
#include "server/store/store_server.h"
#include "tests/util/status_matchers.h"
#include "tests/util/two_clusters.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr absl::Duration kConnectTimeout = absl::Seconds(5);
constexpr absl::Duration kCallTimeout = absl::Seconds(5);

GrpcSecurity Daemon(const ClusterCertificates& certs) {
  return GrpcSecurity::Mtls(certs.ca.cert_pem, certs.node.cert_pem,
                            certs.node.key_pem, "test node");
}
GrpcSecurity User(const ClusterCertificates& certs) {
  return GrpcSecurity::Mtls(certs.ca.cert_pem, certs.client.cert_pem,
                            certs.client.key_pem, "test user");
}

// One Set over `channel`, with a deadline.
[[nodiscard]] absl::Status SetOver(
    const std::shared_ptr<grpc::Channel>& channel) {
  std::unique_ptr<store::StoreService::Stub> stub =
      store::StoreService::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kCallTimeout));
  store::SetRequest request;
  request.set_key("k");
  request.set_value("v");
  store::SetResponse response;
  return FromGrpcStatus(stub->Set(&context, request, &response));
}

// A channel with hand-made SSL credentials (what a foreign client could
// build), verifying the server as the cluster name.
std::shared_ptr<grpc::Channel> RawSslChannel(const std::string& address,
                                             const std::string& ca,
                                             const std::string& cert,
                                             const std::string& key) {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = ca;
  options.pem_cert_chain = cert;
  options.pem_private_key = key;
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride(std::string(kClusterServerName));
  return grpc::CreateCustomChannel(address, grpc::SslCredentials(options),
                                   args);
}

class GrpcTlsTest : public ::gradsync::testing::TwoClustersTest {
 protected:
  // A store server on 127.0.0.1 with `security`.
  std::unique_ptr<StoreServer> Serve(const GrpcSecurity& security) {
    StoreServerOptions options;
    options.security = security;
    absl::StatusOr<std::unique_ptr<StoreServer>> server =
        StoreServer::Start("127.0.0.1:0", options);
    EXPECT_THAT(server, IsOk());
    return server.ok() ? *std::move(server) : nullptr;
  }
};

TEST_F(GrpcTlsTest, ClientWithTheClusterCaAndACertificate_GetsThrough) {
  std::unique_ptr<StoreServer> server = Serve(Daemon(certs()));
  ASSERT_NE(server, nullptr);
  // A daemon (node certificate) and a user (client certificate) alike.
  for (const GrpcSecurity& security : {Daemon(certs()), User(certs())}) {
    absl::StatusOr<std::unique_ptr<Store>> store =
        ConnectGrpcStore(server->address(), kConnectTimeout, security);
    ASSERT_THAT(store, IsOk()) << security.Describe();
    ASSERT_THAT((*store)->Set("key", "value"), IsOk());
    absl::StatusOr<std::string> value =
        (*store)->Get("key", absl::Now() + kCallTimeout);
    ASSERT_THAT(value, IsOk());
    EXPECT_EQ(*value, "value");
  }
  // gRPC's own channel over the same credentials: one call.
  EXPECT_THAT(SetOver(NewGrpcChannel(server->address(), User(certs()))),
              IsOk());
}

TEST_F(GrpcTlsTest, ClientWithoutACertificate_IsRefused) {
  std::unique_ptr<StoreServer> server = Serve(Daemon(certs()));
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(
      SetOver(RawSslChannel(server->address(), certs().ca.cert_pem, "", "")),
      StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(GrpcTlsTest, ClientWithAnotherCasCertificate_IsRefused) {
  std::unique_ptr<StoreServer> server = Serve(Daemon(certs()));
  ASSERT_NE(server, nullptr);
  // It trusts our CA, but presents a certificate another CA signed.
  EXPECT_THAT(
      SetOver(RawSslChannel(server->address(), certs().ca.cert_pem,
                            other().client.cert_pem, other().client.key_pem)),
      StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(
      ConnectGrpcStore(server->address(), absl::Seconds(2), Daemon(other())),
      StatusIs(absl::StatusCode::kUnavailable, HasSubstr("same cluster CA")));
}

TEST_F(GrpcTlsTest, PlaintextClientAgainstATlsServer_IsRefusedWithAHint) {
  std::unique_ptr<StoreServer> server = Serve(Daemon(certs()));
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(SetOver(NewGrpcChannel(server->address(), GrpcSecurity())),
              StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(
      ConnectGrpcStore(server->address(), absl::Seconds(2), GrpcSecurity()),
      StatusIs(absl::StatusCode::kUnavailable,
               AllOf(HasSubstr(server->address()), HasSubstr("plaintext"),
                     HasSubstr("--tls-dir"))));
}

TEST_F(GrpcTlsTest, TlsClientAgainstAPlaintextServer_IsRefused) {
  std::unique_ptr<StoreServer> server = Serve(GrpcSecurity());
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(SetOver(NewGrpcChannel(server->address(), User(certs()))),
              StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(GrpcTlsTest, ServerOfAnotherCa_IsRefusedByTheClient) {
  std::unique_ptr<StoreServer> server = Serve(Daemon(other()));
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(SetOver(NewGrpcChannel(server->address(), User(certs()))),
              StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(GrpcTlsTest, ServerPresentingTheUsersCertificate_IsRefused) {
  // A stolen client.pem/client.key cannot impersonate a daemon: it has
  // neither serverAuth nor the cluster name.
  std::unique_ptr<StoreServer> server = Serve(User(certs()));
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(SetOver(NewGrpcChannel(server->address(), User(certs()))),
              StatusIs(absl::StatusCode::kUnavailable));
}

}  // namespace
}  // namespace gradsync
