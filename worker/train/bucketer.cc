#include "worker/train/bucketer.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"

namespace gradsync {

absl::StatusOr<Bucketer> Bucketer::Create(size_t num_elements,
                                          size_t bucket_bytes,
                                          size_t element_bytes) {
  if (element_bytes == 0) {
    return absl::InvalidArgumentError("bucket element size must be > 0");
  }
  if (bucket_bytes < element_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bucket size ", bucket_bytes, " bytes is smaller than one element (",
        element_bytes, " bytes); use at least ", element_bytes));
  }
  return Bucketer(num_elements, bucket_bytes / element_bytes);
}

Bucketer::Bucketer(size_t num_elements, size_t bucket_elements)
    : num_elements_(num_elements), bucket_elements_(bucket_elements) {
  size_t end = num_elements;
  while (end > 0) {
    Bucket b;
    b.index = buckets_.size();
    b.end = end;
    b.begin = end - std::min(end, bucket_elements);
    buckets_.push_back(b);
    end = b.begin;
  }
  missing_.resize(buckets_.size());
  Reset();
}

void Bucketer::Reset() {
  for (size_t k = 0; k < buckets_.size(); ++k) missing_[k] = buckets_[k].size();
  reported_.clear();
  next_launch_ = 0;
}

size_t Bucketer::BucketOf(size_t i) const {
  return (num_elements_ - 1 - i) / bucket_elements_;
}

absl::Status Bucketer::MarkReady(size_t begin, size_t end,
                                 const ReadyFn& on_ready) {
  if (begin > end || end > num_elements_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gradient range [", begin, ", ", end,
        ") is not inside the flat gradient [0, ", num_elements_, ")"));
  }
  if (begin == end) return absl::OkStatus();
  // The first reported range starting at or after `end` and its
  // predecessor are the only ones that can overlap [begin, end).
  auto next = reported_.lower_bound(end);
  if (next != reported_.begin()) {
    auto prev = std::prev(next);
    if (prev->second > begin) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gradient range [", begin, ", ", end, ") overlaps the range [",
          prev->first, ", ", prev->second,
          ") reported earlier in this backward pass; a model must report "
          "each gradient element exactly once per pass"));
    }
  }
  reported_.emplace(begin, end);
  // Buckets are in decreasing address order: the bucket of end-1 first.
  for (size_t k = BucketOf(end - 1);; ++k) {
    const Bucket& b = buckets_[k];
    const size_t lo = std::max(begin, b.begin);
    const size_t hi = std::min(end, b.end);
    missing_[k] -= hi - lo;
    if (b.begin <= begin) break;
  }
  while (next_launch_ < buckets_.size() && missing_[next_launch_] == 0) {
    const Bucket& b = buckets_[next_launch_++];
    if (on_ready) on_ready(b);
  }
  return absl::OkStatus();
}

}  // namespace gradsync
