// `gradsync bench allreduce --backend ps`: ranks as threads over an
// in-memory store, against real parameter servers started in this
// process; every pulled parameter verifies, the table says what ran, the
// shards are released after each size, and a server that is not there is
// named in the error.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/bench/backend.h"
#include "cli/bench/ps_cluster.h"
#include "cli/bench/report.h"
#include "collectives/memory_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/client/ps_admin_client.h"
#include "tests/cli/bench_test_util.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct LocalServers {
  std::vector<std::unique_ptr<PsServer>> servers;
  std::vector<std::string> addresses;
};

LocalServers StartServers(int count, bool tensor_plane = false) {
  LocalServers local;
  absl::StatusOr<std::vector<std::unique_ptr<PsServer>>> servers =
      StartLocalPsServers(count, "auto", tensor_plane);
  EXPECT_TRUE(servers.ok()) << servers.status();
  if (!servers.ok()) return local;
  local.servers = *std::move(servers);
  local.addresses = PsServerAddresses(local.servers);
  return local;
}

// An address nothing listens on: a server's, once it stopped.
std::string DeadAddress() {
  LocalServers local = StartServers(1);
  return local.addresses.empty() ? "127.0.0.1:1" : local.addresses[0];
}

// Whether `address` still holds any shard of the PS job `job`.
bool HoldsShards(const std::string& address, const std::string& job) {
  absl::StatusOr<std::vector<ps::ShardStats>> stats =
      PsAdminClient::Connect(address)->GetShardStats(job, -1);
  return stats.ok() && !stats->empty();
}

TEST(BenchPsTest, TwoRanksTwoShards_VerifiesAndPrintsTheTable) {
  LocalServers local = StartServers(2);
  ASSERT_EQ(local.addresses.size(), 2u);
  MemoryStore store;
  std::vector<RankRun> runs =
      RunRanks(&store, 2,
               {"allreduce", "--backend", "ps", "--ps-shards", "2",
                "--ps-addresses", absl::StrJoin(local.addresses, ","), "-b",
                "8", "-e", "64K", "-f", "8", "-n", "2", "-w", "1", "-c", "1"},
               "ps2");
  // Every rank's status first: when one fails, the other's says why.
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(runs[r].wrong.ok())
        << "rank " << r << ": " << runs[r].wrong.status();
  }
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(runs[r].wrong.ok());
    EXPECT_EQ(*runs[r].wrong, 0) << "rank " << r;
  }
  const std::string& out = runs[0].output;
  EXPECT_THAT(
      out,
      HasSubstr(
          "# gradsync bench allreduce: backend ps, 2 "
          "shards, tcp congestion auto, transport tensor plane, 2 ranks\n"));
  EXPECT_THAT(out,
              HasSubstr(absl::StrCat("# PS shards: 0 at ", local.addresses[0],
                                     ", 1 at ", local.addresses[1])));
  EXPECT_THAT(out, HasSubstr("busbw = algbw * 2 max(1, N/K)"));
  // One row per size: size, count, type, redop, root, then out-of-place
  // time, algbw, busbw and #wrong, and N/A for the in-place columns.
  for (const char* row :
       {"\n           8             2     float     sum      -1",
        "\n          64            16     float     sum      -1",
        "\n         512           128     float     sum      -1",
        "\n        4096          1024     float     sum      -1",
        "\n       32768          8192     float     sum      -1"}) {
    EXPECT_THAT(out, HasSubstr(row)) << out;
  }
  EXPECT_THAT(out, Not(HasSubstr("\n      262144"))) << out;
  EXPECT_THAT(out, HasSubstr("       0      N/A     N/A     N/A     N/A\n"))
      << out;
  EXPECT_THAT(out, HasSubstr("# Out of bounds values : 0 OK")) << out;
  EXPECT_TRUE(runs[1].output.empty()) << runs[1].output;
  // Every size's shards were released.
  for (const std::string& address : local.addresses) {
    EXPECT_FALSE(HoldsShards(address, "bench/ps2/gen-0/S32768"));
  }
}

// The same over the servers' tensor planes (the default transport), in
// 4 KiB partitions so that a server's partitions pipeline over one
// connection: exact, and the header says which transport ran. A server
// without a plane is served over gRPC streams, exactly too.
TEST(BenchPsTest, TensorPlane_VerifiesAndSaysSo) {
  LocalServers local = StartServers(2, /*tensor_plane=*/true);
  ASSERT_EQ(local.addresses.size(), 2u);
  MemoryStore store;
  std::vector<RankRun> runs = RunRanks(&store, 2,
                                       {"allreduce",
                                        "--backend",
                                        "ps",
                                        "--ps-shards",
                                        "2",
                                        "--ps-addresses",
                                        absl::StrJoin(local.addresses, ","),
                                        "--ps-partition",
                                        "4K",
                                        "-b",
                                        "8",
                                        "-e",
                                        "64K",
                                        "-f",
                                        "8",
                                        "-n",
                                        "2",
                                        "-w",
                                        "1",
                                        "-c",
                                        "1"},
                                       "plane");
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(runs[r].wrong.ok())
        << "rank " << r << ": " << runs[r].wrong.status();
    EXPECT_EQ(*runs[r].wrong, 0) << "rank " << r;
  }
  EXPECT_THAT(runs[0].output,
              HasSubstr("# gradsync bench allreduce: backend ps, 2 shards, "
                        "tcp congestion auto, transport tensor plane, 2 "
                        "ranks\n"));
  EXPECT_THAT(runs[0].output, HasSubstr("\n       32768          8192"));

  LocalServers plain = StartServers(1);
  ASSERT_EQ(plain.addresses.size(), 1u);
  MemoryStore store2;
  std::vector<RankRun> fallback =
      RunRanks(&store2, 1,
               {"allreduce", "--backend", "ps", "--ps-shards", "1",
                "--ps-addresses", plain.addresses[0], "-b", "8", "-e", "64K",
                "-f", "8", "-n", "1", "-w", "0"},
               "noplane");
  ASSERT_TRUE(fallback[0].wrong.ok()) << fallback[0].wrong.status();
  EXPECT_EQ(*fallback[0].wrong, 0);
  EXPECT_THAT(fallback[0].output, HasSubstr("\n       32768          8192"));
}

