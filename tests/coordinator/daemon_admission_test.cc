// Daemon identity (daemon_admission.h): only a caller proving to be a
// daemon of this cluster registers as a worker or a parameter server, and
// so receives job secrets. Under mTLS that is the node certificate (a
// users' client.pem is refused); with a join token, the token; a refusal
// adds nothing, is logged, and says what to do.
#include "server/coordinator/daemon_admission.h"

#include <string>
#include <vector>

#include "common/wire_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/coordinator_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

RegisterWorkerRequest Worker(const std::string& join_token) {
  RegisterWorkerRequest request;
  request.set_host("node-a");
  request.set_address("10.0.0.1");
  request.set_wire_version(kWireVersion);
  request.set_join_token(join_token);
  Device* device = request.add_devices();
  device->set_kind("cpu");
  device->set_index(0);
  return request;
}

RegisterParameterServerRequest Server(const std::string& join_token) {
  RegisterParameterServerRequest request;
  request.set_host("node-b");
  request.set_address("10.0.0.2:29600");
  request.set_wire_version(kWireVersion);
  request.set_join_token(join_token);
  return request;
}

TEST(IsNodeCertificateTest, OnlyTheClusterServerNameMakesANode) {
  EXPECT_TRUE(IsNodeCertificate({"localhost", "gradsync"}));
  EXPECT_FALSE(IsNodeCertificate({}));  // client.pem: no names at all
  EXPECT_FALSE(IsNodeCertificate({"gradsync.evil", "Gradsync", "localhost"}));
}

class JoinTokenTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    join_token_ = "the-cluster-join-token";
    CoordinatorTest::SetUp();
  }
};

TEST_F(JoinTokenTest, Worker_WithoutOrWithAWrongToken_RefusedNothingAdded) {
  for (const std::string& token : {std::string(), std::string("guess")}) {
    EXPECT_THAT(service_->RegisterWorker(Worker(token),
                                         DaemonCaller{"ipv4:10.0.0.1:1"}),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         HasSubstr("--join-token-file")))
        << "token '" << token << "'";
  }
  EXPECT_THAT(service_->ListWorkers().workers(), IsEmpty());
  EXPECT_THAT(events_,
              Contains(HasSubstr("refused to register a worker on "
                                 "host node-a (from ipv4:10.0.0.1:1)")));
  EXPECT_THAT(service_->RegisterWorker(Worker(join_token_)), IsOk());
  EXPECT_THAT(service_->ListWorkers().workers(), SizeIs(1));
}

TEST_F(JoinTokenTest, Server_WithoutTheToken_RefusedNothingAdded) {
  EXPECT_THAT(service_->RegisterParameterServer(Server("")),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("presented no join token")));
  EXPECT_THAT(service_->ListWorkers().parameter_servers(), IsEmpty());
  EXPECT_THAT(service_->RegisterParameterServer(Server(join_token_)), IsOk());
  EXPECT_THAT(service_->ListWorkers().parameter_servers(), SizeIs(1));
}

class NodeCertificateTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    require_node_certificate_ = true;
    CoordinatorTest::SetUp();
  }
};

TEST_F(NodeCertificateTest, UsersCertificate_CannotRegisterEitherDaemon) {
  DaemonCaller user{"ipv4:10.0.0.9:5", /*node_certificate=*/false};
  EXPECT_THAT(service_->RegisterWorker(Worker(""), user),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("node certificate")));
  EXPECT_THAT(service_->RegisterParameterServer(Server(""), user),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("node certificate")));
  EXPECT_THAT(service_->ListWorkers().workers(), IsEmpty());
  EXPECT_THAT(service_->ListWorkers().parameter_servers(), IsEmpty());
  DaemonCaller node{"ipv4:10.0.0.1:5", /*node_certificate=*/true};
  EXPECT_THAT(service_->RegisterWorker(Worker(""), node), IsOk());
  EXPECT_THAT(service_->RegisterParameterServer(Server(""), node), IsOk());
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
