// `gradsync bench` ranks as threads over an in-memory store and the real
// TCP communicator: every collective, operator and type verifies with no
// wrong element, and rank 0 prints the report.
#include "cli/bench/bench_rank.h"

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/bench/backend.h"
#include "collectives/memory_store.h"
#include "tests/cli/bench_test_util.h"
#if GRADSYNC_HAVE_NCCL
#include "collectives/nccl/device_buffer.h"
#endif
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {

using ::testing::HasSubstr;

TEST(BenchRankTest, EveryCollectiveOpAndTypeVerifiesExactly) {
  MemoryStore store;
  int job = 0;
  for (const char* collective :
       {"allreduce", "reducescatter", "allgather", "broadcast"}) {
    const bool reduces = std::string(collective) == "allreduce" ||
                         std::string(collective) == "reducescatter";
    for (const char* op : {"sum", "avg", "max", "min"}) {
      if (!reduces && std::string(op) != "sum") continue;
      for (const char* type : {"float", "double", "int32"}) {
        // Sizes not divisible by 3 ranks nor by the element size.
        std::vector<RankRun> runs =
            RunRanks(&store, 3,
                     {collective, "-b", "1001", "-e", "30000", "-f", "5", "-n",
                      "2", "-w", "1", "-o", op, "-d", type, "-r", "2"},
                     absl::StrCat("t", job++));
        const std::string what = absl::StrCat(collective, " ", op, " ", type);
        for (int r = 0; r < 3; ++r) {
          ASSERT_TRUE(runs[r].wrong.ok())
              << what << " rank " << r << ": " << runs[r].wrong.status();
          EXPECT_EQ(*runs[r].wrong, 0) << what << " rank " << r;
        }
        EXPECT_THAT(runs[0].output, HasSubstr("Out of bounds values : 0 OK"))
            << what << "\n"
            << runs[0].output;
        EXPECT_TRUE(runs[1].output.empty()) << runs[1].output;
      }
    }
  }
}

TEST(BenchRankTest, TableHasOneRowPerSizeAndEveryRankLine) {
  MemoryStore store;
  for (const char* algo : {"ring", "hd", "auto"}) {
    std::vector<RankRun> runs =
        RunRanks(&store, 4,
                 {"allreduce", "-b", "1K", "-e", "64K", "-f", "4", "-n", "2",
                  "-w", "0", "--algo", algo},
                 absl::StrCat("table-", algo));
    ASSERT_TRUE(runs[0].wrong.ok()) << runs[0].wrong.status();
    const std::string& out = runs[0].output;
    EXPECT_THAT(out, HasSubstr(absl::StrCat("backend ring, algo ", algo)));
    for (int r = 0; r < 4; ++r) {
      EXPECT_THAT(out, HasSubstr(absl::StrCat("#  Rank  ", r, " Pid")));
    }
    for (const char* size : {"        1024  ", "        4096  ",
                             "       16384  ", "       65536  "}) {
      EXPECT_THAT(out, HasSubstr(absl::StrCat("\n", size))) << out;
    }
    EXPECT_THAT(out, HasSubstr("# Avg bus bandwidth : "));
  }
}

// Ranks that pretend to live on uneven hosts run the hierarchical
// all-reduce (forced, and chosen by auto above --hd-threshold) with no
// wrong element.
TEST(BenchRankTest, HierarchicalOnPretendHosts_VerifiesExactly) {
  MemoryStore store;
  for (const char* algo : {"hierarchical", "auto"}) {
    for (const char* layout : {"3+1", "2+1+1"}) {
      std::vector<RankRun> runs =
          RunRanks(&store, 4,
                   {"allreduce", "-b", "1001", "-e", "300000", "-f", "17", "-n",
                    "2", "-w", "1", "--algo", algo, "--host-layout", layout,
                    "--hd-threshold", "4K"},
                   absl::StrCat("hier-", algo, "-", layout));
      for (int r = 0; r < 4; ++r) {
        ASSERT_TRUE(runs[r].wrong.ok()) << algo << " " << layout << " rank "
                                        << r << ": " << runs[r].wrong.status();
        EXPECT_EQ(*runs[r].wrong, 0) << algo << " " << layout << " rank " << r;
      }
      EXPECT_THAT(runs[0].output, HasSubstr(absl::StrCat("algo ", algo)));
      EXPECT_THAT(runs[0].output, HasSubstr("Out of bounds values : 0 OK"));
    }
  }
}

TEST(BenchRankTest, JsonLines) {
  MemoryStore store;
  std::vector<RankRun> runs = RunRanks(
      &store, 2, {"allgather", "-b", "1K", "-e", "2K", "-n", "1", "--json"},
      "json");
  ASSERT_TRUE(runs[0].wrong.ok()) << runs[0].wrong.status();
  const std::string& out = runs[0].output;
  EXPECT_EQ(out.find('#'), std::string::npos) << out;
  EXPECT_THAT(out,
              HasSubstr("{\"collective\":\"allgather\",\"backend\":"
                        "\"ring\",\"algo\":\"auto\",\"ranks\":2,"
                        "\"tcp_congestion\":\"auto\",\"transport\":\"auto\","
                        "\"size\":1024,"
                        "\"count\":128,"));
  EXPECT_THAT(out, HasSubstr("\"size\":2048,\"count\":256,"));
  EXPECT_THAT(out, HasSubstr("{\"summary\":true,"));
  EXPECT_THAT(out, HasSubstr("\"wrong\":0,\"ok\":true,\"checked\":true"));
}

TEST(BenchRankTest, RunsReusingOneJobOnOneStoreGetTheirOwnGeneration) {
  MemoryStore store;
  for (int run = 0; run < 3; ++run) {
    std::vector<RankRun> runs = RunRanks(
        &store, 2, {"broadcast", "-b", "4K", "-e", "4K", "-n", "1"}, "same");
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(runs[r].wrong.ok())
          << "run " << run << " rank " << r << ": " << runs[r].wrong.status();
      // Not just a run that ended: one whose every element was right (a
      // rank meeting last run's peers would count wrong ones).
      EXPECT_EQ(*runs[r].wrong, 0) << "run " << run << " rank " << r;
    }
  }
}

