#include "worker/data/batcher.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "common/model_init/portable_random.h"
#include "common/status_macros.h"

namespace gradsync {

absl::StatusOr<Batcher> Batcher::Create(size_t dataset_size,
                                        const BatcherConfig& config) {
  const size_t b = config.global_batch_size;
  if (dataset_size == 0) {
    return absl::InvalidArgumentError("cannot draw batches from 0 examples");
  }
  if (b == 0) {
    return absl::InvalidArgumentError("global batch size must be >= 1");
  }
  if (config.num_ranks == 0 || config.rank >= config.num_ranks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", config.rank, " is not in [0, ", config.num_ranks, ") ranks"));
  }
  if (config.drop_last && b > dataset_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "global batch size ", b, " exceeds the ", dataset_size,
        " examples: with drop_last no full batch exists; lower the batch "
        "size or set drop_last = false"));
  }
  return Batcher(dataset_size, config);
}

ShareRange Batcher::ShareOf(size_t batch, size_t ranks, size_t rank) {
  const size_t base = batch / ranks;
  const size_t extra = batch % ranks;
  ShareRange share;
  share.begin = rank * base + (rank < extra ? rank : extra);
  share.end = share.begin + base + (rank < extra ? 1 : 0);
  return share;
}

uint64_t Batcher::steps_per_epoch() const {
  const size_t b = config_.global_batch_size;
  if (config_.drop_last) return dataset_size_ / b;
  return dataset_size_ / b + (dataset_size_ % b != 0 ? 1 : 0);
}

absl::StatusOr<uint64_t> Batcher::EpochOf(uint64_t step) const {
  if (config_.drop_last) return step / steps_per_epoch();
  const uint64_t b = config_.global_batch_size;
  if (step > std::numeric_limits<uint64_t>::max() / b) {
    return absl::OutOfRangeError(
        absl::StrCat("step ", step, " times batch ", b, " overflows"));
  }
  return step * b / dataset_size_;
}

const std::vector<size_t>& Batcher::Order(uint64_t epoch) {
  for (CachedOrder& c : cache_) {
    if (c.valid && c.epoch == epoch) return c.order;
  }
  CachedOrder& slot = cache_[next_slot_];
  next_slot_ = 1 - next_slot_;
  slot.order =
      RandomPermutation(dataset_size_, DeriveSeed(config_.seed, epoch));
  slot.epoch = epoch;
  slot.valid = true;
  return slot.order;
}

absl::StatusOr<std::vector<size_t>> Batcher::Positions(uint64_t step,
                                                       size_t first,
                                                       size_t count) {
  const uint64_t b = config_.global_batch_size;
  const uint64_t n = dataset_size_;
  std::vector<size_t> out;
  out.reserve(count);
  if (config_.drop_last) {
    const uint64_t spe = steps_per_epoch();
    const std::vector<size_t>& order = Order(step / spe);
    const uint64_t start = (step % spe) * b + first;
    for (size_t k = 0; k < count; ++k) out.push_back(order[start + k]);
    return out;
  }
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  if (step > (kMax - b) / b) {
    return absl::OutOfRangeError(absl::StrCat(
        "step ", step, " is too large: its stream position overflows"));
  }
  uint64_t pos = step * b + first;
  for (size_t k = 0; k < count; ++k, ++pos) {
    out.push_back(Order(pos / n)[pos % n]);
  }
  return out;
}

absl::StatusOr<std::vector<size_t>> Batcher::Indices(uint64_t step) {
  const ShareRange s = share();
  return Positions(step, s.begin, s.size());
}

absl::StatusOr<std::vector<size_t>> Batcher::GlobalIndices(uint64_t step) {
  return Positions(step, 0, config_.global_batch_size);
}

absl::Status Batcher::Gather(const Dataset& dataset, uint64_t step,
                             Batch* batch) {
  if (dataset.num_examples != dataset_size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("batcher was made for ", dataset_size_,
                     " examples but the dataset has ", dataset.num_examples));
  }
  ASSIGN_OR_RETURN(std::vector<size_t> indices, Indices(step));
  return GatherExamples(dataset, indices, batch);
}

}  // namespace gradsync
