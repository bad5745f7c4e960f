// PsStep over the servers' tensor planes (PsClientOptions::tensor_plane,
// PsServerOptions::tensor_port) on 127.0.0.1: the same parameters and step
// control as the gRPC streams, bitwise, through partitions on two servers;
// a server without a plane named, and one with TLS refused; a cancelled
// step that ends promptly, after which the client connects again.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/certs.h"
#include "server/ps/client/ps_client.h"
#include "server/ps/daemon/ps_server.h"
#include "tests/ps/ps_grpc_test_util.h"
#include "tests/ps/ps_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StartPlaneServer;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int kWorkers = 3;
constexpr size_t kTotal = 3001;
constexpr size_t kPartitionBytes = 512 * 4;  // 3 partitions per server

// Job `job`'s partitions on `addresses` (zeros, SGD at lr 1).
void CreatePartitions(const std::vector<std::string>& addresses,
                      const std::string& job,
                      std::vector<PsShardLocation>* out) {
  absl::StatusOr<std::vector<PsShardLocation>> shards =
      PartitionedShardLocations(kTotal, addresses, kPartitionBytes);
  ASSERT_THAT(shards, IsOk());
  for (const PsShardLocation& l : *shards) {
    ps::CreateShardRequest request = testing::ShardRequest(
        job, l.shard, static_cast<int>(shards->size()), kTotal, kWorkers);
    request.set_begin(static_cast<int64_t>(l.begin));
    request.set_end(static_cast<int64_t>(l.end));
    ASSERT_THAT(PsAdminClient::Connect(l.address)->CreateShard(request),
                IsOk());
  }
  *out = *std::move(shards);
}

std::unique_ptr<PsClient> Client(const std::string& job, int rank,
                                 const std::vector<PsShardLocation>& shards,
                                 bool plane) {
  PsClientOptions options;
  options.chunk_bytes = 13 * 4;  // divides neither partition nor bucket
  options.timeout = absl::Seconds(30);
  options.tensor_plane = plane;
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create(job, rank, kTotal, shards, options);
  EXPECT_THAT(client, IsOk());
  return client.ok() ? *std::move(client) : nullptr;
}

// Rank r's integer gradient of step t, reported ready in buckets of 97,
// end first; the loss in a trailer (late scalars).
[[nodiscard]] absl::StatusOr<PsStepResult> Step(PsClient& client, int rank,
                                                int64_t t,
                                                std::vector<float>& params) {
  std::vector<float> grads(kTotal);
  for (size_t i = 0; i < kTotal; ++i) {
    grads[i] =
        static_cast<float>(static_cast<int64_t>(i % 7) + 3 * rank - 2 * t);
  }
  PsStepControl control;
  control.late_scalars = 1;
  control.switch_epoch = rank + 1;
  ASSIGN_OR_RETURN(
      std::unique_ptr<PsStep> step,
      client.StartStep(t, grads, absl::MakeSpan(params), std::move(control)));
  for (size_t end = kTotal; end > 0;) {
    const size_t begin = end > 97 ? end - 97 : 0;
    step->Ready(begin, end);
    end = begin;
  }
  step->SetScalars({rank + 0.5});
  return step->Finish(absl::Now() + absl::Seconds(30));
}

