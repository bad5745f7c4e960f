#include "cli/framework/command_env.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/framework/format.h"
#include "cli/framework/output_format.h"

namespace gradsync {
namespace cli {
namespace {

std::string GetEnv(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::string ReadLink(const char* path) {
  std::vector<char> buffer(4096);
  const ssize_t n = readlink(path, buffer.data(), buffer.size() - 1);
  if (n <= 0) return "";
  return std::string(buffer.data(), static_cast<size_t>(n));
}

std::string CurrentDir() {
  std::vector<char> buffer(4096);
  if (getcwd(buffer.data(), buffer.size()) == nullptr) return ".";
  return buffer.data();
}

}  // namespace

CommandEnv ProcessCommandEnv() {
  CommandEnv env;
  env.out = &std::cout;
  env.err = &std::cerr;
  env.out_is_tty = isatty(STDOUT_FILENO) == 1;
  env.terminal_width = TerminalWidth();
  env.live_width = [] { return TerminalWidth(); };
  env.coordinator_env = GetEnv("GRADSYNC_COORDINATOR");
  env.run_dir_env = GetEnv("GRADSYNC_RUN_DIR");
  env.token_file_env = GetEnv("GRADSYNC_TOKEN_FILE");
  env.tls_dir_env = GetEnv("GRADSYNC_TLS_DIR");
  env.lab_dir_env = GetEnv("GRADSYNC_LAB_DIR");
  env.path_env = GetEnv("PATH");
  env.launcher_env = ProcessEnv;
  env.self_exe = ReadLink("/proc/self/exe");
  env.cwd = CurrentDir();
  return env;
}

std::vector<FlagSpec> DescribeFlags(CommandFn run,
                                    const std::vector<std::string>& args) {
  std::ostringstream sink;
  CommandEnv env;
  env.out = &sink;
  env.err = &sink;
  std::vector<FlagSpec> table;
  env.flag_table = &table;
  run(args, env);
  return table;
}

int ReportError(const CommandEnv& env, absl::string_view command, bool json,
                const absl::Status& status) {
  *env.err << "gradsync " << command << ": " << status.message() << "\n";
  if (json) *env.out << StatusToJson(status) << "\n";
  env.out->flush();
  return status.code() == absl::StatusCode::kInvalidArgument ? kExitUsage
                                                             : kExitFailure;
}

int ReportUsageError(const CommandEnv& env, absl::string_view command,
                     const std::vector<std::string>& args,
                     const absl::Status& status) {
  *env.err << "gradsync " << command << ": " << status.message()
           << "\n(gradsync " << command << " --help lists the flags)\n";
  if (ArgsAskForJson(args)) {
    *env.out << StatusToJson(status) << "\n" << std::flush;
  }
  return kExitUsage;
}

}  // namespace cli
}  // namespace gradsync
