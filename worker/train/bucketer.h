// Bucketer: cuts a flat gradient buffer of P elements into all-reduce
// buckets and tells, as backward reports ranges ready, which buckets can be
// launched (PyTorch DDP's Reducer, on byte ranges of one flat buffer).
//
// Buckets are contiguous slices taken from the END of the buffer toward its
// beginning, each at most bucket_bytes (at least one element):
//
//   | ...     bucket 2 | bucket 1 | bucket 0 |
//   0                                       P
//
// so that bucket 0 holds the last layer's gradient, which backward produces
// first (gradient_ready.h). Boundaries ignore layers: a bucket may span two
// layers or cover part of one, as DDP buckets span parameters. Buckets
// depend only on (P, bucket_bytes), so every rank cuts the same ones.
//
// Readiness: MarkReady(begin, end) records a range of final gradients; a
// bucket is complete when every element of it was reported. Complete
// buckets are handed out strictly in index order (bucket k only after
// bucket k-1), because every rank must issue its collectives in the same
// order: a bucket that completes early waits for its predecessors.
//
// Errors: INVALID_ARGUMENT from Create for bucket_bytes smaller than one
// element; from MarkReady for a range outside [0, P), an empty-but-nonzero
// malformed range (begin > end) or a range that overlaps one already
// reported in this pass (the model broke the "exactly once" contract).
// Nothing is recorded on an error.
// Threading: not thread-safe; one Bucketer per rank, driven from the thread
// that runs backward.
//
// Example:
//   ASSIGN_OR_RETURN(Bucketer b, Bucketer::Create(mlp.num_parameters(),
//                                                 25 << 20));
//   b.Reset();
//   RETURN_IF_ERROR(b.MarkReady(begin, end, [&](const Bucket& bucket) {
//     Launch(bucket.begin, bucket.end);
//   }));
#ifndef GRADSYNC_WORKER_TRAIN_BUCKETER_H_
#define GRADSYNC_WORKER_TRAIN_BUCKETER_H_

#include <cstddef>
#include <functional>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jobspec/job_spec.h"

namespace gradsync {

// PyTorch DDP's default bucket_cap_mb = 25: the job spec's default
// (JobSpec.bucket_bytes, jobspec/job_spec.h).
inline constexpr size_t kDefaultAllReduceBucketBytes =
    static_cast<size_t>(kDefaultBucketBytes);

// One bucket: elements [begin, end) of the flat gradient.
struct Bucket {
  size_t index = 0;  // launch order: 0 is the slice ending at P
  size_t begin = 0;
  size_t end = 0;
  size_t size() const { return end - begin; }
};

class Bucketer {
 public:
  using ReadyFn = std::function<void(const Bucket&)>;

  // Buckets over `num_elements` elements of `element_bytes` bytes each, of
  // at most `bucket_bytes` (rounded down to whole elements).
  [[nodiscard]] static absl::StatusOr<Bucketer> Create(
      size_t num_elements, size_t bucket_bytes,
      size_t element_bytes = sizeof(float));

  // The buckets in launch order (bucket i ends where bucket i-1 begins).
  // Empty when num_elements is 0.
  absl::Span<const Bucket> buckets() const { return buckets_; }
  size_t num_elements() const { return num_elements_; }
  size_t bucket_elements() const { return bucket_elements_; }

  // Starts a new backward pass: nothing is ready, nothing launched.
  void Reset();

  // Records [begin, end) as final and calls `on_ready` (may be empty) for
  // every bucket that can now be launched, in index order. An empty range
  // (begin == end) is allowed and changes nothing.
  [[nodiscard]] absl::Status MarkReady(size_t begin, size_t end,
                                       const ReadyFn& on_ready);

  // Buckets handed out by MarkReady since Reset.
  size_t num_launched() const { return next_launch_; }
  // True once every bucket was handed out (at once for P = 0).
  bool AllLaunched() const { return next_launch_ == buckets_.size(); }

 private:
  Bucketer(size_t num_elements, size_t bucket_elements);

  // The index of the bucket holding element `i` (< num_elements_).
  size_t BucketOf(size_t i) const;

  size_t num_elements_;
  size_t bucket_elements_;
  std::vector<Bucket> buckets_;
  // Elements of each bucket not reported yet in this pass.
  std::vector<size_t> missing_;
  // Ranges reported in this pass, begin -> end, for the overlap check.
  std::map<size_t, size_t> reported_;
  size_t next_launch_ = 0;
};

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_TRAIN_BUCKETER_H_
