#include "common/flags.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/did_you_mean.h"
#include "common/units.h"
#include "common/version.h"
#include "common/wire_version.h"

namespace gradsync {
namespace {

// Long names compare with '-' and '_' as one letter.
bool SameName(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const char x = a[i] == '_' ? '-' : a[i];
    const char y = b[i] == '_' ? '-' : b[i];
    if (x != y) return false;
  }
  return true;
}

const FlagSpec* FindLong(const std::vector<FlagSpec>& flags,
                         absl::string_view name) {
  for (const FlagSpec& flag : flags) {
    if (SameName(flag.name, name)) return &flag;
  }
  return nullptr;
}

const FlagSpec* FindShort(const std::vector<FlagSpec>& flags, char letter) {
  for (const FlagSpec& flag : flags) {
    if (flag.short_name != 0 && flag.short_name == letter) return &flag;
  }
  return nullptr;
}

// "--name" or "-n" as the user should type it.
std::string Spelling(const FlagSpec& flag) {
  return flag.name.empty() ? std::string{'-', flag.short_name}
                           : absl::StrCat("--", flag.name);
}

// Appends `text` to `out`, wrapped to `width` columns, every line indented
// by `indent` columns; the first line continues from column `column`.
void AppendWrapped(std::string* out, absl::string_view text, size_t column,
                   size_t indent, size_t width) {
  const size_t room = width > indent + 20 ? width - indent : 20;
  size_t used = column > indent ? column - indent : 0;
  bool first_word = true;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!first_word && used + 1 + word.size() > room) {
      absl::StrAppend(out, "\n", std::string(indent, ' '));
      used = 0;
    } else if (!first_word) {
      out->push_back(' ');
      ++used;
    }
    absl::StrAppend(out, word);
    used += word.size();
    first_word = false;
  }
  out->push_back('\n');
}

}  // namespace

