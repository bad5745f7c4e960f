// gradsync: the command-line client. `gradsync <command> [args]`; the
// commands are the rows of cli/commands.cc's table.
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/framework/command_env.h"

int main(int argc, char** argv) {
  return gradsync::cli::RunGradsync(
      std::vector<std::string>(argv + 1, argv + argc),
      gradsync::cli::ProcessCommandEnv());
}
