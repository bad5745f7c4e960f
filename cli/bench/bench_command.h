// `gradsync bench`: parses the command line with the CLI framework
// (ParseCommand over bench_options.h's table) and either launches local
// ranks (--ranks N, the default) or runs as one rank of a run
// (--world/--rank/--store). See bench_options.h for the flags.
//
// Exit statuses, as every command's (cli/framework/command_env.h): 0 every
// element right; 1 wrong elements (-c 1, the default) or an error (a rank
// that failed or was killed, a server or store that did not start, the
// --deadline passed); 2 a bad flag or value (printed with a pointer to
// --help).
//
// Threading: one call at a time (the launcher forks and waits for its
// ranks).
#ifndef GRADSYNC_CLI_BENCH_BENCH_COMMAND_H_
#define GRADSYNC_CLI_BENCH_BENCH_COMMAND_H_

#include <string>
#include <vector>

#include "cli/framework/command_env.h"

namespace gradsync {
namespace cli {
namespace bench {

// `args` are the arguments after "bench"; the report goes to env.out, the
// errors to env.err; --rank, --world and the launcher's mark come from
// env.launcher_env where --store asks for them. Returns the exit status.
int RunBenchCommand(const std::vector<std::string>& args,
                    const CommandEnv& env);

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_BENCH_COMMAND_H_
