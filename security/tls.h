// Transport security of every gRPC server and channel: mutual TLS with the
// cluster's CA (gRPC's SSL credentials), or plaintext for tests and the
// lab. One GrpcSecurity value is made in main() from the --tls-dir and
// --insecure flags and handed down in the options of each server and
// client; MakeServerCredentials and NewGrpcChannel are the only places
// that turn it into gRPC credentials.
//
//   TlsOptions tls;                 // flags: AddTlsFlags(&tls, &rows)
//   ASSIGN_OR_RETURN(GrpcSecurity security,
//                    SecurityFromOptions(tls, TlsRole::kDaemon));
//   if (!security.tls()) std::cerr << "gradsync-ps: " << PlaintextWarning(tls);
//   builder.AddListeningPort(address, MakeServerCredentials(security), &port);
//   auto channel = NewGrpcChannel(address, security, args);
//
// With TLS, a server demands and verifies a client certificate signed by
// the cluster CA (GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY)
// and a channel verifies the server's against the same CA and the name
// kClusterServerName (certs.h says why a fixed name). A plaintext client
// cannot talk to a TLS server, nor the other way round.
//
// Threading: GrpcSecurity is an immutable value, cheap to copy (its PEM
// material is shared); the functions are thread-safe.
#ifndef GRADSYNC_SECURITY_TLS_H_
#define GRADSYNC_SECURITY_TLS_H_

#include <grpcpp/channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/flags.h"
#include "security/tls_dir.h"

namespace gradsync {

class GrpcSecurity {
 public:
  // Plaintext: neither encrypted nor authenticated.
  GrpcSecurity() = default;

  // Mutual TLS presenting `cert_pem` (with `key_pem`) and trusting `ca_pem`.
  // `source` names where they came from in messages (the directory).
  // Unchecked: ReadTlsDir checks files before they get here.
  static GrpcSecurity Mtls(std::string ca_pem, std::string cert_pem,
                           std::string key_pem, std::string source);

  bool tls() const { return material_ != nullptr; }
  // "mTLS (<source>)" or "plaintext", for start-up lines.
  std::string Describe() const;

 private:
  struct Material {
    std::string ca_pem, cert_pem, key_pem, source;
  };
  friend std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(
      const GrpcSecurity& security);
  friend std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(
      const GrpcSecurity& security);

  std::shared_ptr<const Material> material_;
};

// The server side: SSL credentials that require and verify a client
// certificate, or insecure ones for plaintext.
std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(
    const GrpcSecurity& security);

// The channel side: SSL credentials with the CA and this process's
// certificate, or insecure ones. Use NewGrpcChannel, which also sets the
// name the server's certificate must carry.
std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(
    const GrpcSecurity& security);

// A channel to `address` with `args`, secured as `security` says (with
// TLS, the target name is overridden to kClusterServerName). Every
// gradsync channel is made here.
std::shared_ptr<grpc::Channel> NewGrpcChannel(
    const std::string& address, const GrpcSecurity& security,
    grpc::ChannelArguments args = grpc::ChannelArguments());

// ---- from the command line ----

// What a binary's --tls-dir and --insecure say.
struct TlsOptions {
  std::string dir;        // --tls-dir DIR, else $GRADSYNC_TLS_DIR
  bool insecure = false;  // --insecure: plaintext, on purpose
};

// Appends the --tls-dir (env GRADSYNC_TLS_DIR) and --insecure rows.
void AddTlsFlags(TlsOptions* options, std::vector<FlagSpec>* flags);

// The security `options` ask for, with `role`'s certificate: plaintext
// for --insecure, or when no directory is given (the binary then prints
// PlaintextWarning); mTLS from the directory otherwise (ReadTlsDir's
// errors, prefixed with "--tls-dir: ").
[[nodiscard]] absl::StatusOr<GrpcSecurity> SecurityFromOptions(
    const TlsOptions& options, TlsRole role);

// The loud line a binary prints on stderr when it runs plaintext: "WARNING:
// --insecure: gRPC traffic is neither encrypted nor authenticated", or,
// without --insecure, the same with what to pass instead.
std::string PlaintextWarning(const TlsOptions& options);

// What a binary says at start about its gRPC: "gRPC over mTLS (DIR)" when
// `security` has TLS, else PlaintextWarning(options).
std::string SecurityLine(const GrpcSecurity& security,
                         const TlsOptions& options);

// Whether `status` is a connection whose TLS handshake failed (gRPC says
// "Ssl handshake failed: ..." when this side refused the peer's
// certificate; a peer that refused ours just closes the socket).
bool IsTlsHandshakeFailure(const absl::Status& status);

// A hint for a call that failed to connect, on what a TLS mismatch looks
// like from this side ("" for other errors): to append to an UNAVAILABLE
// status's message.
std::string TlsConnectHint(const GrpcSecurity& security,
                           const absl::Status& status);

}  // namespace gradsync

#endif  // GRADSYNC_SECURITY_TLS_H_
