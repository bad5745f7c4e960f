// X.509 certificates for the cluster's mutual TLS, made and checked in
// memory with OpenSSL's libcrypto (Debian's libssl-dev): a cluster CA, and
// leaf certificates it signs for the daemons and the users (the CLI).
// Writing them to a directory is tls_dir.h's; using them is tls.h's.
//
//   ASSIGN_OR_RETURN(ClusterCertificates certs, NewClusterCertificates(365));
//   RETURN_IF_ERROR(CheckCertificate(certs.ca.cert_pem, certs.node.cert_pem,
//                                    certs.node.key_pem, "node.pem"));
//
// Keys are EC P-256; certificates are X.509 v3, SHA-256, with a random
// 128-bit serial and a validity that starts an hour back (clock skew
// between hosts). The CA has basicConstraints CA:TRUE (critical) and
// keyUsage keyCertSign, cRLSign; a leaf has CA:FALSE, keyUsage
// digitalSignature, the extendedKeyUsage its role needs (serverAuth and/or
// clientAuth) and a subjectAltName.
//
// Names: every channel verifies the server's certificate against the
// cluster CA and the name kClusterServerName (a gRPC target-name override,
// tls.h), not the address it dialled: daemons are reached by IP, by host
// names of their own choosing (a PS registers "<hostname>:<port>"), and in
// `gradsync lab` from network namespaces, so one fixed name that every
// daemon's certificate carries is what stays true everywhere. The daemons'
// certificate also carries localhost and 127.0.0.1 for tools that dial
// without the override (grpcurl). The users' certificate has clientAuth
// only and no server name, so it cannot serve as a daemon.
//
// Errors: INTERNAL with OpenSSL's reason when it fails to make a key or
// certificate; CheckCertificate's are below.
// Thread-safe: pure functions.
#ifndef GRADSYNC_SECURITY_CERTS_H_
#define GRADSYNC_SECURITY_CERTS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gradsync {

// The DNS name every daemon certificate carries and every channel checks.
inline constexpr absl::string_view kClusterServerName = "gradsync";

// A certificate and its private key, both PEM (the key PKCS#8).
struct CertAndKey {
  std::string cert_pem;
  std::string key_pem;
};

// What a leaf certificate is for.
struct LeafSpec {
  std::string common_name;
  bool server_auth = false;  // extendedKeyUsage serverAuth: it may serve
  bool client_auth = false;  // clientAuth: it may call
  std::vector<std::string> dns_names;     // subjectAltName DNS entries
  std::vector<std::string> ip_addresses;  // subjectAltName IP entries
};

// Longest validity `gradsync certs init --days` accepts (about 27 years;
// X.509 UTCTime ends in 2049).
inline constexpr int kMaxCertificateDays = 10000;

// A new self-signed CA named `common_name`, valid for `days` (1 ..
// kMaxCertificateDays; INVALID_ARGUMENT otherwise).
[[nodiscard]] absl::StatusOr<CertAndKey> NewCertificateAuthority(
    absl::string_view common_name, int days);

// A new key and a certificate for it that `ca` signs, valid for `days`.
// INVALID_ARGUMENT for a CA that does not parse, a bad IP address, or no
// usage at all.
[[nodiscard]] absl::StatusOr<CertAndKey> IssueCertificate(const CertAndKey& ca,
                                                          const LeafSpec& spec,
                                                          int days);

// What `gradsync certs init` makes: the CA, the daemons' certificate
// (serverAuth and clientAuth, kClusterServerName, localhost, 127.0.0.1,
// ::1) and the users' (clientAuth only).
struct ClusterCertificates {
  CertAndKey ca;
  CertAndKey node;
  CertAndKey client;
};
[[nodiscard]] absl::StatusOr<ClusterCertificates> NewClusterCertificates(
    int days);

// Checks what a process is about to present and trust, so that a mistake
// shows at start naming the file instead of as a failed handshake later:
// `cert_pem` must parse, be signed by `ca_pem` (X509_verify_cert, the CA
// being the only trusted root) and be valid at `now`, and `key_pem` must
// be its private key. `what` names the certificate in errors
// ("/etc/gradsync/tls/node.pem"). INVALID_ARGUMENT saying which check
// failed: "... is not signed by the CA in ...", "... expired on ...",
// "... does not belong to ...".
[[nodiscard]] absl::Status CheckCertificate(absl::string_view ca_pem,
                                            absl::string_view cert_pem,
                                            absl::string_view key_pem,
                                            absl::string_view what,
                                            absl::Time now = absl::Now());

// The subject's common name and the end of validity of a PEM certificate
// (for `certs init`'s report and error messages).
struct CertificateInfo {
  std::string common_name;
  absl::Time not_after;
};
[[nodiscard]] absl::StatusOr<CertificateInfo> InspectCertificate(
    absl::string_view cert_pem);

}  // namespace gradsync

#endif  // GRADSYNC_SECURITY_CERTS_H_
