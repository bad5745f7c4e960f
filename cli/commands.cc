#include "cli/commands.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/bench/bench_command.h"
#include "cli/completion.h"
#include "cli/control/certs_command.h"
#include "cli/control/job_commands.h"
#include "cli/control/links_command.h"
#include "cli/control/local_command.h"
#include "cli/control/logs_command.h"
#include "cli/control/version_command.h"
#include "cli/framework/parse_command.h"
#include "cli/lab/explain_command.h"
#include "cli/lab/lab_command.h"
#include "cli/plan/plan_command.h"
#include "cli/plan/simulate_command.h"
#include "common/did_you_mean.h"

namespace gradsync {
namespace cli {
namespace {

int RunCompletion(const std::vector<std::string>& args, const CommandEnv& env);

// Where the summaries start in the usage.
constexpr size_t kSummaryColumn = 14;

constexpr Command kCommands[] = {
    {"local", "start (up) or stop (down) a cluster on this machine",
     &control::RunLocal, "up down"},
    {"certs", "make a cluster CA and certificates for mutual TLS (init DIR)",
     &control::RunCerts, "init"},
    {"lab",
     "an emulated multi-host cluster for the PS-vs-ring study (up, sweep, "
     "down)",
     &lab::RunLab, "up down status probe set-link sweep report calibrate",
     "sweep report calibrate"},
    {"workers", "list the registered workers and their devices",
     &control::RunWorkers, ""},
    {"submit", "submit a training job (flags or --file job.json; -f follows)",
     &control::RunSubmit, ""},
    {"watch", "follow a job's progress until it ends", &control::RunWatch, ""},
    {"status", "one job's state and placement, or all jobs",
     &control::RunStatus, ""},
    {"cancel", "cancel a job", &control::RunCancel, ""},
    {"resume", "resubmit an ended job from its newest checkpoint",
     &control::RunResume, ""},
    {"switch", "switch a job between the parameter server and the ring",
     &control::RunSwitch, ""},
    {"metrics",
     "a job's per-step metrics and PS shard counters (csv, table, json, "
     "trace)",
     &control::RunMetrics, ""},
    {"logs", "a job's log lines from its workers, through the coordinator",
     &control::RunLogs, ""},
    {"explain",
     "a job's sync time against the alpha-beta model, its bottleneck, and "
     "the faster path",
     &lab::RunExplain, ""},
    {"links",
     "measure the links between worker hosts and set the model's link "
     "facts (probe, show)",
     &control::RunLinks, "probe show"},
    {"simulate",
     "simulate one training step on a cluster: step time, exposed comm, "
     "bottleneck, trace",
     &plan::RunSimulate, ""},
    {"plan",
     "the best sync layout and PS server count for 8..1,024 workers "
     "(simulated)",
     &plan::RunPlan, ""},
    {"bench",
     "measure allreduce, reducescatter, allgather or broadcast (nccl-tests' "
     "table)",
     &bench::RunBenchCommand, "allreduce reducescatter allgather broadcast"},
    {"version", "this client's version and the coordinator's",
     &control::RunVersion, ""},
    {"completion", "a bash or zsh completion script (completion bash|zsh)",
     &RunCompletion, "bash zsh"},
};

const Command* FindCommand(absl::string_view name) {
  for (const Command& command : kCommands) {
    if (name == command.name) return &command;
  }
  return nullptr;
}

// "unknown command 'stauts'; did you mean 'status'?"
std::string UnknownCommand(absl::string_view name) {
  std::vector<std::string> names = {"help"};
  for (const Command& command : kCommands) names.push_back(command.name);
  std::string message = absl::StrCat("unknown command '", name, "'");
  if (std::optional<std::string> near = ClosestName(name, names)) {
    absl::StrAppend(&message, "; did you mean '", *near, "'?");
  }
  return message;
}

std::vector<CompletionCommand> CompletionCommands() {
  std::vector<CompletionCommand> commands;
  CompletionCommand help;
  help.name = "help";
  for (const Command& command : kCommands) {
    help.words.push_back(command.name);
    CompletionCommand completion{
        command.name,
        CommandFlags(command),
        absl::StrSplit(command.words, ' ', absl::SkipEmpty()),
        {}};
    for (absl::string_view word :
         absl::StrSplit(command.subcommands, ' ', absl::SkipEmpty())) {
      completion.subcommands.push_back(
          {std::string(word),
           DescribeFlags(command.run, {std::string(word)}),
           {},
           {}});
    }
    commands.push_back(std::move(completion));
  }
  commands.push_back(std::move(help));
  return commands;
}

constexpr char kCompletionUsage[] =
    "usage: gradsync completion bash|zsh\n\n"
    "Prints a shell completion script for gradsync's commands, their flags\n"
    "and the values of flags such as -o. Load it now with\n"
    "  source <(gradsync completion bash)\n"
    "or for every shell by saving it as /etc/bash_completion.d/gradsync;\n"
    "zsh: put `source <(gradsync completion zsh)` in ~/.zshrc.\n";

int RunCompletion(const std::vector<std::string>& args, const CommandEnv& env) {
  CommandOptions options;
  options.formats.clear();
  std::vector<std::string> positional;
  if (std::optional<int> done =
          ParseCommand(args, {}, "completion", kCompletionUsage, env, &options,
                       &positional)) {
    return *done;
  }
  const std::string shell = positional.size() == 1 ? positional[0] : "";
  if (shell != "bash" && shell != "zsh") {
    return ReportUsageError(
        env, "completion", args,
        absl::InvalidArgumentError(
            positional.empty()
                ? "name the shell: bash or zsh"
                : absl::StrCat("the shell is '", absl::StrJoin(positional, " "),
                               "'; use bash or zsh")));
  }
  *env.out << (shell == "bash" ? BashCompletion(CompletionCommands())
                               : ZshCompletion(CompletionCommands()))
           << std::flush;
  return kExitOk;
}

}  // namespace

absl::Span<const Command> Commands() { return kCommands; }

std::vector<FlagSpec> CommandFlags(const Command& command) {
  return DescribeFlags(command.run);
}

std::string Usage(int width) {
  std::string out =
      "usage: gradsync <command> [flags] [args]\n"
      "       gradsync help <command>\n"
      "       gradsync --version\n\n"
      "commands:\n";
  for (const Command& command : kCommands) {
    const std::string name = absl::StrFormat("  %-11s ", command.name);
    absl::StrAppend(
        &out, name,
        WrapHelpText(command.summary, name.size(), kSummaryColumn, width));
  }
  bool unused = false;
  absl::StrAppend(
      &out, "\noptions:\n",
      FlagsHelp({HelpFlag(&unused), VersionFlag(&unused)}, width), "\n",
      WrapHelpText(
          "gradsync help <command> is gradsync <command> --help. "
          "The read commands (status, workers, metrics, explain, version) "
          "take -o/--output table|wide|json|csv; the commands that talk to "
          "the coordinator take -c/--coordinator HOST:PORT (else "
          "$GRADSYNC_COORDINATOR, else 127.0.0.1:29400).",
          0, 0, width));
  return out;
}

int RunGradsync(const std::vector<std::string>& args, const CommandEnv& env) {
  if (args.empty()) {
    *env.err << Usage(env.terminal_width);
    return kExitFailure;
  }
  const std::string& name = args[0];
  if (name == "--help" || name == "-h" ||
      (name == "help" && args.size() == 1)) {
    *env.out << Usage(env.terminal_width);
    return kExitOk;
  }
  if (name == "--version") {
    *env.out << VersionLine("gradsync") << "\n";
    return kExitOk;
  }
  if (name == "help") {
    const Command* command = FindCommand(args[1]);
    if (command == nullptr) {
      *env.err << "gradsync help: " << UnknownCommand(args[1])
               << "\n(gradsync --help lists the commands)\n";
      return kExitUsage;
    }
    return command->run({"--help"}, env);
  }
  if (const Command* command = FindCommand(name)) {
    return command->run(std::vector<std::string>(args.begin() + 1, args.end()),
                        env);
  }
  *env.err << "gradsync: "
           << (name.size() > 1 && name[0] == '-'
                   ? absl::StrCat("unknown flag '", name,
                                  "' (flags come after the command)")
                   : UnknownCommand(name))
           << "\n\n"
           << Usage(env.terminal_width);
  return kExitFailure;
}

}  // namespace cli
}  // namespace gradsync
