// The CLI and mutual TLS: `gradsync certs init` (files, modes, refusing to
// overwrite), where the control commands find their TLS directory
// (--tls-dir, else $GRADSYNC_TLS_DIR, else the local cluster's), and what
// they say when the TLS of the two sides does not match, against the fake
// coordinator served with and without TLS.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/control/certs_command.h"
#include "cli/control/command_common.h"
#include "cli/control/job_commands.h"
#include "cli/control/local_cluster.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/certs.h"
#include "security/tls.h"
#include "security/tls_dir.h"
#include "tests/cli/control_test_fixture.h"
#include "tests/util/fake_coordinator.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = absl::StrCat(::testing::TempDir(), "/gradsync_tls_", getpid(), "_",
                         counter++);
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0;
}

class ControlTlsTest : public ::testing::Test {
 protected:
  CommandEnv Env() {
    CommandEnv env;
    env.out = &out_;
    env.err = &err_;
    env.cwd = "/";
    env.run_dir_env = dir_.path() + "/run";
    return env;
  }

  // `gradsync certs init DIR`; the cluster's TLS directory.
  std::string InitCerts(const std::string& dir) {
    EXPECT_EQ(RunCerts({"init", dir}, Env()), kExitOk) << err_.str();
    return dir;
  }

  // The fake coordinator with the daemons' side of `tls_dir`.
  std::unique_ptr<gradsync::testing::FakeCoordinatorServer> ServeTls(
      const std::string& tls_dir) {
    absl::StatusOr<TlsFiles> files = ReadTlsDir(tls_dir, TlsRole::kDaemon);
    EXPECT_TRUE(files.ok()) << files.status();
    auto server = std::make_unique<gradsync::testing::FakeCoordinatorServer>(
        0, 50,
        GrpcSecurity::Mtls(files->ca_pem, files->cert_pem, files->key_pem,
                           tls_dir));
    test_support::AddCannedJobs(&server->fake());
    return server;
  }

  TempDir dir_;
  std::ostringstream out_, err_;
};

TEST_F(ControlTlsTest, CertsInit_WritesKeysPrivately_AndNeverOverwrites) {
  const std::string tls = dir_.path() + "/tls";
  ASSERT_EQ(RunCerts({"init", tls, "--days", "30"}, Env()), kExitOk)
      << err_.str();
  EXPECT_THAT(out_.str(), AllOf(HasSubstr("--tls-dir " + tls),
                                HasSubstr("GRADSYNC_TLS_DIR=" + tls)));
  for (const char* key : {"ca.key", "node.key", "client.key"}) {
    EXPECT_EQ(ModeOf(tls + "/" + key), 0600u) << key;
  }
  EXPECT_TRUE(ReadTlsDir(tls, TlsRole::kDaemon).ok());
  EXPECT_TRUE(ReadTlsDir(tls, TlsRole::kUser).ok());

  std::ifstream before_file(tls + "/ca.pem");
  const std::string before((std::istreambuf_iterator<char>(before_file)), {});
  EXPECT_EQ(RunCerts({"init", tls}, Env()), kExitFailure);
  EXPECT_THAT(err_.str(),
              AllOf(HasSubstr("already holds"), HasSubstr("--force")));
  std::ifstream same_file(tls + "/ca.pem");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(same_file)), {}),
            before);
  EXPECT_EQ(RunCerts({"init", tls, "--force"}, Env()), kExitOk);
  std::ifstream after_file(tls + "/ca.pem");
  EXPECT_NE(std::string((std::istreambuf_iterator<char>(after_file)), {}),
            before);

  EXPECT_EQ(RunCerts({"init"}, Env()), kExitUsage);
  EXPECT_EQ(RunCerts({"sign", tls}, Env()), kExitUsage);
  EXPECT_EQ(RunCerts({"init", tls, "--days", "0"}, Env()), kExitUsage);
}

