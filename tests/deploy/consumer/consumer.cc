// A consumer of the installed gradsync package (tests/deploy/consumer): three
// ranks, threads of this process, find each other through a gRPC
// rendezvous store (gradsync::store), connect the TCP ring
// (gradsync::collectives) and all-reduce integers in fp32, whose sums are
// exact; then the PS client's shard layout (gradsync::ps_client) and a
// coordinator client call to a closed port (gradsync::coordinator_client).
// Prints "consumer: OK" and exits 0 when every check holds; names the
// failed check and exits 1 otherwise.
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "collectives/communicator.h"
#include "collectives/tcp/tcp_communicator.h"
#include "server/coordinator/grpc_coordinator_client.h"
#include "server/ps/client/ps_client.h"
#include "server/store/grpc_store.h"
#include "server/store/store_server.h"

namespace {

constexpr int kRanks = 3;
constexpr size_t kElements = 1000;

// Rank r contributes r * 1000 + i at element i: the sum over ranks,
// 3000 * 1 + 3 i, is an integer far below 2^24, so fp32 holds it exactly.
[[nodiscard]] absl::Status RunRank(const std::string& store_address, int rank) {
  absl::StatusOr<std::unique_ptr<gradsync::Store>> store =
      gradsync::ConnectGrpcStore(store_address, absl::Seconds(10));
  if (!store.ok()) return store.status();
  gradsync::TcpOptions options;
  options.job_id = "consumer";
  options.connect_timeout = absl::Seconds(30);
  absl::StatusOr<std::unique_ptr<gradsync::Communicator>> comm =
      gradsync::CreateTcpCommunicator(store->get(), rank, kRanks, options);
  if (!comm.ok()) return comm.status();
  std::vector<float> data(kElements);
  for (size_t i = 0; i < kElements; ++i) {
    data[i] = static_cast<float>(rank * 1000 + static_cast<int>(i));
  }
  absl::Status reduced = (*comm)->AllReduce(data.data(), data.data(), kElements,
                                            gradsync::DataType::kFloat32,
                                            gradsync::ReduceOp::kSum);
  if (!reduced.ok()) return reduced;
  for (size_t i = 0; i < kElements; ++i) {
    const float want = static_cast<float>(3000 + 3 * static_cast<int>(i));
    if (data[i] != want) {
      return absl::InternalError(absl::StrCat(
          "rank ", rank, " element ", i, " is ", data[i], ", want ", want));
    }
  }
  return absl::OkStatus();
}

[[nodiscard]] absl::Status CheckAllReduce() {
  absl::StatusOr<std::unique_ptr<gradsync::StoreServer>> server =
      gradsync::StoreServer::Start("127.0.0.1:0");
  if (!server.ok()) return server.status();
  const std::string address = (*server)->address();
  std::vector<absl::Status> results(kRanks);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < kRanks; ++rank) {
    ranks.emplace_back([&, rank] { results[rank] = RunRank(address, rank); });
  }
  for (std::thread& thread : ranks) thread.join();
  for (const absl::Status& status : results) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

[[nodiscard]] absl::Status CheckPsLayout() {
  absl::StatusOr<std::vector<gradsync::PsShardLocation>> shards =
      gradsync::BalancedShardLocations(10, {"a:1", "b:2"});
  if (!shards.ok()) return shards.status();
  if (shards->size() != 2 || (*shards)[0].end != (*shards)[1].begin ||
      (*shards)[1].end != 10 || (*shards)[1].address != "b:2") {
    return absl::InternalError(
        "BalancedShardLocations(10, 2 servers) "
        "does not tile [0, 10) over both");
  }
  return absl::OkStatus();
}

[[nodiscard]] absl::Status CheckCoordinatorClient() {
  // Port 1 on loopback: nothing listens, so the call fails fast as
  // unreachable, through gRPC and the client's status mapping.
  const std::string address = "127.0.0.1:1";
  std::shared_ptr<gradsync::CoordinatorClient> client =
      gradsync::NewGrpcCoordinatorClient(
          gradsync::NewCoordinatorChannel(address), address);
  gradsync::CallOptions options;
  options.deadline = absl::Now() + absl::Seconds(5);
  absl::StatusOr<gradsync::ListWorkersResponse> workers =
      client->ListWorkers(gradsync::ListWorkersRequest(), options);
  if (workers.ok()) {
    return absl::InternalError("ListWorkers to a closed port succeeded");
  }
  if (!gradsync::IsCoordinatorUnreachable(workers.status())) {
    return absl::InternalError(absl::StrCat(
        "ListWorkers to a closed port: ", workers.status().ToString(),
        " is not marked unreachable"));
  }
  return absl::OkStatus();
}

}  // namespace

int main() {
  const std::pair<const char*, absl::Status (*)()> checks[] = {
      {"all-reduce over the TCP ring", CheckAllReduce},
      {"PS shard layout", CheckPsLayout},
      {"coordinator client", CheckCoordinatorClient},
  };
  for (const auto& [name, check] : checks) {
    const absl::Status status = check();
    if (!status.ok()) {
      std::fprintf(stderr, "consumer: %s FAILED: %s\n", name,
                   status.ToString().c_str());
      return 1;
    }
    std::printf("consumer: %s ok\n", name);
  }
  std::printf("consumer: OK\n");
  return 0;
}