TEST(BenchRankTest, BadAlgorithm_ReturnsInvalidArgument) {
  MemoryStore store;
  std::vector<RankRun> runs =
      RunRanks(&store, 1,
               {"allreduce", "-b", "1K", "-e", "1K", "--algo", "tree"}, "bad");
  EXPECT_EQ(runs[0].wrong.status().code(), absl::StatusCode::kInvalidArgument);
}

// One exit-status meaning (cli/framework/command_env.h): wrong elements
// are a failure, 1, as an error is; only a rank of the local launcher
// says "wrong elements" apart, to the launcher, which exits 1 for them.
TEST(BenchRankTest, ExitStatus_WrongElementsFailUnlessTheLauncherAsks) {
  EXPECT_EQ(RankExitStatus(int64_t{0}, false), kExitOk);
  EXPECT_EQ(RankExitStatus(int64_t{0}, true), kExitOk);
  EXPECT_EQ(RankExitStatus(int64_t{12}, false), kExitFailure);
  EXPECT_EQ(RankExitStatus(int64_t{12}, true), kExitLaunchedRankWrongResults);
  EXPECT_EQ(RankExitStatus(absl::UnavailableError("no store"), false),
            kExitFailure);
  EXPECT_EQ(RankExitStatus(absl::UnavailableError("no store"), true),
            kExitFailure);
  EXPECT_NE(kExitLaunchedRankWrongResults, kExitFailure);
  EXPECT_NE(kExitLaunchedRankWrongResults, kExitUsage);
}

TEST(BenchRankTest, MissingPeer_TimesOutNamingIt) {
  MemoryStore store;
  absl::StatusOr<BenchOptions> options = ParseBenchArgs(
      {"allreduce", "-b", "1K", "-e", "1K", "--rank", "0", "--world", "2",
       "--store", "in-memory", "--job", "lonely", "--timeout", "1"});
  ASSERT_TRUE(options.ok()) << options.status();
  std::ostringstream out;
  absl::StatusOr<int64_t> wrong = RunBenchRank(&store, *options, out);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kDeadlineExceeded)
      << wrong.status();
}

// Whether this process sees a CUDA GPU (never, without the NCCL build).
bool HaveGpu() {
#if GRADSYNC_HAVE_NCCL
  absl::StatusOr<int> gpus = CudaDeviceCount();
  return gpus.ok() && *gpus > 0;
#else
  return false;
#endif
}

TEST(BackendTest, NcclWithoutGpu_ReturnsFailedPreconditionNamingTheWayOut) {
  if (HaveGpu()) GTEST_SKIP() << "this host has a GPU";
  absl::StatusOr<BenchOptions> options =
      ParseBenchArgs({"allreduce", "--backend", "nccl"});
  ASSERT_TRUE(options.ok()) << options.status();
  const absl::Status status = CheckBackendAvailable(*options);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), HasSubstr("--backend ring"));
}

// One rank per GPU: a single-GPU host runs a world of one, which still
// goes through device memory, the copies and the checks.
TEST(BackendTest, NcclOnOneGpuVerifies) {
  if (!HaveGpu()) GTEST_SKIP() << "no GPU";
  MemoryStore store;
  for (const char* op : {"sum", "avg"}) {
    std::vector<RankRun> runs =
        RunRanks(&store, 1,
                 {"allreduce", "--backend", "nccl", "-b", "1K", "-e", "1M",
                  "-n", "2", "-o", op},
                 absl::StrCat("nccl-", op));
    ASSERT_TRUE(runs[0].wrong.ok()) << runs[0].wrong.status();
    EXPECT_EQ(*runs[0].wrong, 0);
    EXPECT_THAT(runs[0].output, HasSubstr("device cuda:0"));
  }
}

}  // namespace
}  // namespace bench
}  // namespace cli
}  // namespace gradsync
