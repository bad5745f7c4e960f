// gradsync: the command-line client. `gradsync <command> [args]`; each
// command is one row of kCommands, so adding one (submit, status,
// local up, ...) is adding its Run function and a row.
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cli/bench/bench_command.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  // Gets the arguments after the command's name; returns the exit status.
  int (*run)(const std::vector<std::string>& args);
};

constexpr Command kCommands[] = {
    {"bench",
     "measure allreduce/reducescatter/allgather/broadcast (nccl-tests table)",
     &gradsync::bench::RunBenchCommand},
};

void PrintUsage(std::ostream& out) {
  out << "usage: gradsync <command> [args]   (gradsync <command> --help)\n\n"
         "commands:\n";
  for (const Command& command : kCommands) {
    out << absl::StrFormat("  %-10s %s\n", command.name, command.summary);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(std::cerr);
    return 1;
  }
  const std::string name = argv[1];
  if (name == "help" || name == "--help" || name == "-h") {
    PrintUsage(std::cout);
    return 0;
  }
  for (const Command& command : kCommands) {
    if (name == command.name) {
      return command.run(std::vector<std::string>(argv + 2, argv + argc));
    }
  }
  std::cerr << "gradsync: unknown command '" << name << "'\n\n";
  PrintUsage(std::cerr);
  return 1;
}