// More shards than servers (shard k on server k % 2), three ranks, sizes
// that no shard count divides, and an odd number of steps before the
// check (which then needs a step to bring the parameters back to zero).
TEST(BenchPsTest, ThreeRanksThreeShardsOnTwoServers_Verifies) {
  LocalServers local = StartServers(2);
  ASSERT_EQ(local.addresses.size(), 2u);
  MemoryStore store;
  std::vector<RankRun> runs = RunRanks(&store, 3,
                                       {"allreduce",
                                        "--backend",
                                        "ps",
                                        "--ps-shards",
                                        "3",
                                        "--ps-addresses",
                                        absl::StrJoin(local.addresses, ","),
                                        "--ps-chunk",
                                        "1K",
                                        "-b",
                                        "1001",
                                        "-e",
                                        "30000",
                                        "-f",
                                        "5",
                                        "-n",
                                        "3",
                                        "-w",
                                        "0",
                                        "--json"},
                                       "ps3");
  // Every rank's status first: when one fails, the others' say why.
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(runs[r].wrong.ok())
        << "rank " << r << ": " << runs[r].wrong.status();
  }
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(runs[r].wrong.ok());
    EXPECT_EQ(*runs[r].wrong, 0) << "rank " << r;
  }
  const std::string& out = runs[0].output;
  EXPECT_THAT(
      out,
      HasSubstr("{\"collective\":\"allreduce\",\"backend\":"
                "\"ps\",\"algo\":\"ps\",\"ranks\":3,\"shards\":3,"
                "\"tcp_congestion\":\"auto\",\"transport\":\"tensor plane\","
                "\"size\":1000,"
                "\"count\":250,"));
  EXPECT_THAT(out, HasSubstr("\"size\":25024,\"count\":6256,"));
  EXPECT_THAT(out, HasSubstr("\"in_place\":null}"));
  EXPECT_THAT(out, HasSubstr("\"wrong\":0,\"ok\":true,\"checked\":true"));
}

TEST(BenchPsTest, UnreachableServer_CheckNamesItsAddress) {
  const std::string dead = DeadAddress();
  absl::StatusOr<BenchOptions> options =
      ParseBenchArgs({"allreduce", "--backend", "ps", "--ps-addresses", dead});
  ASSERT_TRUE(options.ok()) << options.status();
  const absl::Status status = CheckBackendAvailable(*options);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr(absl::StrCat("parameter server at ", dead)));
}

TEST(BenchPsTest, UnreachableServer_RankErrorNamesItsAddress) {
  const std::string dead = DeadAddress();
  MemoryStore store;
  std::vector<RankRun> runs =
      RunRanks(&store, 2,
               {"allreduce", "--backend", "ps", "--ps-addresses", dead, "-b",
                "1K", "-e", "1K", "-n", "1"},
               "dead");
  ASSERT_FALSE(runs[0].wrong.ok());
  EXPECT_EQ(runs[0].wrong.status().code(), absl::StatusCode::kUnavailable)
      << runs[0].wrong.status();
  EXPECT_THAT(std::string(runs[0].wrong.status().message()), HasSubstr(dead));
  // Rank 1 hears that rank 0 failed rather than waiting out its deadline.
  ASSERT_FALSE(runs[1].wrong.ok());
  EXPECT_EQ(runs[1].wrong.status().code(), absl::StatusCode::kAborted)
      << runs[1].wrong.status();
}

TEST(BenchPsTest, ReportWithoutInPlace_SummarisesOutOfPlaceOnly) {
  SizeResult result;
  result.size_bytes = 1024;
  result.count = 256;
  result.out_of_place.busbw = 3.0;
  result.out_of_place.wrong = 0;
  result.in_place.busbw = 100.0;  // ignored
  result.in_place.wrong = 5;      // ignored
  result.has_in_place = false;
  const Summary summary = Summarize({result});
  EXPECT_DOUBLE_EQ(summary.avg_busbw, 3.0);
  EXPECT_EQ(summary.wrong, 0);
}

}  // namespace
}  // namespace bench
}  // namespace cli
}  // namespace gradsync
