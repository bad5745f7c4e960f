#include "cli/framework/parse_command.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cli/framework/output_format.h"

namespace gradsync {
namespace cli {

std::optional<int> ParseCommand(const std::vector<std::string>& args,
                                std::vector<FlagSpec> flags,
                                absl::string_view command,
                                absl::string_view usage, const CommandEnv& env,
                                CommandOptions* options,
                                std::vector<std::string>* positional) {
  if (!options->formats.empty()) {
    AddOutputFlags(options->formats, &options->output, &flags);
  }
  flags.push_back(HelpFlag(&options->help));
  if (env.flag_table != nullptr) {
    *env.flag_table = std::move(flags);
    return kExitOk;
  }
  // The environment reaches commands through CommandEnv, not the table.
  absl::StatusOr<std::vector<std::string>> parsed =
      ParseFlags(args, flags, /*env=*/nullptr);
  if (!parsed.ok()) {
    return ReportUsageError(env, command, args, parsed.status());
  }
  if (options->help) {
    *env.out << usage << "\nflags:\n" << FlagsHelp(flags, env.terminal_width);
    return kExitOk;
  }
  if (options->output.empty() && !options->formats.empty()) {
    options->output = options->formats.front();
  }
  options->json = options->output == "json";
  *positional = std::move(*parsed);
  return std::nullopt;
}

std::optional<int> ExpectPositional(const std::vector<std::string>& args,
                                    const std::vector<std::string>& positional,
                                    size_t want, absl::string_view what,
                                    absl::string_view command,
                                    const CommandEnv& env) {
  if (positional.size() == want) return std::nullopt;
  const absl::Status status = absl::InvalidArgumentError(
      positional.size() < want
          ? absl::StrCat("name the ", what)
          : absl::StrCat("unexpected argument '", positional[want], "'"));
  return ReportUsageError(env, command, args, status);
}

void SetShortName(absl::string_view name, char letter,
                  std::vector<FlagSpec>* flags) {
  for (FlagSpec& flag : *flags) {
    if (flag.name == name) flag.short_name = letter;
  }
}

}  // namespace cli
}  // namespace gradsync
