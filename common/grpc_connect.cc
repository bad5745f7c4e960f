#include "common/grpc_connect.h"

#include <grpc/grpc.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"

namespace gradsync {
namespace {

// A spurious failure costs 100 ms; a restarted server is found within 1 s.
constexpr int kInitialReconnectBackoffMs = 100;
constexpr int kMaxReconnectBackoffMs = 1000;

// How long ConnectChannel waits for a state change between checks of
// alive().
constexpr absl::Duration kConnectPoll = absl::Milliseconds(100);

}  // namespace

void SetReconnectBackoff(grpc::ChannelArguments* args) {
  args->SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
               kInitialReconnectBackoffMs);
  args->SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kMaxReconnectBackoffMs);
}

absl::Status ConnectChannel(grpc::Channel* channel, absl::Time deadline,
                            absl::FunctionRef<absl::Status()> alive) {
  absl::Time give_up = deadline;
  absl::Time failing_since = absl::InfiniteFuture();
  for (;;) {
    const grpc_connectivity_state state =
        channel->GetState(/*try_to_connect=*/true);
    if (state == GRPC_CHANNEL_READY) return absl::OkStatus();
    const absl::Time now = absl::Now();
    if (state == GRPC_CHANNEL_SHUTDOWN) {
      return absl::UnavailableError("the channel to the server is shut down");
    }
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE &&
        failing_since == absl::InfiniteFuture()) {
      failing_since = now;
      give_up = std::min(deadline, now + kConnectRetryWindow);
    }
    if (now >= give_up) {
      if (state == GRPC_CHANNEL_TRANSIENT_FAILURE) {
        return absl::UnavailableError(
            absl::StrCat("could not connect: every attempt failed for ",
                         absl::FormatDuration(now - failing_since)));
      }
      return absl::DeadlineExceededError(
          "no connection to the server before the deadline");
    }
    RETURN_IF_ERROR(alive());
    channel->WaitForStateChange(
        state, absl::ToChronoTime(std::min(give_up, now + kConnectPoll)));
  }
}

absl::Status ConnectChannel(grpc::Channel* channel, absl::Time deadline) {
  return ConnectChannel(channel, deadline, []() { return absl::OkStatus(); });
}

}  // namespace gradsync
