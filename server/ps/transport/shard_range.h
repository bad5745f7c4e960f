// Where each parameter-server shard's slice of a job's flat fp32 vector
// lies: K shards split the vector's n elements into K contiguous ranges
// whose sizes differ by at most one (the first n mod K shards get one more
// element), so that each shard moves and updates the same number of bytes.
//
//   ASSIGN_OR_RETURN(ShardRange r, BalancedShardRange(n, num_shards, k));
//   // shard k owns elements [r.begin, r.end) = bytes [4 r.begin, 4 r.end)
//
// Errors: INVALID_ARGUMENT for num_shards < 1, a shard index outside
// [0, num_shards), or more shards than elements (a shard would be empty).
// Pure functions; thread-safe.
#ifndef GRADSYNC_SERVER_PS_TRANSPORT_SHARD_RANGE_H_
#define GRADSYNC_SERVER_PS_TRANSPORT_SHARD_RANGE_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync {

// Elements [begin, end) of the flat vector.
struct ShardRange {
  size_t begin = 0;
  size_t end = 0;
  size_t size() const { return end - begin; }
  bool operator==(const ShardRange& other) const {
    return begin == other.begin && end == other.end;
  }
};

// The range of shard `shard` of `num_shards` over `total` elements.
[[nodiscard]] absl::StatusOr<ShardRange> BalancedShardRange(size_t total,
                                                            int num_shards,
                                                            int shard);

// The ranges of all `num_shards` shards, in shard order.
[[nodiscard]] absl::StatusOr<std::vector<ShardRange>> BalancedShardRanges(
    size_t total, int num_shards);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_TRANSPORT_SHARD_RANGE_H_
