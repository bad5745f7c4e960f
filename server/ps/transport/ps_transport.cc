#include "server/ps/transport/ps_transport.h"

#include <grpc/grpc.h>
#include <malloc.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_connect.h"
#include "common/status_macros.h"
#include "security/tls.h"
#include "server/ps/transport/ps_socket_mutator.h"
#include "server/ps/transport/tensor_codec.h"

namespace gradsync {
namespace {

// glibc caps M_MMAP_THRESHOLD at 32 MiB on 64-bit hosts; blocks above it
// (whole-shard buffers) are long-lived and may keep their own mappings.
constexpr int kMmapThreshold = 32 << 20;
constexpr int kTrimThreshold = 512 << 20;

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

}  // namespace

grpc::ChannelArguments PsChannelArguments(const std::string& address,
                                          const PsTransportOptions& options) {
  grpc::ChannelArguments args;
  AddArguments(options, [&args](const char* key, int value) {
    args.SetInt(key, value);
  });
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  SetReconnectBackoff(&args);
  SetClientCongestionControl(&args, options.congestion_control, address);
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
  return NewGrpcChannel(address, options.security,
                        PsChannelArguments(address, options));
}

std::shared_ptr<grpc::Channel> CreatePsControlChannel(
    const std::string& address, const GrpcSecurity& security) {
  grpc::ChannelArguments args;
  SetReconnectBackoff(&args);
  return NewGrpcChannel(address, security, args);
}

absl::Status CheckPsTransport(absl::string_view flag, absl::string_view value) {
  if (value == kPsTransportPlane || value == kPsTransportGrpc) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(flag, " is '", value,
                   "'; use plane (the tensor plane, the default) or grpc "
                   "(gRPC streams, encrypted under TLS)"));
}

FlagSpec PsTransportFlag(std::string help, std::string* out) {
  return FlagSpec("ps-transport", "plane|grpc", std::move(help),
                  [out](absl::string_view value) {
                    RETURN_IF_ERROR(CheckPsTransport("--ps-transport", value));
                    *out = std::string(value);
                    return absl::OkStatus();
                  });
}

FlagSpec PsPlaintextFlag(bool* out) {
  return SwitchFlag(
      "ps-plaintext",
      "the parameter-server connections in plaintext while the rest keeps "
      "--tls-dir's mutual TLS (job tokens still authenticate); give every "
      "gradsync-ps and gradsync-worker of the cluster the same",
      out);
}

bool TuneMallocForTensorTraffic() {
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1;
  return mmap_ok && trim_ok;
}

}  // namespace gradsync
