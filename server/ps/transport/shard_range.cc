#include "server/ps/transport/shard_range.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

absl::StatusOr<ShardRange> BalancedShardRange(size_t total, int num_shards,
                                              int shard) {
  if (num_shards < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the number of parameter-server shards is ", num_shards,
                     "; it must be at least 1"));
  }
  if (shard < 0 || shard >= num_shards) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shard index ", shard, " is outside [0, ", num_shards, ")"));
  }
  if (total < static_cast<size_t>(num_shards)) {
    return absl::InvalidArgumentError(
        absl::StrCat(num_shards, " shards for ", total,
                     " parameters would leave a shard empty; use at most ",
                     total, " shards"));
  }
  const size_t k = static_cast<size_t>(shard);
  const size_t base = total / static_cast<size_t>(num_shards);
  const size_t extra = total % static_cast<size_t>(num_shards);
  ShardRange range;
  range.begin = k * base + (k < extra ? k : extra);
  range.end = range.begin + base + (k < extra ? 1 : 0);
  return range;
}

absl::StatusOr<std::vector<ShardRange>> BalancedShardRanges(size_t total,
                                                            int num_shards) {
  std::vector<ShardRange> ranges;
  for (int k = 0; k < num_shards || k == 0; ++k) {
    absl::StatusOr<ShardRange> range = BalancedShardRange(total, num_shards, k);
    if (!range.ok()) return range.status();
    ranges.push_back(*range);
  }
  return ranges;
}

}  // namespace gradsync
