// Output building blocks of every command (CLI framework): aligned text
// tables, JSON and CSV from any protobuf message, and human units.
//
// JSON follows protobuf's JSON mapping (camelCase names, enums by name,
// every field printed, defaults included) with one difference that scripts
// want: 64-bit integers are JSON numbers, not strings. The output parses
// back with JsonStringToMessage, so `gradsync status JOB --json` can feed
// a spec into `gradsync submit --file`.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_CLI_FRAMEWORK_FORMAT_H_
#define GRADSYNC_CLI_FRAMEWORK_FORMAT_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/json.h"
#include "common/units.h"

namespace gradsync {
namespace cli {

// The longest table cell, in bytes (TerminalSafe caps cells at it).
inline constexpr size_t kMaxTableCellBytes = 200;

// A CSV cell: `text`, quoted (inner quotes doubled) when it holds a comma,
// a quote or a line break.
std::string CsvCell(const std::string& text);

// `text` safe to print on a terminal: control characters (ESC, CR, NUL,
// ...) become visible escapes ("\x1b"), newlines and tabs too unless
// `keep_newlines`, and text beyond `max_bytes` is cut (at a UTF-8
// character boundary) and ends in "...". Strings from the coordinator
// (job names, messages, host names) go through it before they are shown.
std::string TerminalSafe(absl::string_view text, size_t max_bytes,
                         bool keep_newlines = false);

// A text table: a header row, then the rows, columns padded to their
// widest cell and separated by two spaces; no trailing spaces. Rows
// shorter than the header get empty cells. Every cell is TerminalSafe,
// at most kMaxTableCellBytes.
std::string FormatTable(const std::vector<std::string>& header,
                        const std::vector<std::vector<std::string>>& rows);

// `message` as one line of JSON (see the file comment).
std::string MessageToJson(const google::protobuf::Message& message);

// CSV of a flat message type: the header holds the proto field names of
// its scalar fields (message and repeated fields are left out), each row
// their values; enums by name.
std::string CsvHeader(const google::protobuf::Descriptor& descriptor);
std::string CsvRow(const google::protobuf::Message& message);

// {"error":{"code":"UNAVAILABLE","message":"..."}}
std::string StatusToJson(const absl::Status& status);

// Milliseconds with 2 significant decimals: "12.34".
std::string FormatMillis(double seconds);
// "42 s", "3 min 5 s", "2 h 10 min"; "-" when negative.
std::string FormatElapsed(double seconds);
// A share in [0, 1] as "23.4%"; "-" when not finite.
std::string FormatPercent(double share);

}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_FRAMEWORK_FORMAT_H_
