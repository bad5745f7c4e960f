#include "cli/bench/bench_command.h"

#include <iostream>

#include "absl/status/statusor.h"
#include "cli/bench/backend.h"
#include "cli/bench/bench_options.h"
#include "cli/bench/bench_rank.h"
#include "cli/bench/launcher.h"

namespace gradsync {
namespace bench {

int RunBenchCommand(const std::vector<std::string>& args) {
  absl::StatusOr<BenchOptions> options = ParseBenchArgs(args);
  if (!options.ok()) {
    std::cerr << "gradsync bench: " << options.status().message()
              << "\n(gradsync bench --help lists the flags)\n";
    return kExitError;
  }
  if (options->help) {
    std::cout << BenchUsage();
    return kExitOk;
  }
  if (options->member()) return BenchRankMain(*options);

  // Launcher: refuse what no rank could run before starting any.
  if (absl::Status status = CheckBackendAvailable(*options); !status.ok()) {
    std::cerr << "gradsync bench: " << status.message() << "\n";
    return kExitError;
  }
  LaunchSpec spec;
  spec.args = {"bench"};
  for (const std::string& arg :
       StripFlag(StripFlag(args, "--ranks"), "--job")) {
    spec.args.push_back(arg);
  }
  spec.ranks = options->ranks;
  spec.job = options->job;
  spec.deadline = options->deadline;
  absl::StatusOr<int> exit_status = RunLocalRanks(spec, kExitWrongResults);
  if (!exit_status.ok()) {
    std::cerr << "gradsync bench: " << exit_status.status().message() << "\n";
    return kExitError;
  }
  return *exit_status;
}

}  // namespace bench
}  // namespace gradsync
