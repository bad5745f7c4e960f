#include "server/ps/ps_transport.h"

#include <grpc/grpc.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <malloc.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/ps/tensor_codec.h"

namespace gradsync {
namespace {

// glibc caps M_MMAP_THRESHOLD at 32 MiB on 64-bit hosts; blocks above it
// (whole-shard buffers) are long-lived and may keep their own mappings.
constexpr int kMmapThreshold = 32 << 20;
constexpr int kTrimThreshold = 512 << 20;

// Reconnect backoff of PS channels: a spurious connection failure (see
// ConnectPsChannel) costs 100 ms, and a restarted server is found within
// a second.
constexpr int kInitialReconnectBackoffMs = 100;
constexpr int kMaxReconnectBackoffMs = 1000;

// How long ConnectPsChannel waits for a state change between checks of
// alive().
constexpr absl::Duration kConnectPoll = absl::Milliseconds(100);

template <typename Sink>
void AddArguments(const PsTransportOptions& options, Sink&& set) {
  set(GRPC_ARG_HTTP2_BDP_PROBE, options.bdp_probe ? 1 : 0);
  set(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, options.stream_window_bytes);
  set(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
      static_cast<int>(kMaxTensorMessageBytes));
  set(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH,
      static_cast<int>(kMaxTensorMessageBytes));
  if (options.max_frame_bytes > 0) {
    set(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, options.max_frame_bytes);
  }
}

void SetReconnectBackoff(grpc::ChannelArguments* args) {
  args->SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
               kInitialReconnectBackoffMs);
  args->SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kMaxReconnectBackoffMs);
}

}  // namespace

grpc::ChannelArguments PsChannelArguments(const PsTransportOptions& options) {
  grpc::ChannelArguments args;
  AddArguments(options, [&args](const char* key, int value) {
    args.SetInt(key, value);
  });
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  SetReconnectBackoff(&args);
  return args;
}

void ApplyPsServerArguments(grpc::ServerBuilder* builder,
                            const PsTransportOptions& options) {
  AddArguments(options, [builder](const char* key, int value) {
    builder->AddChannelArgument(key, value);
  });
  builder->SetMaxReceiveMessageSize(static_cast<int>(kMaxTensorMessageBytes));
  builder->SetMaxSendMessageSize(static_cast<int>(kMaxTensorMessageBytes));
}

std::shared_ptr<grpc::Channel> CreatePsChannel(
    const std::string& address, const PsTransportOptions& options) {
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                   PsChannelArguments(options));
}

std::shared_ptr<grpc::Channel> CreatePsControlChannel(
    const std::string& address) {
  grpc::ChannelArguments args;
  SetReconnectBackoff(&args);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                   args);
}

absl::Status ConnectPsChannel(grpc::Channel* channel, absl::Time deadline,
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

bool TuneMallocForTensorTraffic() {
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1;
  return mmap_ok && trim_ok;
}

}  // namespace gradsync