TEST(PsStepPlaneTest, PartitionsOnTwoServers_BitwiseTheGrpcStreams) {
  std::vector<std::unique_ptr<PsServer>> servers;
  std::vector<std::string> addresses;
  for (int i = 0; i < 2; ++i) {
    servers.push_back(StartPlaneServer());
    ASSERT_NE(servers.back(), nullptr);
    EXPECT_GT(servers.back()->tensor_port(), 0);
    addresses.push_back(servers.back()->address());
  }
  std::vector<PsShardLocation> plane_shards, grpc_shards;
  ASSERT_NO_FATAL_FAILURE(CreatePartitions(addresses, "plane", &plane_shards));
  ASSERT_NO_FATAL_FAILURE(CreatePartitions(addresses, "grpc", &grpc_shards));
  std::vector<std::vector<float>> plane(kWorkers), grpc(kWorkers);
  std::vector<std::vector<PsStepResult>> results(kWorkers);
  std::vector<absl::Status> status(kWorkers);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorkers; ++r) {
    ranks.emplace_back([&, r] {
      std::unique_ptr<PsClient> a = Client("plane", r, plane_shards, true);
      std::unique_ptr<PsClient> b = Client("grpc", r, grpc_shards, false);
      plane[r].assign(kTotal, 0);
      grpc[r].assign(kTotal, 0);
      for (int64_t t = 0; t < 3 && status[r].ok(); ++t) {
        absl::StatusOr<PsStepResult> x = Step(*a, r, t, plane[r]);
        absl::StatusOr<PsStepResult> y = Step(*b, r, t, grpc[r]);
        if (!x.ok() || !y.ok()) {
          status[r] = !x.ok() ? x.status() : y.status();
          return;
        }
        results[r].push_back(*x);
        if (x->scalar_sums != y->scalar_sums || x->version != y->version ||
            x->switch_epoch != y->switch_epoch ||
            x->switch_step != y->switch_step) {
          status[r] = absl::InternalError(
              absl::StrCat("step ", t, ": the step control differs"));
        }
      }
      if (a->stats().bytes_sent != kTotal * 3 * sizeof(float)) {
        status[r] = absl::InternalError("the plane's bytes were not counted");
      }
      if (a->transport() != "plane" || b->transport() != "grpc") {
        status[r] = absl::InternalError(absl::StrCat(
            "transports ", a->transport(), " and ", b->transport()));
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < kWorkers; ++r) {
    ASSERT_THAT(status[r], IsOk()) << "rank " << r;
    EXPECT_EQ(plane[r], grpc[r]) << "rank " << r;
    EXPECT_EQ(plane[r], plane[0]) << "rank " << r;
    ASSERT_EQ(results[r].size(), 3u);
    // 0.5 + 1.5 + 2.5, and the newest epoch (3) decided for step 1.
    EXPECT_EQ(results[r][0].scalar_sums, std::vector<double>{4.5});
    EXPECT_EQ(results[r][0].switch_epoch, 3);
    EXPECT_EQ(results[r][0].switch_step, 1);
    EXPECT_GT(results[r][0].busy, absl::ZeroDuration());
  }
}

// gRPC streams are the fallback for a server that serves no plane
// (gradsync-ps --tensor-port -1, or an older one): its shards take them,
// the other server's its plane, and the result is the all-gRPC result.
TEST(PsStepPlaneTest, ServerWithoutAPlane_ItsShardsTakeGrpcBitwiseTheSame) {
  std::vector<std::unique_ptr<PsServer>> servers;
  std::vector<std::string> addresses;
  ASSERT_TRUE(testing::StartServers(1, &servers, &addresses));  // no plane
  ASSERT_EQ(servers[0]->tensor_port(), 0);
  servers.push_back(StartPlaneServer());
  ASSERT_NE(servers.back(), nullptr);
  addresses.push_back(servers.back()->address());
  std::vector<PsShardLocation> mixed_shards, grpc_shards;
  ASSERT_NO_FATAL_FAILURE(CreatePartitions(addresses, "mixed", &mixed_shards));
  ASSERT_NO_FATAL_FAILURE(CreatePartitions(addresses, "grpc", &grpc_shards));
  std::vector<std::vector<float>> mixed(kWorkers), grpc(kWorkers);
  std::vector<std::string> transport(kWorkers);
  std::vector<absl::Status> status(kWorkers);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorkers; ++r) {
    ranks.emplace_back([&, r] {
      std::unique_ptr<PsClient> a = Client("mixed", r, mixed_shards, true);
      std::unique_ptr<PsClient> b = Client("grpc", r, grpc_shards, false);
      mixed[r].assign(kTotal, 0);
      grpc[r].assign(kTotal, 0);
      for (int64_t t = 0; t < 3 && status[r].ok(); ++t) {
        absl::StatusOr<PsStepResult> x = Step(*a, r, t, mixed[r]);
        status[r] = x.status();
        if (status[r].ok()) status[r] = Step(*b, r, t, grpc[r]).status();
      }
      transport[r] = a->transport();
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < kWorkers; ++r) {
    ASSERT_THAT(status[r], IsOk()) << "rank " << r;
    EXPECT_EQ(mixed[r], grpc[r]) << "rank " << r;
    EXPECT_EQ(transport[r], "mixed") << "rank " << r;
  }
}

// The plane stands beside TLS (its handshake proves the job's token), so
// a server with mutual TLS serves one.
TEST(PsStepPlaneTest, TlsServerServesAPlane) {
  absl::StatusOr<ClusterCertificates> certs = NewClusterCertificates(1);
  ASSERT_THAT(certs, IsOk());
  PsServerOptions options;
  options.tensor_port = 0;
  options.transport.security =
      GrpcSecurity::Mtls(certs->ca.cert_pem, certs->node.cert_pem,
                         certs->node.key_pem, "the test's CA");
  absl::StatusOr<std::unique_ptr<PsServer>> server =
      PsServer::Start("127.0.0.1:0", options);
  ASSERT_THAT(server, IsOk());
  EXPECT_GT((*server)->tensor_port(), 0);
  options = PsServerOptions();
  options.tensor_port = 70000;
  EXPECT_THAT(
      PsServer::Start("127.0.0.1:0", options),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tensor_port")));
}

TEST(PsStepPlaneTest, CancelledInBackward_ShardsTookNothingThenReconnects) {
  std::unique_ptr<PsServer> server = StartPlaneServer();
  ASSERT_NE(server, nullptr);
  std::vector<PsShardLocation> shards;
  ASSERT_NO_FATAL_FAILURE(
      CreatePartitions({server->address()}, "job", &shards));
  std::vector<std::unique_ptr<PsClient>> clients;
  for (int r = 0; r < kWorkers; ++r) {
    clients.push_back(Client("job", r, shards, true));
  }
  std::vector<float> grads(kTotal, 1.0f);
  std::vector<std::vector<float>> params(kWorkers, std::vector<float>(kTotal));
  // Rank 0's step is cancelled while backward still runs: its last
  // partition is half sent.
  absl::StatusOr<std::unique_ptr<PsStep>> step =
      clients[0]->StartStep(0, grads, absl::MakeSpan(params[0]));
  ASSERT_THAT(step, IsOk());
  (*step)->Ready(kTotal - 100, kTotal);
  const int last = shards.back().shard;
  auto bytes_in = [&]() -> int64_t {
    absl::StatusOr<std::vector<ps::ShardStats>> stats =
        PsAdminClient::Connect(server->address())->GetShardStats("job", last);
    return stats.ok() && stats->size() == 1 ? (*stats)[0].bytes_in() : -1;
  };
  ASSERT_TRUE(testing::Eventually([&]() { return bytes_in() == 400; }))
      << bytes_in();
  const absl::Time start = absl::Now();
  (*step)->Cancel(absl::AbortedError("job cancelled by the user"));
  EXPECT_THAT((*step)->Finish(absl::Now() + absl::Seconds(30)),
              StatusIs(absl::StatusCode::kAborted,
                       AllOf(HasSubstr("job cancelled by the user"),
                             HasSubstr("rank 0, step 0"))));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  step->reset();
  // The shards took nothing: every rank runs step 0 whole, rank 0 on a
  // new connection (once the server has dropped the cut push).
  std::vector<absl::Status> status(kWorkers);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorkers; ++r) {
    ranks.emplace_back([&, r] {
      for (int i = 0; i < 100; ++i) {
        status[r] = clients[r]->PushPull(0, grads, absl::MakeSpan(params[r]));
        if (status[r].code() != absl::StatusCode::kAlreadyExists) break;
        absl::SleepFor(absl::Milliseconds(20));
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < kWorkers; ++r) {
    ASSERT_THAT(status[r], IsOk()) << "rank " << r;
    EXPECT_EQ(params[r], std::vector<float>(kTotal, -1.0f)) << "rank " << r;
  }
}

}  // namespace
}  // namespace gradsync
