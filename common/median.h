// The median of a sample: the middle value, or the mean of the two middle
// values of an even count; 0 for an empty sample. Used wherever a
// measurement is summarised against outliers (link probes, step times,
// sweeps, `--mode auto`'s windows).
//
// Pure function; thread-safe.
#ifndef GRADSYNC_COMMON_MEDIAN_H_
#define GRADSYNC_COMMON_MEDIAN_H_

#include <algorithm>
#include <cstddef>
#include <vector>

namespace gradsync {

inline double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid]
                                : (values[mid - 1] + values[mid]) / 2;
}

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_MEDIAN_H_