std::optional<std::string> ProcessEnv(absl::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

absl::StatusOr<std::vector<std::string>> ParseFlags(
    const std::vector<std::string>& args, const std::vector<FlagSpec>& flags,
    const EnvLookup& env) {
  // Pass 1: which rows the arguments set, so that the environment fills in
  // the others first and the command line wins.
  std::set<const FlagSpec*> given;
  for (const std::string& arg : args) {
    if (arg == "--") break;
    if (absl::StartsWith(arg, "--")) {
      absl::string_view name = absl::string_view(arg).substr(2);
      name = name.substr(0, name.find('='));
      if (const FlagSpec* flag = FindLong(flags, name)) given.insert(flag);
    } else if (arg.size() >= 2 && arg[0] == '-') {
      if (const FlagSpec* flag = FindShort(flags, arg[1])) given.insert(flag);
    }
  }
  if (env) {
    for (const FlagSpec& flag : flags) {
      if (flag.env.empty() || given.count(&flag) > 0) continue;
      const std::optional<std::string> value = env(flag.env);
      if (!value.has_value() || value->empty()) continue;
      absl::Status status = flag.set(*value);
      if (!status.ok()) {
        return absl::Status(
            status.code(), absl::StrCat("$", flag.env, " (for ", Spelling(flag),
                                        "): ", status.message()));
      }
    }
  }

  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      positional.insert(positional.end(),
                        args.begin() + static_cast<std::ptrdiff_t>(i + 1),
                        args.end());
      break;
    }
    const FlagSpec* flag = nullptr;
    absl::string_view value;
    bool has_inline = false;
    if (absl::StartsWith(arg, "--")) {
      absl::string_view name = absl::string_view(arg).substr(2);
      if (const size_t eq = name.find('='); eq != absl::string_view::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_inline = true;
      }
      flag = FindLong(flags, name);
      if (flag == nullptr) {
        std::vector<std::string> names;
        for (const FlagSpec& f : flags) names.push_back(f.name);
        std::string message = absl::StrCat("unknown flag '--", name, "'");
        if (std::optional<std::string> near = ClosestName(name, names)) {
          absl::StrAppend(&message, "; did you mean '--", *near, "'?");
        }
        return absl::InvalidArgumentError(message);
      }
    } else if (arg.size() >= 2 && arg[0] == '-') {
      flag = FindShort(flags, arg[1]);
      if (flag == nullptr && arg[1] == 'h') flag = FindLong(flags, "help");
      // "-workers" for "--workers": a long name behind one dash is a typo
      // worth naming, even where a letter row could read the rest as its
      // glued value (-w "orkers").
      const absl::string_view rest =
          absl::string_view(arg).substr(1, arg.find('=') - 1);
      if (const FlagSpec* long_flag =
              rest.size() > 1 ? FindLong(flags, rest) : nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("unknown flag '", arg,
                                                       "'; did you mean '--",
                                                       long_flag->name, "'?"));
      }
      if (flag == nullptr) {
        const bool letters =
            std::any_of(flags.begin(), flags.end(),
                        [](const FlagSpec& f) { return f.short_name != 0; });
        std::string message = absl::StrCat(
            "unknown flag '", arg, "'",
            letters ? " (see --help)" : " (flags are --long-names)");
        if (rest.size() > 1) {
          std::vector<std::string> names;
          for (const FlagSpec& f : flags) names.push_back(f.name);
          if (std::optional<std::string> near = ClosestName(rest, names)) {
            message = absl::StrCat("unknown flag '", arg, "'; did you mean '--",
                                   *near, "'?");
          }
        }
        return absl::InvalidArgumentError(message);
      }
      if (arg.size() > 2) {
        value = absl::string_view(arg).substr(arg[2] == '=' ? 3 : 2);
        has_inline = true;
      }
    } else {
      positional.push_back(arg);
      continue;
    }
    if (flag->value_name.empty()) {
      if (has_inline) {
        return absl::InvalidArgumentError(
            absl::StrCat(Spelling(*flag), " takes no value"));
      }
    } else if (!has_inline) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(arg, " needs a value (", flag->value_name, ")"));
      }
      value = args[++i];
    }
    absl::Status status = flag->set(value);
    if (!status.ok()) return status;
  }
  return positional;
}

absl::StatusOr<std::vector<std::string>> ParseFlags(
    int argc, char** argv, const std::vector<FlagSpec>& flags,
    const EnvLookup& env) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return ParseFlags(args, flags, env);
}

std::string FlagsHelp(const std::vector<FlagSpec>& flags, int width) {
  // Names up to this wide share their line with the help text.
  constexpr size_t kNameColumn = 28;
  const size_t columns = static_cast<size_t>(std::max(width, 40));
  std::string help;
  for (const FlagSpec& flag : flags) {
    std::string name = "  ";
    if (flag.short_name != 0) {
      absl::StrAppend(&name, "-", std::string(1, flag.short_name),
                      flag.name.empty() ? "" : ", ");
    } else {
      absl::StrAppend(&name, "    ");
    }
    if (!flag.name.empty()) absl::StrAppend(&name, "--", flag.name);
    if (!flag.value_name.empty()) absl::StrAppend(&name, " ", flag.value_name);
    std::string text = flag.help;
    if (!flag.env.empty()) {
      absl::StrAppend(&text, text.empty() ? "" : " ", "[$", flag.env, "]");
    }
    help += name;
    if (name.size() + 1 > kNameColumn) {
      absl::StrAppend(&help, "\n", std::string(kNameColumn, ' '));
    } else {
      help.append(kNameColumn - name.size(), ' ');
    }
    AppendWrapped(&help, text, kNameColumn, kNameColumn, columns);
  }
  return help;
}

std::string WrapHelpText(absl::string_view text, size_t column, size_t indent,
                         int width) {
  std::string out;
  AppendWrapped(&out, text, column, indent,
                static_cast<size_t>(std::max(width, 1)));
  return out;
}