// --tls-dir, else $GRADSYNC_TLS_DIR, else the local cluster's (cluster.json)
// when it runs the coordinator the command talks to.
TEST_F(ControlTlsTest, TlsDirFromFlagThenEnvThenTheLocalCluster) {
  CommandEnv env = Env();
  std::filesystem::create_directories(env.run_dir_env);
  EXPECT_EQ(ResolveTlsDir("", env, "127.0.0.1:29400"), "");
  ClusterRecord record;
  record.run_dir = env.run_dir_env;
  record.coordinator_address = "127.0.0.1:29400";
  record.tls_dir = env.run_dir_env + "/tls";
  std::ofstream(env.run_dir_env + "/cluster.json")
      << ClusterRecordToJson(record);
  EXPECT_EQ(ResolveTlsDir("", env, "127.0.0.1:29400"), record.tls_dir);
  EXPECT_EQ(ResolveTlsDir("", env, "10.0.0.1:29400"), "");
  env.tls_dir_env = "/etc/gradsync/tls";
  EXPECT_EQ(ResolveTlsDir("", env, "127.0.0.1:29400"), "/etc/gradsync/tls");
  EXPECT_EQ(ResolveTlsDir("/mine", env, "127.0.0.1:29400"), "/mine");
}

TEST_F(ControlTlsTest, CommandsFindTheLocalClustersTlsDir_AndGetThrough) {
  const std::string tls = InitCerts(dir_.path() + "/run/tls");
  auto server = ServeTls(tls);
  ASSERT_NE(server->port(), 0);
  CommandEnv env = Env();
  ClusterRecord record;
  record.run_dir = env.run_dir_env;
  record.coordinator_address = server->address();
  record.tls_dir = tls;
  std::ofstream(env.run_dir_env + "/cluster.json")
      << ClusterRecordToJson(record);
  env.coordinator_env = server->address();
  EXPECT_EQ(RunStatus({"j-1"}, env), kExitOk) << err_.str();
  EXPECT_THAT(out_.str(), HasSubstr("j-1"));
  EXPECT_THAT(err_.str(), Not(HasSubstr("WARNING")));
}

TEST_F(ControlTlsTest, PlaintextAgainstTls_FailsWithTheWarningAndAHint) {
  const std::string tls = InitCerts(dir_.path() + "/tls");
  auto server = ServeTls(tls);
  ASSERT_NE(server->port(), 0);
  CommandEnv env = Env();
  env.coordinator_env = server->address();
  env.tls_dir_env = tls;  // --insecure wins over it
  EXPECT_EQ(RunStatus({"j-1", "--insecure", "--timeout", "3"}, env),
            kExitFailure);
  EXPECT_THAT(err_.str(),
              AllOf(HasSubstr("WARNING: --insecure: gRPC traffic is neither "
                              "encrypted nor authenticated"),
                    HasSubstr("cannot reach the coordinator"),
                    HasSubstr("plaintext"), HasSubstr("--tls-dir")));
}

TEST_F(ControlTlsTest, AnotherClustersCertificates_AreRefusedWithAHint) {
  auto server = ServeTls(InitCerts(dir_.path() + "/ours"));
  ASSERT_NE(server->port(), 0);
  const std::string theirs = InitCerts(dir_.path() + "/theirs");
  CommandEnv env = Env();
  env.coordinator_env = server->address();
  EXPECT_EQ(RunStatus({"j-1", "--tls-dir", theirs, "--timeout", "3"}, env),
            kExitFailure);
  EXPECT_THAT(err_.str(),
              AllOf(HasSubstr("the TLS handshake with the coordinator at " +
                              server->address() + " failed"),
                    HasSubstr("same cluster CA")));
}

TEST_F(ControlTlsTest, TlsAgainstPlaintext_AndAnEmptyTlsDir_Fail) {
  gradsync::testing::FakeCoordinatorServer plain;
  test_support::AddCannedJobs(&plain.fake());
  ASSERT_NE(plain.port(), 0);
  CommandEnv env = Env();
  env.coordinator_env = plain.address();
  env.tls_dir_env = InitCerts(dir_.path() + "/tls");
  EXPECT_EQ(RunStatus({"j-1", "--timeout", "3"}, env), kExitFailure);
  EXPECT_THAT(err_.str(), AllOf(HasSubstr("the TLS handshake"),
                                HasSubstr("this side uses mTLS")));
  err_.str("");
  // A directory without the users' files: named, with what to do.
  std::filesystem::create_directories(dir_.path() + "/empty");
  EXPECT_EQ(RunStatus({"j-1", "--tls-dir", dir_.path() + "/empty"}, env),
            kExitFailure);
  EXPECT_THAT(err_.str(),
              AllOf(HasSubstr("--tls-dir"), HasSubstr("has no ca.pem"),
                    HasSubstr("gradsync certs init")));
  // Plaintext on both sides works (with the warning).
  err_.str("");
  EXPECT_EQ(RunStatus({"j-1", "--insecure"}, env), kExitOk) << err_.str();
}

}  // namespace
}  // namespace control
}  // namespace cli
}  // namespace gradsync
