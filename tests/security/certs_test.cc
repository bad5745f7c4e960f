// The cluster's certificates (security/certs.h) and their directory
// (security/tls_dir.h): the chain verifies with OpenSSL's own
// X509_verify_cert, each key belongs to its certificate, each leaf carries
// the usages and names its role needs, and the checks refuse what does
// not fit, naming it. The handshakes themselves are in
// tests/store/grpc_tls_test.cc.
#include "security/certs.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/tls_dir.h"
#include "tests/util/status_matchers.h"
#include "tests/util/two_clusters.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

X509Ptr Parse(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return X509Ptr(cert);
}

// OpenSSL's verdict on `leaf` under `ca` alone, for `purpose`
// (X509_PURPOSE_SSL_SERVER / _CLIENT); X509_V_OK when it verifies.
int Verify(const std::string& ca, const std::string& leaf, int purpose) {
  X509Ptr root = Parse(ca);
  X509Ptr cert = Parse(leaf);
  if (root == nullptr || cert == nullptr) return -1;
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, root.get());
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, cert.get(), nullptr);
  X509_STORE_CTX_set_purpose(ctx, purpose);
  const int ok = X509_verify_cert(ctx);
  const int error = ok == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return error;
}

class ScopedDir {
 public:
  ScopedDir() {
    char pattern[] = "/tmp/gradsync-certs-test.XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~ScopedDir() { std::system(absl::StrCat("rm -rf ", path_).c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

using CertsTest = ::gradsync::testing::TwoClustersTest;

TEST_F(CertsTest, Chain_VerifiesWithX509VerifyCert_ForEachRolesPurpose) {
  EXPECT_EQ(Verify(certs().ca.cert_pem, certs().node.cert_pem,
                   X509_PURPOSE_SSL_SERVER),
            X509_V_OK);
  EXPECT_EQ(Verify(certs().ca.cert_pem, certs().node.cert_pem,
                   X509_PURPOSE_SSL_CLIENT),
            X509_V_OK);
  EXPECT_EQ(Verify(certs().ca.cert_pem, certs().client.cert_pem,
                   X509_PURPOSE_SSL_CLIENT),
            X509_V_OK);
  // The users' certificate cannot serve.
  EXPECT_NE(Verify(certs().ca.cert_pem, certs().client.cert_pem,
                   X509_PURPOSE_SSL_SERVER),
            X509_V_OK);
}

TEST_F(CertsTest, OtherClustersCa_DoesNotVerify) {
  EXPECT_NE(Verify(other().ca.cert_pem, certs().node.cert_pem,
                   X509_PURPOSE_SSL_SERVER),
            X509_V_OK);
  EXPECT_THAT(CheckCertificate(other().ca.cert_pem, certs().node.cert_pem,
                               certs().node.key_pem, "node.pem"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node.pem is not signed by the cluster CA")));
}

TEST_F(CertsTest, CaAndLeaves_CarryTheirConstraintsAndNames) {
  X509Ptr ca = Parse(certs().ca.cert_pem);
  X509Ptr node = Parse(certs().node.cert_pem);
  X509Ptr client = Parse(certs().client.cert_pem);
  ASSERT_NE(ca, nullptr);
  ASSERT_NE(node, nullptr);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(X509_check_ca(ca.get()), 1);
  EXPECT_EQ(X509_check_ca(node.get()), 0);
  EXPECT_EQ(X509_check_ca(client.get()), 0);
  EXPECT_NE(X509_get_extended_key_usage(node.get()) & XKU_SSL_SERVER, 0u);
  EXPECT_NE(X509_get_extended_key_usage(node.get()) & XKU_SSL_CLIENT, 0u);
  EXPECT_EQ(X509_get_extended_key_usage(client.get()) & XKU_SSL_SERVER, 0u);
  EXPECT_NE(X509_get_extended_key_usage(client.get()) & XKU_SSL_CLIENT, 0u);
  const std::string name(kClusterServerName);
  EXPECT_EQ(X509_check_host(node.get(), name.data(), name.size(), 0, nullptr),
            1);
  EXPECT_EQ(X509_check_host(node.get(), "localhost", 9, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(node.get(), "127.0.0.1", 0), 1);
  EXPECT_NE(X509_check_host(client.get(), name.data(), name.size(), 0, nullptr),
            1);
}

TEST_F(CertsTest, KeysBelongToTheirCertificates_AndNotToOthers) {
  EXPECT_THAT(CheckCertificate(certs().ca.cert_pem, certs().node.cert_pem,
                               certs().node.key_pem, "node.pem"),
              IsOk());
  EXPECT_THAT(CheckCertificate(certs().ca.cert_pem, certs().client.cert_pem,
                               certs().client.key_pem, "client.pem"),
              IsOk());
  EXPECT_THAT(CheckCertificate(certs().ca.cert_pem, certs().node.cert_pem,
                               certs().client.key_pem, "node.pem"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("does not belong to node.pem")));
}

TEST_F(CertsTest, Validity_ExpiredAndNotYetValid_AreNamed) {
  EXPECT_THAT(
      CheckCertificate(certs().ca.cert_pem, certs().node.cert_pem,
                       certs().node.key_pem, "node.pem",
                       absl::Now() + absl::Hours(24 * 31)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expired on")));
  EXPECT_THAT(CheckCertificate(certs().ca.cert_pem, certs().node.cert_pem,
                               certs().node.key_pem, "node.pem",
                               absl::Now() - absl::Hours(2)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("clock")));
  absl::StatusOr<CertificateInfo> info =
      InspectCertificate(certs().node.cert_pem);
  ASSERT_THAT(info, IsOk());
  EXPECT_EQ(info->common_name, "gradsync daemon");
  EXPECT_GT(info->not_after, absl::Now() + absl::Hours(24 * 29));
  EXPECT_LT(info->not_after, absl::Now() + absl::Hours(24 * 31));
}

TEST_F(CertsTest, Garbage_IsInvalidArgumentNamingIt) {
  EXPECT_THAT(CheckCertificate(certs().ca.cert_pem, "not a certificate",
                               certs().node.key_pem, "node.pem"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node.pem holds no PEM certificate")));
  EXPECT_THAT(
      CheckCertificate("", certs().node.cert_pem, certs().node.key_pem,
                       "node.pem"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("CA file")));
  EXPECT_THAT(NewCertificateAuthority("x", 0),
              StatusIs(absl::StatusCode::kInvalidArgument));
  LeafSpec bad;
  bad.common_name = "bad";
  bad.client_auth = true;
  bad.ip_addresses = {"not-an-ip"};
  EXPECT_THAT(
      IssueCertificate(certs().ca, bad, 1),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not-an-ip")));
}

TEST_F(CertsTest, WriteTlsDir_ModesAndContents_ThenReadBackPerRole) {
  ScopedDir scratch;
  const std::string dir = scratch.path() + "/tls";
  ASSERT_THAT(WriteTlsDir(dir, certs(), /*force=*/false), IsOk());
  EXPECT_EQ(ModeOf(dir), 0700u);
  EXPECT_EQ(ModeOf(dir + "/ca.key"), 0600u);
  EXPECT_EQ(ModeOf(dir + "/node.key"), 0600u);
  EXPECT_EQ(ModeOf(dir + "/client.key"), 0600u);
  EXPECT_EQ(ModeOf(dir + "/ca.pem") & 0600, 0600u);
  EXPECT_EQ(ReadAll(dir + "/node.pem"), certs().node.cert_pem);

  absl::StatusOr<TlsFiles> daemon = ReadTlsDir(dir, TlsRole::kDaemon);
  ASSERT_THAT(daemon, IsOk());
  EXPECT_EQ(daemon->cert_pem, certs().node.cert_pem);
  EXPECT_EQ(daemon->key_pem, certs().node.key_pem);
  absl::StatusOr<TlsFiles> user = ReadTlsDir(dir, TlsRole::kUser);
  ASSERT_THAT(user, IsOk());
  EXPECT_EQ(user->cert_pem, certs().client.cert_pem);
}

TEST_F(CertsTest, WriteTlsDir_ExistingFiles_RefusedWithoutForce) {
  ScopedDir scratch;
  const std::string dir = scratch.path();
  std::ofstream(dir + "/node.key") << "keep me";
  EXPECT_THAT(WriteTlsDir(dir, certs(), /*force=*/false),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("node.key"), HasSubstr("--force"))));
  EXPECT_EQ(ReadAll(dir + "/node.key"), "keep me");
  EXPECT_NE(access((dir + "/ca.pem").c_str(), F_OK), 0) << "wrote anyway";
}

TEST_F(CertsTest, WriteTlsDir_Force_ReplacesALinkWithoutFollowingIt) {
  ScopedDir scratch;
  const std::string dir = scratch.path() + "/tls";
  ASSERT_THAT(WriteTlsDir(dir, other(), /*force=*/false), IsOk());
  const std::string victim = scratch.path() + "/victim";
  std::ofstream(victim) << "untouched";
  ASSERT_EQ(unlink((dir + "/ca.key").c_str()), 0);
  ASSERT_EQ(symlink(victim.c_str(), (dir + "/ca.key").c_str()), 0);
  ASSERT_THAT(WriteTlsDir(dir, certs(), /*force=*/true), IsOk());
  EXPECT_EQ(ReadAll(victim), "untouched");
  EXPECT_EQ(ReadAll(dir + "/ca.key"), certs().ca.key_pem);
  EXPECT_EQ(ModeOf(dir + "/ca.key"), 0600u);
  EXPECT_EQ(ReadAll(dir + "/ca.pem"), certs().ca.cert_pem);
}

TEST_F(CertsTest, ReadTlsDir_MissingOrMismatchedFiles_SayWhatToDo) {
  ScopedDir scratch;
  const std::string dir = scratch.path();
  EXPECT_THAT(ReadTlsDir(dir, TlsRole::kDaemon),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("has no ca.pem"),
                             HasSubstr("gradsync certs init"))));
  ASSERT_THAT(WriteTlsDir(dir, certs(), /*force=*/false), IsOk());
  // A node.pem from another `certs init`: the CA next to it did not sign it.
  ASSERT_EQ(unlink((dir + "/node.pem").c_str()), 0);
  std::ofstream(dir + "/node.pem") << other().node.cert_pem;
  EXPECT_THAT(ReadTlsDir(dir, TlsRole::kDaemon),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(dir + "/node.pem")));
  ASSERT_EQ(unlink((dir + "/client.key").c_str()), 0);
  EXPECT_THAT(ReadTlsDir(dir, TlsRole::kUser),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("has no client.key"),
                             HasSubstr("client.pem and client.key"))));
  RemoveTlsDir(dir);
  EXPECT_NE(access((dir + "/ca.key").c_str(), F_OK), 0);
}

}  // namespace
}  // namespace gradsync
