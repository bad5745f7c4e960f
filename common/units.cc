#include "common/units.h"

#include <cmath>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
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
  // Two calls: clang checks absl::StrFormat's format at compile time.
  return value < 10 ? absl::StrFormat("%.2f %s", value, kUnits[unit])
                    : absl::StrFormat("%.1f %s", value, kUnits[unit]);
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

absl::StatusOr<uint64_t> ParseSize(absl::string_view text) {
  size_t pos = 0;
  while (pos < text.size() && absl::ascii_isdigit(text[pos])) ++pos;
  if (pos == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "size '", text, "' is not a byte count such as 4096, 64K, 1M, 2G"));
  }
  uint64_t value = 0;
  if (!absl::SimpleAtoi(text.substr(0, pos), &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("size '", text, "' is too large"));
  }
  absl::string_view suffix = text.substr(pos);
  int shift = 0;
  if (!suffix.empty()) {
    switch (absl::ascii_toupper(suffix[0])) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      case 'T':
        shift = 40;
        break;
      default:
        break;
    }
    if (shift != 0) suffix.remove_prefix(1);
  }
  const std::string rest = absl::AsciiStrToLower(suffix);
  const bool unit_ok =
      rest.empty() || rest == "b" || (shift != 0 && rest == "ib");
  if (!unit_ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "size '", text, "' has an unknown suffix; use K, M, G or T"));
  }
  if (shift != 0 && value > (std::numeric_limits<uint64_t>::max() >> shift)) {
    return absl::InvalidArgumentError(
        absl::StrCat("size '", text, "' is too large"));
  }
  return value << shift;
}

}  // namespace gradsync
