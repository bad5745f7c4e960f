#include "cli/bench/sizes.h"

#include <cstdint>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gradsync {
namespace cli {
namespace bench {

std::vector<size_t> SweepSizes(size_t min_bytes, size_t max_bytes, int factor,
                               size_t increment) {
  std::vector<size_t> sizes;
  if (increment == 0 && (factor < 2 || min_bytes == 0)) return sizes;
  size_t size = min_bytes;
  while (size <= max_bytes) {
    sizes.push_back(size);
    const size_t step =
        increment > 0 ? increment : size * static_cast<size_t>(factor - 1);
    if (size > std::numeric_limits<size_t>::max() - step) break;
    size += step;
  }
  return sizes;
}

}  // namespace bench
}  // namespace cli
}  // namespace gradsync
