// UTF-8 code points that must never reach a terminal as they are: what a
// terminal acts on (C0 controls, DEL, the C1 controls U+0080..U+009F,
// among them CSI U+009B) and what reorders or breaks the text around it
// (the bidirectional controls U+061C, U+200E, U+200F, U+202A..U+202E,
// U+2066..U+2069, and the separators U+2028, U+2029). Job names are
// refused with them (jobspec/job_spec.cc, the CLI's --name),
// and the CLI shows every string from the coordinator escaped
// (cli/framework/format.h's TerminalSafe).
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_COMMON_CODE_POINTS_H_
#define GRADSYNC_COMMON_CODE_POINTS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace gradsync {

// One UTF-8 sequence at the start of `text`: its code point and length, or
// nothing when it is not well-formed (a stray continuation byte, a
// truncated or overlong sequence, a surrogate, beyond U+10FFFF).
struct DecodedCodePoint {
  uint32_t value = 0;
  size_t length = 0;
};
std::optional<DecodedCodePoint> DecodeUtf8(absl::string_view text);

// True for the code points above.
bool IsUnsafeCodePoint(uint32_t code_point);

// The first problem of `text` as a name, e.g. "holds U+202E (a
// bidirectional control) at byte 4", or nothing when it is well-formed
// UTF-8 with no unsafe code point. Tab and newline count as unsafe.
std::optional<std::string> UnsafeTextProblem(absl::string_view text);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_CODE_POINTS_H_
