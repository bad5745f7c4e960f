// ShardPush (PsShard::Push): one rank's gradient for one step on a PsShard,
// being received. Move-only; dropping it uncommitted abandons the push (the
// rank may push that step again). A transport fills it in chunk order,
// receiving straight into unfilled() or handing over buffers of its own
// (AppendExternal), then commits it (PsShard::Commit).
//
// Threading: a push belongs to the thread that fills it.
#ifndef GRADSYNC_SERVER_PS_SHARD_SHARD_PUSH_H_
#define GRADSYNC_SERVER_PS_SHARD_SHARD_PUSH_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "server/ps/shard/gradient_sum.h"
#include "server/ps/shard/shard_types.h"

namespace gradsync {

class PsShard;

class ShardPush {
 public:
  ShardPush(ShardPush&& other) noexcept;
  ShardPush& operator=(ShardPush&& other) noexcept;
  ShardPush(const ShardPush&) = delete;
  ShardPush& operator=(const ShardPush&) = delete;
  ~ShardPush();

  int rank() const { return rank_; }
  int64_t step() const { return step_; }
  bool descending() const { return options_.descending; }
  size_t size_bytes() const { return size_bytes_; }
  size_t filled_bytes() const { return filled_; }
  // The bytes still to receive (receive straight into them): ascending,
  // the gradient's bytes [filled, size); descending, [0, size - filled).
  absl::Span<char> unfilled() {
    return absl::MakeSpan(descending() ? data_ : data_ + filled_,
                          size_bytes_ - filled_);
  }
  // Marks `n` bytes of unfilled() as received: its first `n` bytes
  // (ascending) or its last `n` (descending). INVALID_ARGUMENT if n
  // exceeds what is left.
  [[nodiscard]] absl::Status MarkFilled(size_t n);
  // Copies `bytes` into the next unfilled bytes (MarkFilled's rules).
  [[nodiscard]] absl::Status Append(absl::Span<const char> bytes);
  // Takes the next `bytes` where they are, without a copy: the shard
  // reads them when it applies the step and holds `keep_alive` (which
  // must keep them valid) until then. For transports that receive into
  // buffers of their own (gRPC). MarkFilled's rules: in a descending
  // push each call takes the bytes that end where the previous call's
  // began, so a chunk in several pieces is taken last piece first.
  [[nodiscard]] absl::Status AppendExternal(
      absl::Span<const char> bytes, std::shared_ptr<const void> keep_alive);
  // The step scalars, when they come after the gradient (a trailer):
  // INVALID_ARGUMENT unless there are as many as BeginPush was given.
  [[nodiscard]] absl::Status SetScalars(std::vector<double> scalars);

 private:
  friend class PsShard;
  ShardPush(std::shared_ptr<PsShard> shard, int rank, int64_t step, char* data,
            size_t size_bytes, PushOptions options);
  // Records bytes [at, at + n) of the gradient as lying at `bytes`.
  void AddSegment(const char* bytes, size_t n);

  std::shared_ptr<PsShard> shard_;  // null once committed or moved from
  int rank_ = 0;
  int64_t step_ = 0;
  PushOptions options_;
  char* data_ = nullptr;  // the rank's staging buffer
  size_t size_bytes_ = 0;
  size_t filled_ = 0;
  // Where the gradient's bytes are, in data_ or external: in order
  // (ascending), or in reverse order (descending; Commit reverses it).
  GradientSegments segments_;
  std::vector<std::shared_ptr<const void>> holds_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_SHARD_SHARD_PUSH_H_