int PickTerminalWidth(int stdout_columns, int stderr_columns,
                      const char* columns_env) {
  if (stdout_columns > 0) return stdout_columns;
  if (stderr_columns > 0) return stderr_columns;
  int columns = 0;
  if (columns_env != nullptr && absl::SimpleAtoi(columns_env, &columns) &&
      columns > 0) {
    return columns;
  }
  return 80;
}

int TerminalWidth() {
  auto columns_of = [](int fd) {
    winsize size{};
    if (isatty(fd) != 1 || ioctl(fd, TIOCGWINSZ, &size) != 0) return 0;
    return static_cast<int>(size.ws_col);
  };
  return PickTerminalWidth(columns_of(STDOUT_FILENO), columns_of(STDERR_FILENO),
                           std::getenv("COLUMNS"));
}

std::string VersionLine(absl::string_view program) {
  return absl::StrCat(program, " ", Version(), " (wire version ", kWireVersion,
                      ")");
}

FlagSpec HelpFlag(bool* out) {
  return SwitchFlag("help", "print this help and exit", out).Short('h');
}

FlagSpec VersionFlag(bool* out) {
  return SwitchFlag("version", "print the version and the wire version", out);
}

FlagSpec SwitchFlag(std::string name, std::string help, bool* out) {
  return FlagSpec{std::move(name), "", std::move(help),
                  [out](absl::string_view) {
                    *out = true;
                    return absl::OkStatus();
                  }};
}

FlagSpec StringFlag(std::string name, std::string value_name, std::string help,
                    std::string* out) {
  std::string flag = absl::StrCat("--", name);
  return FlagSpec{
      std::move(name), std::move(value_name), std::move(help),
      [out, flag](absl::string_view value) {
        if (value.empty()) {
          return absl::InvalidArgumentError(absl::StrCat(flag, " is empty"));
        }
        *out = std::string(value);
        return absl::OkStatus();
      }};
}

FlagSpec IntFlag(std::string name, std::string help, int64_t min,
                 int64_t* out) {
  std::string flag = absl::StrCat("--", name);
  return FlagSpec{std::move(name), "N", std::move(help),
                  [out, flag, min](absl::string_view value) {
                    absl::StatusOr<int64_t> parsed =
                        ParseIntValue(flag, value, min);
                    if (!parsed.ok()) return parsed.status();
                    *out = *parsed;
                    return absl::OkStatus();
                  }};
}

FlagSpec IntFlag(std::string name, std::string help, int min, int* out) {
  std::string flag = absl::StrCat("--", name);
  return FlagSpec{
      std::move(name), "N", std::move(help),
      [out, flag, min](absl::string_view value) {
        absl::StatusOr<int64_t> parsed = ParseIntValue(flag, value, min);
        if (!parsed.ok()) return parsed.status();
        if (*parsed > std::numeric_limits<int>::max()) {
          return absl::InvalidArgumentError(absl::StrCat(
              flag, " wants an integer up to ", std::numeric_limits<int>::max(),
              ", got '", value, "'"));
        }
        *out = static_cast<int>(*parsed);
        return absl::OkStatus();
      }};
}

FlagSpec SecondsFlag(std::string name, std::string help, absl::Duration* out) {
  std::string flag = absl::StrCat("--", name);
  return FlagSpec{std::move(name), "SECONDS", std::move(help),
                  [out, flag](absl::string_view value) {
                    absl::StatusOr<absl::Duration> parsed =
                        ParseSecondsValue(flag, value);
                    if (!parsed.ok()) return parsed.status();
                    *out = *parsed;
                    return absl::OkStatus();
                  }};
}

FlagSpec MillisecondsFlag(std::string name, std::string help,
                          absl::Duration* out) {
  std::string flag = absl::StrCat("--", name);
  return FlagSpec{
      std::move(name), "MS", std::move(help),
      [out, flag](absl::string_view value) {
        int64_t ms = 0;
        if (!absl::SimpleAtoi(value, &ms) || ms <= 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              flag, " '", value, "' is not a positive number of milliseconds"));
        }
        *out = absl::Milliseconds(ms);
        return absl::OkStatus();
      }};
}

