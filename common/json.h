// JSON building blocks shared by every JSON writer in gradsync (the control
// commands' protobuf-to-JSON output, the benchmark's JSON lines).
//
// Numbers follow protobuf's JSON mapping: JSON has no NaN or infinity, so
// those become the strings "NaN", "Infinity" and "-Infinity", which
// protobuf's parser reads back into a double field.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_COMMON_JSON_H_
#define GRADSYNC_COMMON_JSON_H_

#include <string>

#include "absl/strings/string_view.h"

namespace gradsync {

// `text` as a JSON string literal, quotes included: " and \ escaped,
// \n \r \t by name, other control characters as \u00XX; other bytes as
// they are (UTF-8 passes through).
std::string JsonQuote(absl::string_view text);

// A JSON number for `value`: the shortest of %.15g..%.17g that reads back
// exactly. NaN and infinities as above.
std::string JsonNumber(double value);

// A JSON number for `value` rounded to `significant_digits` (%.*g), for
// measurements whose last digits are noise. NaN and infinities as above.
std::string JsonNumber(double value, int significant_digits);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_JSON_H_
