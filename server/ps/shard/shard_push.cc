#include "server/ps/shard/shard_push.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/ps/shard/ps_shard.h"

namespace gradsync {

ShardPush::ShardPush(std::shared_ptr<PsShard> shard, int rank, int64_t step,
                     char* data, size_t size_bytes, PushOptions options)
    : shard_(std::move(shard)),
      rank_(rank),
      step_(step),
      options_(std::move(options)),
      data_(data),
      size_bytes_(size_bytes) {}

ShardPush::ShardPush(ShardPush&& other) noexcept
    : shard_(std::move(other.shard_)),
      rank_(other.rank_),
      step_(other.step_),
      options_(std::move(other.options_)),
      data_(other.data_),
      size_bytes_(other.size_bytes_),
      filled_(other.filled_),
      segments_(std::move(other.segments_)),
      holds_(std::move(other.holds_)) {
  other.shard_ = nullptr;
}

ShardPush& ShardPush::operator=(ShardPush&& other) noexcept {
  if (this != &other) {
    if (shard_ != nullptr) shard_->Abandon(rank_);
    shard_ = std::move(other.shard_);
    other.shard_ = nullptr;
    rank_ = other.rank_;
    step_ = other.step_;
    options_ = std::move(other.options_);
    data_ = other.data_;
    size_bytes_ = other.size_bytes_;
    filled_ = other.filled_;
    segments_ = std::move(other.segments_);
    holds_ = std::move(other.holds_);
  }
  return *this;
}

ShardPush::~ShardPush() {
  if (shard_ != nullptr) shard_->Abandon(rank_);
}

void ShardPush::AddSegment(const char* bytes, size_t n) {
  if (n == 0) return;
  if (!descending()) {
    AppendSegment(&segments_, bytes, n);
  } else if (!segments_.empty() && bytes + n == segments_.back().data) {
    // Continues the last piece downwards: one segment.
    segments_.back().data = bytes;
    segments_.back().size += n;
  } else {
    segments_.push_back(ByteSegment{bytes, n});
  }
  filled_ += n;
  if (shard_ != nullptr) shard_->core_.bytes_in.fetch_add(n);
}

absl::Status ShardPush::MarkFilled(size_t n) {
  if (n > size_bytes_ - filled_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", rank_, " sent more than its gradient for step ", step_, ": ",
        filled_ + n, " bytes for a shard of ", size_bytes_,
        " bytes; check the shard range the worker uses"));
  }
  AddSegment(
      descending() ? data_ + (size_bytes_ - filled_ - n) : data_ + filled_, n);
  return absl::OkStatus();
}

absl::Status ShardPush::AppendExternal(absl::Span<const char> bytes,
                                       std::shared_ptr<const void> keep_alive) {
  if (bytes.size() > size_bytes_ - filled_) return MarkFilled(bytes.size());
  AddSegment(bytes.data(), bytes.size());
  if (keep_alive != nullptr) holds_.push_back(std::move(keep_alive));
  return absl::OkStatus();
}

absl::Status ShardPush::SetScalars(std::vector<double> scalars) {
  if (scalars.size() != options_.scalars.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the trailer holds ", scalars.size(),
                     " step scalars, but the push's "
                     "header announced ",
                     options_.scalars.size()));
  }
  options_.scalars = std::move(scalars);
  return absl::OkStatus();
}

absl::Status ShardPush::Append(absl::Span<const char> bytes) {
  const size_t n = bytes.size();
  if (n <= size_bytes_ - filled_ && n > 0) {
    char* to =
        descending() ? data_ + (size_bytes_ - filled_ - n) : data_ + filled_;
    std::memcpy(to, bytes.data(), n);
  }
  return MarkFilled(n);
}

}  // namespace gradsync
