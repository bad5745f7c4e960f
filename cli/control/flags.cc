#include "cli/control/flags.h"

#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gradsync {
namespace control {
namespace {

const FlagSpec* FindFlag(const std::vector<FlagSpec>& flags,
                         absl::string_view name) {
  for (const FlagSpec& flag : flags) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ParseFlags(
    const std::vector<std::string>& args, const std::vector<FlagSpec>& flags) {
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      positional.insert(positional.end(),
                        args.begin() + static_cast<std::ptrdiff_t>(i + 1),
                        args.end());
      break;
    }
    const FlagSpec* help = FindFlag(flags, "help");
    if (arg == "-h" && help != nullptr) {
      absl::Status status = help->set("");
      if (!status.ok()) return status;
      continue;
    }
    if (!absl::StartsWith(arg, "--") || arg.size() == 2) {
      if (absl::StartsWith(arg, "-") && arg.size() > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown flag '", arg, "' (flags are --long-names)"));
      }
      positional.push_back(arg);
      continue;
    }
    absl::string_view name = absl::string_view(arg).substr(2);
    absl::string_view value;
    bool has_inline = false;
    if (const size_t eq = name.find('='); eq != absl::string_view::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_inline = true;
    }
    const FlagSpec* flag = FindFlag(flags, name);
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag '--", name, "'"));
    }
    if (flag->value_name.empty()) {
      if (has_inline) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag->name, " takes no value"));
      }
    } else if (!has_inline) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", flag->name, " needs a value (", flag->value_name, ")"));
      }
      value = args[++i];
    }
    absl::Status status = flag->set(value);
    if (!status.ok()) return status;
  }
  return positional;
}

std::string FlagsUsage(const std::vector<FlagSpec>& flags) {
  std::string usage;
  for (const FlagSpec& flag : flags) {
    std::string name = absl::StrCat("--", flag.name);
    if (!flag.value_name.empty()) absl::StrAppend(&name, " ", flag.value_name);
    if (name.size() > 26) {
      absl::StrAppendFormat(&usage, "  %s\n  %-26s %s\n", name, "", flag.help);
    } else {
      absl::StrAppendFormat(&usage, "  %-26s %s\n", name, flag.help);
    }
  }
  return usage;
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

}  // namespace control
}  // namespace gradsync
