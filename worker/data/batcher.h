// Batcher: which training examples each rank uses at each step, so that a
// data-parallel job of N ranks sees exactly the data a single process would.
//
// The training set is visited in a fresh random order every epoch: epoch e
// uses RandomPermutation(dataset_size, DeriveSeed(seed, e))
// (common/model_init/portable_random.h), identical on every platform. Step s
// takes ONE global batch of global_batch_size consecutive positions of that
// order, and rank r of N takes its contiguous share of it: positions
// [ShareOf(B, N, r).begin, ShareOf(B, N, r).end) of the batch, a balanced
// split in which the first B % N ranks hold one example more (so some ranks
// hold none when B < N). Concatenating the shares of ranks 0..N-1 gives
// the 1-rank batch exactly.
//
// Epoch boundaries:
//   drop_last = true   an epoch has floor(n / B) steps; the n % B examples
//                      left at the end of each order are skipped (as
//                      PyTorch's DataLoader(drop_last=True));
//   drop_last = false  the orders of epochs 0, 1, 2, ... are concatenated
//                      into one stream and step s takes positions
//                      [s*B, (s+1)*B) of it: a batch may straddle epochs and
//                      every example is used equally often.
// A step's indices depend only on (dataset_size, config, step), so a job
// can resume (or a rank rejoin) at any step.
//
// Errors: INVALID_ARGUMENT for an empty dataset, B = 0, N = 0, rank >= N,
// or drop_last with B > dataset_size; OUT_OF_RANGE for a step whose stream
// position overflows 64 bits. Threading: not thread-safe (it caches the
// current epoch's order); use one Batcher per rank.
//
// Example (rank 2 of 4, global batch 256):
//   BatcherConfig config;
//   config.global_batch_size = 256;
//   config.seed = job_seed;
//   config.num_ranks = 4;
//   config.rank = 2;
//   ASSIGN_OR_RETURN(Batcher batcher, Batcher::Create(train.num_examples,
//                                                     config));
//   Batch batch;
//   RETURN_IF_ERROR(batcher.Gather(train, step, &batch));
#ifndef GRADSYNC_WORKER_DATA_BATCHER_H_
#define GRADSYNC_WORKER_DATA_BATCHER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/data/dataset.h"

namespace gradsync {

struct BatcherConfig {
  size_t global_batch_size = 0;
  uint64_t seed = 0;
  size_t num_ranks = 1;
  size_t rank = 0;
  bool drop_last = true;
};

// Half-open range of positions in a global batch.
struct ShareRange {
  size_t begin = 0;
  size_t end = 0;
  size_t size() const { return end - begin; }
};

class Batcher {
 public:
  [[nodiscard]] static absl::StatusOr<Batcher> Create(
      size_t dataset_size, const BatcherConfig& config);

  // Rank `rank`'s share of a global batch of `batch` split over `ranks`
  // (ranks >= 1, rank < ranks).
  static ShareRange ShareOf(size_t batch, size_t ranks, size_t rank);

  const BatcherConfig& config() const { return config_; }
  size_t dataset_size() const { return dataset_size_; }
  // This rank's share of every global batch.
  ShareRange share() const {
    return ShareOf(config_.global_batch_size, config_.num_ranks, config_.rank);
  }
  // Steps per epoch with drop_last; with wrapping, dataset_size / B rounded
  // up (the steps that start in one epoch, on average).
  uint64_t steps_per_epoch() const;
  // The epoch of the first example of global batch `step`.
  [[nodiscard]] absl::StatusOr<uint64_t> EpochOf(uint64_t step) const;

  // Dataset indices of this rank's share of global batch `step`.
  [[nodiscard]] absl::StatusOr<std::vector<size_t>> Indices(uint64_t step);
  // Indices of the whole global batch `step` (every rank's share, in rank
  // order).
  [[nodiscard]] absl::StatusOr<std::vector<size_t>> GlobalIndices(
      uint64_t step);

  // Copies this rank's share of global batch `step` into `batch`.
  // INVALID_ARGUMENT if `dataset` does not have dataset_size() examples.
  [[nodiscard]] absl::Status Gather(const Dataset& dataset, uint64_t step,
                                    Batch* batch);

 private:
  Batcher(size_t dataset_size, const BatcherConfig& config)
      : dataset_size_(dataset_size), config_(config) {}

  // Dataset indices at positions [first, first + count) of global batch
  // `step`.
  [[nodiscard]] absl::StatusOr<std::vector<size_t>> Positions(uint64_t step,
                                                              size_t first,
                                                              size_t count);
  // The example order of `epoch` (cached: the last two epochs used).
  const std::vector<size_t>& Order(uint64_t epoch);

  size_t dataset_size_;
  BatcherConfig config_;
  struct CachedOrder {
    uint64_t epoch = 0;
    bool valid = false;
    std::vector<size_t> order;
  };
  CachedOrder cache_[2];
  int next_slot_ = 0;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_DATA_BATCHER_H_
