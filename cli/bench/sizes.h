// The list of sizes a `gradsync bench` sweep (-b -e -f / -i) visits; the
// sizes themselves are parsed and printed by common/units.h (K = 1024).
// Pure functions; thread-safe.
#ifndef GRADSYNC_CLI_BENCH_SIZES_H_
#define GRADSYNC_CLI_BENCH_SIZES_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/units.h"

namespace gradsync {
namespace cli {
namespace bench {

// The sizes of the sweep, ascending, min..max inclusive of max only when
// reached exactly. Requires factor >= 2 (or increment > 0), min >= 1 for
// factor sweeps.
std::vector<size_t> SweepSizes(size_t min_bytes, size_t max_bytes, int factor,
                               size_t increment);

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_SIZES_H_
