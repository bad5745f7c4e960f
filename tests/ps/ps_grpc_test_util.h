// Helpers shared by the parameter-server tests over real gRPC: servers on
// 127.0.0.1:0, CreateShard requests (and balanced shards on every server)
// and PsClients over balanced shards.
#ifndef GRADSYNC_TESTS_PS_PS_GRPC_TEST_UTIL_H_
#define GRADSYNC_TESTS_PS_PS_GRPC_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "proto/ps.pb.h"
#include "server/ps/client/ps_admin_client.h"
#include "server/ps/client/ps_client.h"
#include "server/ps/daemon/ps_server.h"
#include "server/ps/transport/shard_range.h"
#include "server/ps/transport/tensor_codec.h"

namespace gradsync {
namespace testing {

inline std::unique_ptr<PsServer> StartServer() {
  absl::StatusOr<std::unique_ptr<PsServer>> server =
      PsServer::Start("127.0.0.1:0");
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

// A server that also serves a tensor plane on an ephemeral port.
inline std::unique_ptr<PsServer> StartPlaneServer() {
  PsServerOptions options;
  options.tensor_port = 0;
  absl::StatusOr<std::unique_ptr<PsServer>> server =
      PsServer::Start("127.0.0.1:0", options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

// Starts `n` servers, appending them and their addresses; false (and a
// test failure) if one does not start.
inline bool StartServers(int n, std::vector<std::unique_ptr<PsServer>>* servers,
                         std::vector<std::string>* addresses) {
  for (int k = 0; k < n; ++k) {
    servers->push_back(StartServer());
    if (servers->back() == nullptr) return false;
    addresses->push_back(servers->back()->address());
  }
  return true;
}

// A CreateShard request for shard `shard` of `num_shards` over `total`
// elements: zeros, SGD at lr 1.
inline ps::CreateShardRequest ShardRequest(const std::string& job, int shard,
                                           int num_shards, size_t total,
                                           int workers) {
  ps::CreateShardRequest request;
  request.set_job_id(job);
  request.set_shard(shard);
  request.set_num_shards(num_shards);
  request.set_total_elements(static_cast<int64_t>(total));
  const ShardRange range = *BalancedShardRange(total, num_shards, shard);
  request.set_begin(static_cast<int64_t>(range.begin));
  request.set_end(static_cast<int64_t>(range.end));
  request.set_num_workers(workers);
  request.mutable_optimizer()->set_name("sgd");
  request.mutable_optimizer()->set_learning_rate(1.0);
  request.set_zeros(true);
  return request;
}

// Creates shard k of job `job` (balanced over `total` elements, zeros, SGD
// at lr 1) on addresses[k], for every k.
[[nodiscard]] inline absl::Status CreateShards(
    const std::vector<std::string>& addresses, const std::string& job,
    size_t total, int workers) {
  const int n = static_cast<int>(addresses.size());
  for (int k = 0; k < n; ++k) {
    absl::Status status =
        PsAdminClient::Connect(addresses[k])
            ->CreateShard(ShardRequest(job, k, n, total, workers));
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

inline std::unique_ptr<PsClient> MakeClient(
    const std::string& job, int rank, size_t total,
    const std::vector<std::string>& addresses,
    size_t chunk_bytes = kDefaultChunkBytes,
    absl::Duration timeout = absl::Seconds(30)) {
  absl::StatusOr<std::vector<PsShardLocation>> shards =
      BalancedShardLocations(total, addresses);
  EXPECT_TRUE(shards.ok()) << shards.status();
  if (!shards.ok()) return nullptr;
  PsClientOptions options;
  options.chunk_bytes = chunk_bytes;
  options.timeout = timeout;
  absl::StatusOr<std::unique_ptr<PsClient>> client =
      PsClient::Create(job, rank, total, *shards, options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_PS_PS_GRPC_TEST_UTIL_H_
