// -o/--output: the one output switch of the commands that print more than
// one format (status, workers, metrics, explain, version, lab status,
// simulate, ...), with --json and --format kept as its old spellings
// (CLI framework; the jobs' and workers' CSV is cli/control/job_csv.h).
//
//   table  aligned columns for people (long cells cut)
//   wide   the table with every column and nothing cut
//   json   one JSON document per line (format.h's mapping)
//   csv    a header, then one row per item (proto field names)
//
// Each command says which formats it prints (metrics adds "trace"); any
// other value is INVALID_ARGUMENT naming the valid ones.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_CLI_FRAMEWORK_OUTPUT_FORMAT_H_
#define GRADSYNC_CLI_FRAMEWORK_OUTPUT_FORMAT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/flags.h"

namespace gradsync {
namespace cli {

// The formats of most read commands, in the order help lists them.
inline const std::vector<std::string>& ReadFormats() {
  static const auto* const kFormats =
      new std::vector<std::string>{"table", "wide", "json", "csv"};
  return *kFormats;
}

// The formats of the commands that act and then report (local up, certs
// init): a sentence for people, or one JSON document.
inline const std::vector<std::string>& TableOrJson() {
  static const auto* const kFormats =
      new std::vector<std::string>{"table", "json"};
  return *kFormats;
}

// OK when `value` is one of `formats`; else INVALID_ARGUMENT
// "<flag> is 'xml'; use table, wide, json or csv".
[[nodiscard]] absl::Status CheckOutputFormat(
    absl::string_view flag, absl::string_view value,
    const std::vector<std::string>& formats);

// The rows -o/--output FORMAT, --format FORMAT (its old spelling) and
// --json (= -o json), all writing the format into `*output`; each value is
// checked against `formats`, the first of which is the default the help
// names.
void AddOutputFlags(const std::vector<std::string>& formats,
                    std::string* output, std::vector<FlagSpec>* flags);

// Whether a command line asks for JSON output (--json, -o json, -ojson,
// -o=json, --output[=]json, --format[=]json): its usage errors then go to
// stdout as JSON too.
bool ArgsAskForJson(const std::vector<std::string>& args);

}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_FRAMEWORK_OUTPUT_FORMAT_H_
