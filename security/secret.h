// Secrets and proofs of knowing them, on OpenSSL's libcrypto (Debian's
// libssl-dev): random credentials, HMAC-SHA256 and a constant-time compare.
// What each secret guards is in docs/security.md:
//   - a daemon credential, handed out by the coordinator at registration
//     and presented with every later call of that daemon;
//   - a job secret, handed to the job's workers with their assignment,
//     which ring peers prove to each other at the handshake (an HMAC over
//     both sides' nonces, so that the secret never crosses the wire);
//   - the coordinator's shard key, handed to every parameter server at
//     registration: a job's PS token is its HMAC over the job id, which
//     the coordinator hands to the job's workers and any server checks
//     without keeping per-job state.
//
//   const std::string secret = RandomSecret();  // 32 random bytes
//   const std::string mac = HmacSha256(secret, "message");
//   if (!SecretsEqual(mac, received)) ...       // constant time
#ifndef GRADSYNC_SECURITY_SECRET_H_
#define GRADSYNC_SECURITY_SECRET_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// Bytes of a credential or job secret, and of an HMAC-SHA256.
inline constexpr size_t kSecretBytes = 32;
inline constexpr size_t kMacBytes = 32;

// `bytes` cryptographically random bytes (OpenSSL's RAND_bytes, which
// aborts the process only if the system has no entropy source at all).
std::string RandomSecret(size_t bytes = kSecretBytes);

// HMAC-SHA256 of `message` under `key`: kMacBytes bytes.
std::string HmacSha256(absl::string_view key, absl::string_view message);

// Equal contents, in time that depends on the sizes only; false when
// either is empty, so that a missing secret never matches.
bool SecretsEqual(absl::string_view a, absl::string_view b);

// OK when `presented` is `expected`, the credential daemon `id` got at
// registration; otherwise PERMISSION_DENIED "the call for <kind> <id>
// carries no credential" (or one "that is not its own"), telling that only
// the daemon registered as `id` may make it.
[[nodiscard]] absl::Status CheckDaemonCredential(absl::string_view kind,
                                                 absl::string_view id,
                                                 absl::string_view expected,
                                                 absl::string_view presented);

// The token that admits a job's ranks to its shards on every parameter
// server: HMAC-SHA256 of the job id under the coordinator's shard key
// ("" for an empty key: no check).
std::string PsTokenForJob(absl::string_view shard_key,
                          absl::string_view job_id);

// ---- the users' token (the coordinator's --user-token-file, the CLI's
// --token-file / GRADSYNC_TOKEN_FILE) ----

// A new token: 64 lowercase hex digits (32 random bytes).
std::string NewUserToken();

// Writes a new token to `path`, created with mode 0600 and O_EXCL |
// O_NOFOLLOW (an existing file or link there is an error), and returns it.
[[nodiscard]] absl::StatusOr<std::string> WriteNewTokenFile(
    const std::string& path);

// The token in `path`: its contents without surrounding whitespace, which
// must be 32 to 1024 printable characters. Errors name the file.
[[nodiscard]] absl::StatusOr<std::string> ReadTokenFile(
    const std::string& path);

}  // namespace gradsync

#endif  // GRADSYNC_SECURITY_SECRET_H_
