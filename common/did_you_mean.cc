#include "common/did_you_mean.h"

#include <algorithm>

#include "absl/strings/ascii.h"

namespace gradsync {
namespace {

char Fold(char c) { return c == '_' ? '-' : absl::ascii_tolower(c); }

size_t Tolerance(size_t length) {
  if (length <= 4) return 1;
  if (length <= 8) return 2;
  return 3;
}

}  // namespace

size_t EditDistance(absl::string_view a, absl::string_view b) {
  // d[i][j] = distance(a[0, i), b[0, j)), with adjacent transpositions
  // (optimal string alignment).
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = Fold(a[i - 1]) == Fold(b[j - 1]) ? 0 : 1;
      d[i][j] =
          std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && Fold(a[i - 1]) == Fold(b[j - 2]) &&
          Fold(a[i - 2]) == Fold(b[j - 1])) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

std::optional<std::string> ClosestName(absl::string_view typed,
                                       const std::vector<std::string>& names) {
  std::optional<std::string> best;
  size_t best_distance = 0;
  for (const std::string& name : names) {
    const size_t distance = EditDistance(typed, name);
    if (distance == 0) return std::nullopt;
    // Close for its length, and less than half of what was compared.
    if (distance > Tolerance(name.size()) ||
        2 * distance >= std::max(name.size(), typed.size())) {
      continue;
    }
    if (!best.has_value() || distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace gradsync
