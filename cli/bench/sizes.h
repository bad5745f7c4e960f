// Byte counts of `gradsync bench`: parsing "64M"-style sizes, printing
// them, and the list of sizes a sweep (-b -e -f / -i) visits. Pure
// functions; thread-safe.
#ifndef GRADSYNC_CLI_BENCH_SIZES_H_
#define GRADSYNC_CLI_BENCH_SIZES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/units.h"

namespace gradsync {
namespace bench {

// Parses a byte count: digits with an optional K, M, G or T suffix
// (powers of 1024, either case), optionally followed by "B" or "iB":
// "512", "1K", "64M", "1GiB". Rejects empty, negative, fractional and
// overflowing values.
[[nodiscard]] absl::StatusOr<size_t> ParseSize(absl::string_view text);

// The sizes of the sweep, ascending, min..max inclusive of max only when
// reached exactly. Requires factor >= 2 (or increment > 0), min >= 1 for
// factor sweeps.
std::vector<size_t> SweepSizes(size_t min_bytes, size_t max_bytes, int factor,
                               size_t increment);

}  // namespace bench
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_SIZES_H_
