// common/secret.h: HMAC-SHA256 against RFC 4231's published vectors,
// random secrets, the constant-time compare and the PS token derivation.
#include "common/secret.h"

#include <set>
#include <string>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace {

std::string Hex(const std::string& bytes) {
  return absl::BytesToHexString(bytes);
}

TEST(SecretTest, HmacSha256_MatchesRfc4231) {
  // Test case 2: a short key.
  EXPECT_EQ(Hex(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 1: 20 bytes of 0x0b, "Hi There".
  EXPECT_EQ(Hex(HmacSha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST(SecretTest, RandomSecret_HasTheSizeAndDiffers) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string secret = RandomSecret();
    EXPECT_EQ(secret.size(), kSecretBytes);
    seen.insert(secret);
  }
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_EQ(RandomSecret(16).size(), 16u);
}

TEST(SecretTest, SecretsEqual_NeedsEqualNonEmptyContents) {
  EXPECT_TRUE(SecretsEqual("abc", "abc"));
  EXPECT_FALSE(SecretsEqual("abc", "abd"));
  EXPECT_FALSE(SecretsEqual("abc", "abcd"));
  EXPECT_FALSE(SecretsEqual("", ""));  // a missing secret never matches
  EXPECT_FALSE(SecretsEqual("abc", ""));
}

TEST(SecretTest, PsToken_DependsOnTheKeyAndTheJob) {
  EXPECT_EQ(PsTokenForJob("", "job-1"), "");
  const std::string key = RandomSecret();
  EXPECT_EQ(PsTokenForJob(key, "job-1"), PsTokenForJob(key, "job-1"));
  EXPECT_NE(PsTokenForJob(key, "job-1"), PsTokenForJob(key, "job-2"));
  EXPECT_NE(PsTokenForJob(key, "job-1"),
            PsTokenForJob(RandomSecret(), "job-1"));
  EXPECT_EQ(PsTokenForJob(key, "job-1").size(), kMacBytes);
}

}  // namespace
}  // namespace gradsync
