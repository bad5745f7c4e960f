// "Did you mean ...?" for a mistyped command or flag: the known name
// closest to what was typed, when it is close enough to be a typo.
//
//   if (std::optional<std::string> near = ClosestName(typed, known)) {
//     absl::StrAppend(&message, "; did you mean '", *near, "'?");
//   }
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_COMMON_DID_YOU_MEAN_H_
#define GRADSYNC_COMMON_DID_YOU_MEAN_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace gradsync {

// Edit distance: insertions, deletions, substitutions and swaps of two
// adjacent characters ("jsno" is 1 from "json"), each 1; ASCII letters
// compared case-insensitively, '_' equal to '-'.
size_t EditDistance(absl::string_view a, absl::string_view b);

// The name in `names` nearest to `typed` by EditDistance, if that is at
// most 1 for a name of up to 4 characters, 2 up to 8, else 3, and under
// half the longer of the two; ties go to the earlier name. nullopt when
// none is that close, or when `typed` is one of them.
std::optional<std::string> ClosestName(absl::string_view typed,
                                       const std::vector<std::string>& names);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_DID_YOU_MEAN_H_
