#include "common/secret.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdlib>
#include <cstring>

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

std::string PsTokenForJob(absl::string_view shard_key,
                          absl::string_view job_id) {
  if (shard_key.empty()) return "";
  std::string message = "gradsync parameter-server token\n";
  message.append(job_id.data(), job_id.size());
  return HmacSha256(shard_key, message);
}

}  // namespace gradsync
