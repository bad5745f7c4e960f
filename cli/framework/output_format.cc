#include "cli/framework/output_format.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gradsync {
namespace cli {
namespace {

// "table, wide, json or csv".
std::string ListFormats(const std::vector<std::string>& formats) {
  if (formats.size() < 2) return absl::StrJoin(formats, "");
  return absl::StrCat(absl::StrJoin(formats.begin(), formats.end() - 1, ", "),
                      " or ", formats.back());
}

FlagSpec FormatRow(std::string name, std::string help,
                   const std::vector<std::string>& formats,
                   std::string* output) {
  const std::string flag = absl::StrCat("--", name);
  return FlagSpec{std::move(name), absl::StrJoin(formats, "|"), std::move(help),
                  [flag, formats, output](absl::string_view value) {
                    absl::Status status =
                        CheckOutputFormat(flag, value, formats);
                    if (status.ok()) *output = std::string(value);
                    return status;
                  }};
}

}  // namespace

absl::Status CheckOutputFormat(absl::string_view flag, absl::string_view value,
                               const std::vector<std::string>& formats) {
  if (std::find(formats.begin(), formats.end(), value) != formats.end()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(flag, " is '", value, "'; use ", ListFormats(formats)));
}

void AddOutputFlags(const std::vector<std::string>& formats,
                    std::string* output, std::vector<FlagSpec>* flags) {
  flags->push_back(
      FormatRow("output",
                absl::StrCat("output format: ", ListFormats(formats), " (",
                             formats.empty() ? "" : formats.front(), ")"),
                formats, output)
          .Short('o'));
  flags->push_back(
      FormatRow("format", "the same as --output", formats, output));
  flags->push_back(FlagSpec{"json", "", "the same as --output json",
                            [output](absl::string_view) {
                              *output = "json";
                              return absl::OkStatus();
                            }});
}

bool ArgsAskForJson(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") return false;
    if (arg == "--json" || arg == "-ojson" || arg == "-o=json" ||
        arg == "--output=json" || arg == "--format=json") {
      return true;
    }
    if ((arg == "-o" || arg == "--output" || arg == "--format") &&
        i + 1 < args.size() && args[i + 1] == "json") {
      return true;
    }
  }
  return false;
}

}  // namespace cli
}  // namespace gradsync
