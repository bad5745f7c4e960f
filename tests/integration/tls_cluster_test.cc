// A real cluster over mutual TLS (TestClusterOptions::tls: a coordinator,
// two workers and a parameter server, each with --tls-dir): a ring job and
// a PS job succeed with every gRPC connection (registration, heartbeats,
// the store, the PS tensor streams) under TLS, and a client without the
// cluster's certificates is refused. With --ps-plaintext, only the PS
// connections drop TLS.
#include <grpcpp/client_context.h>

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "common/wire_version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/certs.h"
#include "security/tls.h"
#include "security/tls_dir.h"
#include "tests/integration/child_process.h"
#include "tests/integration/cluster_test_base.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kJobTimeout = absl::Seconds(120);

class TlsClusterTest : public ClusterTest {
 protected:
  TestClusterOptions Options() const override {
    TestClusterOptions options;
    options.workers = 2;
    options.devices_per_worker = 1;
    options.parameter_servers = 1;
    options.tls = true;
    return options;
  }

  // ListWorkers over a channel with `security`, with a deadline.
  [[nodiscard]] absl::Status ListWorkersAs(const GrpcSecurity& security) {
    std::unique_ptr<Coordinator::Stub> stub =
        Coordinator::NewStub(NewGrpcChannel(cluster().address(), security));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    ListWorkersResponse response;
    return FromGrpcStatus(
        stub->ListWorkers(&context, ListWorkersRequest(), &response));
  }
};

TEST_F(TlsClusterTest, RingAndPsJobs_OverMutualTls_Succeed) {
  JobSpec spec = LongSyntheticSpec(/*num_workers=*/2, /*floats=*/4096,
                                   /*compute_ms=*/1);
  spec.set_steps(30);
  spec.set_mode(SYNC_MODE_RING);
  absl::StatusOr<TestCluster::FinishedJob> ring =
      cluster().RunToSuccess(spec, kJobTimeout);
  ASSERT_TRUE(ring.ok()) << ring.status();
  EXPECT_FALSE(ring->metrics.empty());

  // The PS on the default transport, the tensor plane beside TLS (its
  // handshake proves the job's token); then on gRPC streams under TLS, as
  // the spec may ask. The same parameters either way.
  spec.set_mode(SYNC_MODE_PS);
  spec.mutable_ps()->set_shards(1);
  absl::StatusOr<TestCluster::FinishedJob> plane =
      cluster().RunToSuccess(spec, kJobTimeout);
  ASSERT_TRUE(plane.ok()) << plane.status();
  ASSERT_FALSE(plane->metrics.empty());
  spec.mutable_ps()->set_transport("grpc");
  absl::StatusOr<TestCluster::FinishedJob> streams =
      cluster().RunToSuccess(spec, kJobTimeout);
  ASSERT_TRUE(streams.ok()) << streams.status();
  ASSERT_EQ(streams->metrics.size(), plane->metrics.size());
  for (size_t i = 0; i < plane->metrics.size(); ++i) {
    EXPECT_EQ(plane->metrics[i].ps_transport(), "plane") << i;
    EXPECT_EQ(streams->metrics[i].ps_transport(), "grpc") << i;
  }
  auto last_hash = [](const TestCluster::FinishedJob& job) {
    const StepMetrics* last = &job.metrics.front();
    for (const StepMetrics& m : job.metrics) {
      if (m.rank() == 0 && m.step() >= last->step()) last = &m;
    }
    return last->param_hash();
  };
  EXPECT_EQ(last_hash(*plane), last_hash(*streams));

  EXPECT_THAT(cluster().coordinator().ReadLog(), HasSubstr("gRPC over mTLS"));
  EXPECT_THAT(cluster().worker(0).ReadLog(), HasSubstr("gRPC over mTLS"));
  EXPECT_THAT(cluster().parameter_server(0).ReadLog(),
              HasSubstr("gRPC over mTLS"));
}

TEST_F(TlsClusterTest, ClientsWithoutTheClustersCertificates_AreRefused) {
  // The positive control: the same call with the cluster's own users'
  // certificate gets through, so the refusals below are the certificates'
  // doing, not a coordinator that is down (which is UNAVAILABLE too).
  absl::StatusOr<TlsFiles> users =
      ReadTlsDir(cluster().tls_dir(), TlsRole::kUser);
  ASSERT_TRUE(users.ok()) << users.status();
  EXPECT_TRUE(ListWorkersAs(GrpcSecurity::Mtls(users->ca_pem, users->cert_pem,
                                               users->key_pem, "users"))
                  .ok())
      << "the cluster's own users' certificate was refused";
  EXPECT_EQ(ListWorkersAs(GrpcSecurity()).code(),
            absl::StatusCode::kUnavailable)
      << "a plaintext client got through";
  absl::StatusOr<ClusterCertificates> other = NewClusterCertificates(1);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(ListWorkersAs(GrpcSecurity::Mtls(other->ca.cert_pem,
                                             other->client.cert_pem,
                                             other->client.key_pem, "other"))
                .code(),
            absl::StatusCode::kUnavailable)
      << "another cluster's user got through";
}

