// The files of a cluster's TLS directory, what `gradsync certs init DIR`
// writes and every --tls-dir reads:
//
//   DIR/ca.pem      the cluster CA's certificate (every process trusts it)
//   DIR/ca.key      its key: signs new certificates; keep it off the nodes
//   DIR/node.pem    the daemons' certificate (serverAuth + clientAuth)
//   DIR/node.key
//   DIR/client.pem  the users' (the CLI's) certificate (clientAuth)
//   DIR/client.key
//
// A daemon reads ca.pem, node.pem and node.key; the CLI ca.pem, client.pem
// and client.key (certs.h says what each certificate carries).
//
//   ASSIGN_OR_RETURN(ClusterCertificates certs, NewClusterCertificates(365));
//   RETURN_IF_ERROR(WriteTlsDir("/etc/gradsync/tls", certs, /*force=*/false));
//   ASSIGN_OR_RETURN(TlsFiles mine, ReadTlsDir(dir, TlsRole::kDaemon));
//
// Threading: functions of the file system; two writers of one directory
// at once are not coordinated.
#ifndef GRADSYNC_SECURITY_TLS_DIR_H_
#define GRADSYNC_SECURITY_TLS_DIR_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "security/certs.h"

namespace gradsync {

inline constexpr absl::string_view kCaCertFile = "ca.pem";
inline constexpr absl::string_view kCaKeyFile = "ca.key";
inline constexpr absl::string_view kNodeCertFile = "node.pem";
inline constexpr absl::string_view kNodeKeyFile = "node.key";
inline constexpr absl::string_view kClientCertFile = "client.pem";
inline constexpr absl::string_view kClientKeyFile = "client.key";

// Which certificate a process presents.
enum class TlsRole {
  kDaemon,  // node.pem: coordinator, workers, parameter servers, stores
  kUser,    // client.pem: the CLI
};

// The paths of the six files in `dir`, in the order listed above.
std::vector<std::string> TlsDirFiles(const std::string& dir);

// Writes `certs` into `dir` (created with mode 0700 if missing): keys with
// mode 0600, certificates 0644, each created with O_CREAT | O_EXCL |
// O_NOFOLLOW, written and fsync'ed, then the directory fsync'ed.
// Without `force`, any of the six files (or a link at its name) already
// there is FAILED_PRECONDITION naming them, and nothing is written; with
// it they are unlinked first (a link is removed, never followed).
// INTERNAL naming the file on an I/O error (files already written stay).
[[nodiscard]] absl::Status WriteTlsDir(const std::string& dir,
                                       const ClusterCertificates& certs,
                                       bool force);

// Removes the six files from `dir` and `dir` itself when it is then empty
// (`gradsync local down`); missing ones are fine.
void RemoveTlsDir(const std::string& dir);

// What one process presents and trusts, and where it came from.
struct TlsFiles {
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;
  std::string cert_path;  // for messages
};

// Reads the three files `role` needs from `dir` (each at most 1 MiB, a
// regular file) and checks them together (CheckCertificate). Errors name
// the file and what to do: NOT_FOUND "... has no node.key: make the
// directory with `gradsync certs init DIR`, or copy ca.pem, node.pem and
// node.key into it from the host that did", PERMISSION_DENIED for an
// unreadable one, INVALID_ARGUMENT for contents that do not fit.
[[nodiscard]] absl::StatusOr<TlsFiles> ReadTlsDir(const std::string& dir,
                                                  TlsRole role);

}  // namespace gradsync

#endif  // GRADSYNC_SECURITY_TLS_DIR_H_