FlagSpec SizeFlag(std::string name, std::string help, uint64_t min,
                  uint64_t* out) {
  std::string flag = absl::StrCat("--", name);
  return FlagSpec{std::move(name), "SIZE", std::move(help),
                  [out, flag, min](absl::string_view value) {
                    absl::StatusOr<uint64_t> parsed =
                        ParseSizeValue(flag, value, min);
                    if (!parsed.ok()) return parsed.status();
                    *out = *parsed;
                    return absl::OkStatus();
                  }};
}

FlagSpec DoubleFlag(std::string name, std::string value_name, std::string help,
                    double min, double* out) {
  std::string flag = absl::StrCat("--", name);
  return FlagSpec{std::move(name), std::move(value_name), std::move(help),
                  [out, flag, min](absl::string_view value) {
                    absl::StatusOr<double> parsed =
                        ParseDoubleValue(flag, value, min);
                    if (!parsed.ok()) return parsed.status();
                    *out = *parsed;
                    return absl::OkStatus();
                  }};
}

absl::StatusOr<int64_t> ParseIntValue(absl::string_view flag,
                                      absl::string_view value, int64_t min) {
  int64_t parsed = 0;
  if (!absl::SimpleAtoi(value, &parsed) || parsed < min) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " wants an integer >= ", min, ", got '", value, "'"));
  }
  return parsed;
}

absl::StatusOr<int64_t> ParseCountValue(absl::string_view flag,
                                        absl::string_view value, int64_t min) {
  absl::string_view digits = value;
  int64_t scale = 1;
  if (!digits.empty()) {
    switch (absl::ascii_toupper(digits.back())) {
      case 'K':
        scale = 1000;
        break;
      case 'M':
        scale = int64_t{1000} * 1000;
        break;
      case 'G':
        scale = int64_t{1000} * 1000 * 1000;
        break;
      default:
        break;
    }
    if (scale != 1) digits.remove_suffix(1);
  }
  int64_t parsed = 0;
  if (!absl::SimpleAtoi(digits, &parsed) || parsed < 0 ||
      parsed > std::numeric_limits<int64_t>::max() / scale ||
      parsed * scale < min) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " wants a count >= ", min,
        " (digits with an optional K, M or G), got '", value, "'"));
  }
  return parsed * scale;
}

absl::StatusOr<double> ParseDoubleValue(absl::string_view flag,
                                        absl::string_view value, double min) {
  double parsed = 0;
  if (!absl::SimpleAtod(value, &parsed) || !std::isfinite(parsed) ||
      parsed < min) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " wants a number >= ", min, ", got '", value, "'"));
  }
  return parsed;
}

absl::StatusOr<absl::Duration> ParseSecondsValue(absl::string_view flag,
                                                 absl::string_view value) {
  double seconds = 0;
  absl::Duration duration;
  if (absl::SimpleAtod(value, &seconds) && std::isfinite(seconds)) {
    duration = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(value, &duration)) {
    duration = absl::ZeroDuration();
  }
  if (duration <= absl::ZeroDuration() ||
      duration == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " wants a positive number of seconds (or 90s, 2m), got '", value,
        "'"));
  }
  return duration;
}

absl::StatusOr<uint64_t> ParseSizeValue(absl::string_view flag,
                                        absl::string_view value, uint64_t min) {
  absl::StatusOr<uint64_t> size = ParseSize(value);
  if (!size.ok()) {
    return absl::Status(size.status().code(),
                        absl::StrCat(flag, ": ", size.status().message()));
  }
  if (*size < min) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " wants a size >= ", FormatSize(min), ", got '", value, "'"));
  }
  return *size;
}

}  // namespace gradsync
