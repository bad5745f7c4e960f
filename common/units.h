// Byte counts for people: one rule for every size gradsync prints and
// parses (flags, job specs): binary units, K = 1024.
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_COMMON_UNITS_H_
#define GRADSYNC_COMMON_UNITS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

// `bytes` in the largest binary unit it reaches (B, KiB, MiB, GiB, TiB),
// with a fixed number of decimals so that table columns line up: "512 B",
// "1.50 KiB", "64.0 MiB", "2.00 GiB"; "-" when negative or not finite.
std::string FormatBytes(double bytes);

// `bytes` as short as it can be said, for sizes a person chose (flags,
// benchmark sweeps): "512 B", "1 KiB", "64 MiB", "1.5 GiB" (%g of the
// largest unit reached).
std::string FormatSize(size_t bytes);

// Parses a byte count: digits with an optional K, M, G or T suffix (powers
// of 1024, either case), optionally followed by "B" or "iB": "512", "1K",
// "64M", "1GiB", "2GB" (= 2^31). INVALID_ARGUMENT for an empty, negative,
// fractional or overflowing value and for an unknown suffix.
[[nodiscard]] absl::StatusOr<uint64_t> ParseSize(absl::string_view text);

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_UNITS_H_
