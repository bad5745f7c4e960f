#include "security/secret.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

std::string RandomSecret(size_t bytes) {
  std::string out(bytes, '\0');
  if (bytes > 0 && RAND_bytes(reinterpret_cast<unsigned char*>(out.data()),
                              static_cast<int>(bytes)) != 1) {
    // Without entropy no credential can be trusted; a predictable one
    // would be worse than stopping.
    std::abort();
  }
  return out;
}

std::string HmacSha256(absl::string_view key, absl::string_view message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(),
       mac, &length);
  return std::string(reinterpret_cast<const char*>(mac), length);
}

bool SecretsEqual(absl::string_view a, absl::string_view b) {
  if (a.empty() || b.empty() || a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

absl::Status CheckDaemonCredential(absl::string_view kind, absl::string_view id,
                                   absl::string_view expected,
                                   absl::string_view presented) {
  if (SecretsEqual(presented, expected)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      "the call for ", kind, " ", id,
      presented.empty() ? " carries no credential"
                        : " carries a credential that is not its own",
      "; only the daemon that registered as ", id,
      " may make it (a forged call, or a daemon of an older build)"));
}

std::string PsTokenForJob(absl::string_view shard_key,
                          absl::string_view job_id) {
  if (shard_key.empty()) return "";
  std::string message = "gradsync parameter-server token\n";
  message.append(job_id.data(), job_id.size());
  return HmacSha256(shard_key, message);
}

std::string NewUserToken() { return absl::BytesToHexString(RandomSecret()); }

absl::StatusOr<std::string> WriteNewTokenFile(const std::string& path) {
  const int fd = open(
      path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create the token file ", path, ": ", std::strerror(errno)));
  }
  const std::string token = NewUserToken();
  const std::string line = token + "\n";
  const bool written =
      write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  const bool synced = fsync(fd) == 0;
  close(fd);
  if (!written || !synced) {
    unlink(path.c_str());
    return absl::DataLossError(
        absl::StrCat("cannot write the token file ", path));
  }
  return token;
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat("cannot open the token file ", path,
                                            ": ", std::strerror(errno)));
  }
  struct stat st {};
  std::string contents;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= 4096) {
    contents.resize(static_cast<size_t>(st.st_size));
    const ssize_t n = read(fd, contents.data(), contents.size());
    contents.resize(n > 0 ? static_cast<size_t>(n) : 0);
  } else {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(
        "the token file ", path, " is not a regular file of at most 4 KiB"));
  }
  close(fd);
  const absl::string_view token = absl::StripAsciiWhitespace(contents);
  const bool printable = std::all_of(
      token.begin(), token.end(), [](char c) { return c > ' ' && c < 0x7f; });
  if (token.size() < 32 || token.size() > 1024 || !printable) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the token file ", path,
        " must hold one token of 32 to 1024 printable characters (`gradsync "
        "local up` writes one; `openssl rand -hex 32` makes one)"));
  }
  return std::string(token);
}

}  // namespace gradsync
