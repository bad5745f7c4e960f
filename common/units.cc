#include "common/units.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gradsync {

std::string FormatBytes(double bytes) {
  if (!std::isfinite(bytes) || bytes < 0) return "-";
  if (bytes < 1024) return absl::StrFormat("%.0f B", bytes);
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = bytes / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  return absl::StrFormat(value < 10 ? "%.2f %s" : "%.1f %s", value,
                         kUnits[unit]);
}

std::string FormatSize(size_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  return absl::StrFormat("%g %s", value, kUnits[unit]);
}

}  // namespace gradsync
