// gradsync: the command-line client. `gradsync <command> [args]`; each
// command is one row of kCommands, so adding one is adding its Run
// function and a row. The control commands (everything but bench) take
// --coordinator HOST:PORT (else $GRADSYNC_COORDINATOR, else
// 127.0.0.1:29400) and --json. `gradsync --version` prints the version and
// the wire version.
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cli/bench/bench_command.h"
#include "cli/control/certs_command.h"
#include "cli/control/job_commands.h"
#include "cli/control/local_command.h"
#include "cli/lab/explain_command.h"
#include "cli/lab/lab_command.h"
#include "common/did_you_mean.h"
#include "common/flags.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  // Gets the arguments after the command's name; returns the exit status.
  int (*run)(const std::vector<std::string>& args);
};

constexpr Command kCommands[] = {
    {"local", "start (up) or stop (down) a cluster on this machine",
     &gradsync::control::LocalMain},
    {"certs", "make a cluster CA and certificates for mutual TLS (init DIR)",
     &gradsync::control::CertsMain},
    {"lab",
     "an emulated multi-host cluster for the PS-vs-ring study (up, sweep, "
     "down)",
     &gradsync::lab::LabMain},
    {"workers", "list the registered workers and their devices",
     &gradsync::control::WorkersMain},
    {"submit", "submit a training job (flags or --file job.json; --follow)",
     &gradsync::control::SubmitMain},
    {"watch", "follow a job's progress until it ends",
     &gradsync::control::WatchMain},
    {"status", "one job's state and placement, or all jobs",
     &gradsync::control::StatusMain},
    {"cancel", "cancel a job", &gradsync::control::CancelMain},
    {"resume", "resubmit an ended job from its newest checkpoint",
     &gradsync::control::ResumeMain},
    {"switch", "switch a job between the parameter server and the ring",
     &gradsync::control::SwitchMain},
    {"metrics", "a job's per-step metrics and PS shard counters (CSV, JSON)",
     &gradsync::control::MetricsMain},
    {"explain",
     "a job's sync time against the alpha-beta model, its bottleneck, and "
     "the faster path",
     &gradsync::lab::ExplainMain},
    {"bench",
     "measure allreduce/reducescatter/allgather/broadcast (nccl-tests table)",
     &gradsync::bench::RunBenchCommand},
};

void PrintUsage(std::ostream& out) {
  out << "usage: gradsync <command> [args]   (gradsync <command> --help)\n"
         "       gradsync --version\n\n"
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
  if (name == "--version" || name == "version") {
    std::cout << gradsync::VersionLine("gradsync") << "\n";
    return 0;
  }
  for (const Command& command : kCommands) {
    if (name == command.name) {
      return command.run(std::vector<std::string>(argv + 2, argv + argc));
    }
  }
  std::vector<std::string> names;
  for (const Command& command : kCommands) names.push_back(command.name);
  std::cerr << "gradsync: unknown command '" << name << "'";
  if (std::optional<std::string> near = gradsync::ClosestName(name, names)) {
    std::cerr << "; did you mean '" << *near << "'?";
  }
  std::cerr << "\n\n";
  PrintUsage(std::cerr);
  return 1;
}
