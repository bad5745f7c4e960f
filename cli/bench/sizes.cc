#include "cli/bench/sizes.h"

#include <cstdint>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gradsync {
namespace bench {

absl::StatusOr<size_t> ParseSize(absl::string_view text) {
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
    return absl::InvalidArgumentError(
        absl::StrCat("size '", text, "' has an unknown suffix; use K, M or G"));
  }
  if (shift != 0 && value > (std::numeric_limits<uint64_t>::max() >> shift)) {
    return absl::InvalidArgumentError(
        absl::StrCat("size '", text, "' is too large"));
  }
  const uint64_t bytes = value << shift;
  if (bytes > std::numeric_limits<size_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("size '", text, "' is too large"));
  }
  return static_cast<size_t>(bytes);
}

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
}  // namespace gradsync
