#include "security/tls.h"

#include <grpcpp/create_channel.h>

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "security/certs.h"

namespace gradsync {

GrpcSecurity GrpcSecurity::Mtls(std::string ca_pem, std::string cert_pem,
                                std::string key_pem, std::string source) {
  GrpcSecurity security;
  security.material_ = std::make_shared<const Material>(
      Material{std::move(ca_pem), std::move(cert_pem), std::move(key_pem),
               std::move(source)});
  return security;
}

std::string GrpcSecurity::Describe() const {
  return tls() ? absl::StrCat("mTLS (", material_->source, ")") : "plaintext";
}

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(
    const GrpcSecurity& security) {
  if (!security.tls()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = security.material_->ca_pem;
  options.pem_key_cert_pairs.push_back(
      {security.material_->key_pem, security.material_->cert_pem});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(
    const GrpcSecurity& security) {
  if (!security.tls()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = security.material_->ca_pem;
  options.pem_private_key = security.material_->key_pem;
  options.pem_cert_chain = security.material_->cert_pem;
  return grpc::SslCredentials(options);
}

std::shared_ptr<grpc::Channel> NewGrpcChannel(const std::string& address,
                                              const GrpcSecurity& security,
                                              grpc::ChannelArguments args) {
  if (security.tls()) {
    args.SetSslTargetNameOverride(std::string(kClusterServerName));
  }
  return grpc::CreateCustomChannel(address, MakeChannelCredentials(security),
                                   args);
}

void AddTlsFlags(TlsOptions* options, std::vector<FlagSpec>* flags) {
  flags->push_back(
      StringFlag("tls-dir", "DIR",
                 "mutual TLS on every gRPC connection, with the cluster CA "
                 "and certificates in DIR (made by `gradsync certs init DIR`)",
                 &options->dir)
          .Env("GRADSYNC_TLS_DIR"));
  flags->push_back(SwitchFlag(
      "insecure",
      "plaintext gRPC, neither encrypted nor authenticated (tests, an "
      "isolated lab); wins over --tls-dir",
      &options->insecure));
}

absl::StatusOr<GrpcSecurity> SecurityFromOptions(const TlsOptions& options,
                                                 TlsRole role) {
  if (options.insecure || options.dir.empty()) return GrpcSecurity();
  absl::StatusOr<TlsFiles> files = ReadTlsDir(options.dir, role);
  if (!files.ok()) return Annotate(files.status(), "--tls-dir");
  return GrpcSecurity::Mtls(std::move(files->ca_pem),
                            std::move(files->cert_pem),
                            std::move(files->key_pem), options.dir);
}

std::string PlaintextWarning(const TlsOptions& options) {
  if (options.insecure) {
    return "WARNING: --insecure: gRPC traffic is neither encrypted nor "
           "authenticated";
  }
  return "WARNING: no --tls-dir: gRPC traffic is neither encrypted nor "
         "authenticated (give --tls-dir DIR from `gradsync certs init DIR`, "
         "or --insecure to mean it)";
}

std::string SecurityLine(const GrpcSecurity& security,
                         const TlsOptions& options) {
  return security.tls() ? absl::StrCat("gRPC over ", security.Describe())
                        : PlaintextWarning(options);
}

bool IsTlsHandshakeFailure(const absl::Status& status) {
  return !status.ok() &&
         absl::StrContains(absl::AsciiStrToLower(status.message()),
                           "handshake failed");
}

std::string TlsConnectHint(const GrpcSecurity& security,
                           const absl::Status& status) {
  if (status.code() != absl::StatusCode::kUnavailable) return "";
  if (security.tls()) {
    return absl::StrCat(
        "; this side uses ", security.Describe(),
        ", so the other must run with --tls-dir and the same cluster CA (a "
        "plaintext peer, or a certificate of another CA, fails the TLS "
        "handshake)");
  }
  return "; this side uses plaintext: if the other runs with --tls-dir, "
         "give this one the cluster's TLS directory too (--tls-dir or "
         "GRADSYNC_TLS_DIR)";
}

}  // namespace gradsync
