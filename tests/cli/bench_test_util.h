// Shared by the `gradsync bench` rank tests: runs the ranks of one bench
// run as threads of this process over one store.
#ifndef GRADSYNC_TESTS_CLI_BENCH_TEST_UTIL_H_
#define GRADSYNC_TESTS_CLI_BENCH_TEST_UTIL_H_

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cli/bench/bench_options.h"
#include "cli/bench/bench_rank.h"
#include "collectives/store.h"

namespace gradsync {
namespace cli {
namespace bench {

struct RankRun {
  absl::StatusOr<int64_t> wrong = absl::UnknownError("not run");
  std::string output;
};

// Runs `world` ranks of `args` (plus --rank/--world/--job and a 30 s
// --timeout) over `store`, each on its own thread; returns once all ended.
inline std::vector<RankRun> RunRanks(Store* store, int world,
                                     std::vector<std::string> args,
                                     const std::string& job) {
  std::vector<RankRun> runs(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      std::vector<std::string> rank_args = args;
      for (std::string a :
           {std::string("--rank"), absl::StrCat(r), std::string("--world"),
            absl::StrCat(world), std::string("--store"),
            std::string("in-memory"), std::string("--job"), job,
            std::string("--timeout"), std::string("30")}) {
        rank_args.push_back(a);
      }
      absl::StatusOr<BenchOptions> options = ParseBenchArgs(rank_args);
      if (!options.ok()) {
        runs[r].wrong = options.status();
        return;
      }
      std::ostringstream out;
      runs[r].wrong = RunBenchRank(store, *options, out);
      runs[r].output = out.str();
    });
  }
  for (std::thread& t : threads) t.join();
  return runs;
}

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_CLI_BENCH_TEST_UTIL_H_
