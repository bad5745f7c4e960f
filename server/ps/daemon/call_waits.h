// How the parameter server's handlers wait on a shard: until the client's
// deadline or the shard's max_wait, whichever comes first, in slices of
// kCancelCheckInterval so that a call whose client went away (CANCELLED)
// or whose server shuts down (UNAVAILABLE) gives its thread back within
// one slice. Shared by the blocking handlers (ps_tensor_rpc.cc) and the
// PushPull reactor (push_pull_reactor.h).
#ifndef GRADSYNC_SERVER_PS_DAEMON_CALL_WAITS_H_
#define GRADSYNC_SERVER_PS_DAEMON_CALL_WAITS_H_

#include <grpcpp/server_context.h>

#include <algorithm>
#include <atomic>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "server/ps/shard/ps_shard.h"

namespace gradsync {

// How often a waiting handler checks for cancellation and shutdown.
inline constexpr absl::Duration kCancelCheckInterval = absl::Milliseconds(100);

// The most a wait ends before the client's deadline (see CallDeadline).
inline constexpr absl::Duration kMaxReplyMargin = absl::Seconds(1);

// The end of a wait on `shard` for this call: the shard's max_wait, or a
// little before the client's deadline (a tenth of the time left, at most
// kMaxReplyMargin), so that the shard's error, which names the ranks it
// waited for, reaches the client before the client's own deadline ends
// the call with a bare "Deadline Exceeded".
inline absl::Time CallDeadline(const grpc::ServerContextBase& context,
                               const PsShard& shard) {
  const absl::Time now = absl::Now();
  absl::Time end = absl::FromChrono(context.deadline());
  if (end > now) end -= std::min(kMaxReplyMargin, (end - now) / 10);
  return std::min(end, now + shard.config().max_wait);
}

// CANCELLED if the client cancelled the call or went away, UNAVAILABLE
// once `shutting_down` is set, else OK.
[[nodiscard]] inline absl::Status CheckCallAlive(
    const grpc::ServerContextBase& context,
    const std::atomic<bool>& shutting_down) {
  if (context.IsCancelled()) {
    return absl::CancelledError(
        "the client cancelled the call or went away while it waited");
  }
  if (shutting_down.load()) {
    return absl::UnavailableError(
        "the parameter server is shutting down; its shards are gone");
  }
  return absl::OkStatus();
}

namespace call_waits_internal {
inline const absl::Status& StatusOf(const absl::Status& status) {
  return status;
}
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}
}  // namespace call_waits_internal

// Calls `wait(slice_deadline)` with successive slice deadlines until it
// returns anything but DEADLINE_EXCEEDED, `deadline` passes, or `alive()`
// says the call is over.
template <typename Wait, typename Alive>
auto WaitInSlices(absl::Time deadline, Alive&& alive, Wait&& wait)
    -> decltype(wait(deadline)) {
  const absl::Time start = absl::Now();
  for (;;) {
    const absl::Time slice_end =
        std::min(deadline, absl::Now() + kCancelCheckInterval);
    auto result = wait(slice_end);
    const absl::Status& status = call_waits_internal::StatusOf(result);
    if (status.code() != absl::StatusCode::kDeadlineExceeded) return result;
    if (slice_end >= deadline) {
      return Annotate(status,
                      absl::StrCat("gave up after ",
                                   absl::FormatDuration(absl::Now() - start)));
    }
    RETURN_IF_ERROR(alive());
  }
}

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_DAEMON_CALL_WAITS_H_