TEST_F(TlsClusterTest, UsersCertificate_CannotJoinAsADaemon) {
  // Finding 1 of the second trust pass: with the users' client.pem a
  // script registered as a worker and was handed the next job's secrets.
  // Only the node certificate (the cluster's server name) registers now.
  auto register_as = [&](TlsRole role, RegisterWorkerResponse* worker,
                         RegisterParameterServerResponse* server) {
    absl::StatusOr<TlsFiles> files = ReadTlsDir(cluster().tls_dir(), role);
    EXPECT_TRUE(files.ok()) << files.status();
    std::unique_ptr<Coordinator::Stub> stub = Coordinator::NewStub(
        NewGrpcChannel(cluster().address(),
                       GrpcSecurity::Mtls(files->ca_pem, files->cert_pem,
                                          files->key_pem, "caller")));
    RegisterWorkerRequest w;
    w.set_host("intruder");
    w.set_address("127.0.0.1");
    w.set_wire_version(kWireVersion);
    Device* device = w.add_devices();
    device->set_kind("cpu");
    device->set_index(0);
    grpc::ClientContext c1;
    c1.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    const absl::Status as_worker =
        FromGrpcStatus(stub->RegisterWorker(&c1, w, worker));
    RegisterParameterServerRequest p;
    p.set_host("intruder");
    p.set_address("127.0.0.1:1");
    p.set_wire_version(kWireVersion);
    grpc::ClientContext c2;
    c2.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    const absl::Status as_server =
        FromGrpcStatus(stub->RegisterParameterServer(&c2, p, server));
    return std::make_pair(as_worker, as_server);
  };
  RegisterWorkerResponse worker;
  RegisterParameterServerResponse server;
  auto [user_worker, user_server] =
      register_as(TlsRole::kUser, &worker, &server);
  EXPECT_EQ(user_worker.code(), absl::StatusCode::kPermissionDenied)
      << user_worker;
  EXPECT_THAT(std::string(user_worker.message()),
              HasSubstr("node certificate"));
  EXPECT_EQ(user_server.code(), absl::StatusCode::kPermissionDenied)
      << user_server;
  EXPECT_TRUE(worker.credential().empty());
  EXPECT_TRUE(server.shard_key().empty());
  EXPECT_THAT(cluster().coordinator().ReadLog(),
              HasSubstr("refused to register a worker on host intruder"));
  // The positive control: the node certificate registers (so the refusals
  // above are the certificate's doing).
  auto [node_worker, node_server] =
      register_as(TlsRole::kDaemon, &worker, &server);
  EXPECT_TRUE(node_worker.ok()) << node_worker;
  EXPECT_TRUE(node_server.ok()) << node_server;
  EXPECT_FALSE(worker.credential().empty());
}

TEST_F(TlsClusterTest, PlaintextWorker_RetriesSayingWhatTheOtherSideNeeds) {
  // Issue 44, item 5: a worker without --tls-dir against a TLS coordinator
  // reported only gRPC's "Socket closed". Its retries now say which side
  // runs what and what to give this one.
  const std::string log = cluster().log_dir() + "/plaintext-worker.log";
  absl::StatusOr<std::unique_ptr<ChildProcess>> worker =
      ChildProcess::Start("plaintext worker", GRADSYNC_WORKER_BINARY,
                          {"--coordinator", cluster().address(), "--devices",
                           "cpu:1", "--address", "127.0.0.1", "--insecure"},
                          log);
  ASSERT_TRUE(worker.ok()) << worker.status();
  const absl::Time until = absl::Now() + absl::Seconds(30);
  std::string text;
  while (absl::Now() < until) {
    text = (*worker)->ReadLog();
    if (absl::StrContains(text, "this side uses plaintext")) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  (*worker)->Stop(absl::Seconds(5));
  EXPECT_THAT(text, HasSubstr("registration with coordinator at"));
  EXPECT_THAT(text, HasSubstr("this side uses plaintext: if the other runs "
                              "with --tls-dir, give this one the cluster's "
                              "TLS directory too"));
}

// --ps-plaintext on every worker and server: the gRPC tensor streams
// (ps.transport "grpc") run in plaintext (authenticated by the job token)
// while registration, heartbeats and the users' calls keep mutual TLS.
class PsPlaintextClusterTest : public TlsClusterTest {
 protected:
  TestClusterOptions Options() const override {
    TestClusterOptions options = TlsClusterTest::Options();
    options.ps_plaintext = true;
    return options;
  }
};

TEST_F(PsPlaintextClusterTest, PsJob_WithPlaintextTensorStreams_Succeeds) {
  JobSpec spec = LongSyntheticSpec(/*num_workers=*/2, /*floats=*/4096,
                                   /*compute_ms=*/1);
  spec.set_steps(30);
  spec.set_mode(SYNC_MODE_PS);
  spec.mutable_ps()->set_shards(1);
  spec.mutable_ps()->set_transport("grpc");
  absl::StatusOr<TestCluster::FinishedJob> ps =
      cluster().RunToSuccess(spec, kJobTimeout);
  ASSERT_TRUE(ps.ok()) << ps.status();
  EXPECT_EQ(ps->metrics.back().ps_transport(), "grpc");
  EXPECT_THAT(cluster().parameter_server(0).ReadLog(),
              HasSubstr("WARNING: --ps-plaintext"));
  EXPECT_THAT(cluster().worker(0).ReadLog(),
              HasSubstr("WARNING: --ps-plaintext"));
  // The coordinator still refuses plaintext.
  EXPECT_EQ(ListWorkersAs(GrpcSecurity()).code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
