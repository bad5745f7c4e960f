#include "common/rpc_deadline.h"

#include "absl/time/clock.h"

namespace gradsync {

int64_t MillisecondsUntil(absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) return INT64_MAX;
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1)));
}

void SetRpcDeadline(grpc::ClientContext* context, absl::Time deadline) {
  if (deadline == absl::InfiniteFuture()) return;
  context->set_deadline(absl::ToChronoTime(deadline));
}

}  // namespace gradsync
