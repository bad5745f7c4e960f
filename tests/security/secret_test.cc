// security/secret.h: HMAC-SHA256 against RFC 4231's published vectors,
// random secrets, the constant-time compare and the PS token derivation.
#include "security/secret.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
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

class TokenFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/gradsync_token_", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(TokenFileTest, Written_IsPrivateAndReadsBack) {
  const std::string path = dir_ + "/user-token";
  absl::StatusOr<std::string> token = WriteNewTokenFile(path);
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(token->size(), 64u);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  absl::StatusOr<std::string> read = ReadTokenFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, *token);  // the newline is not part of it
  // Never over an existing file or link.
  EXPECT_FALSE(WriteNewTokenFile(path).ok());
  ASSERT_EQ(symlink("/nonexistent", (dir_ + "/link").c_str()), 0);
  EXPECT_FALSE(WriteNewTokenFile(dir_ + "/link").ok());
}

TEST_F(TokenFileTest, Unusable_IsRefusedNamingTheFile) {
  std::ofstream(dir_ + "/short") << "abc\n";
  EXPECT_THAT(std::string(ReadTokenFile(dir_ + "/short").status().message()),
              ::testing::HasSubstr("32 to 1024 printable"));
  std::ofstream(dir_ + "/spaces") << std::string(40, 'a') << " b\n";
  EXPECT_FALSE(ReadTokenFile(dir_ + "/spaces").ok());
  EXPECT_EQ(ReadTokenFile(dir_).status().code(),
            absl::StatusCode::kInvalidArgument);  // a directory
  EXPECT_EQ(ReadTokenFile(dir_ + "/missing").status().code(),
            absl::StatusCode::kNotFound);
  std::ofstream(dir_ + "/ok") << "  " << std::string(40, 'k') << "\n\n";
  EXPECT_EQ(*ReadTokenFile(dir_ + "/ok"), std::string(40, 'k'));
}

}  // namespace
}  // namespace gradsync
