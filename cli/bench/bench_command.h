// `gradsync bench`: parses the command line and either launches local
// ranks (--ranks N, the default) or runs as one rank of a run
// (--world/--rank/--store). See bench_options.h for the flags.
#ifndef GRADSYNC_CLI_BENCH_BENCH_COMMAND_H_
#define GRADSYNC_CLI_BENCH_BENCH_COMMAND_H_

#include <string>
#include <vector>

namespace gradsync {
namespace cli {
namespace bench {

// `args` are the arguments after "bench". Returns the process exit status:
// 0 every element right, 2 wrong elements, 1 any error (printed to
// stderr).
int RunBenchCommand(const std::vector<std::string>& args);

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_BENCH_COMMAND_H_
