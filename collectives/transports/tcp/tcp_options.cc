#include "collectives/transports/tcp/tcp_options.h"

#include <algorithm>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

absl::StatusOr<Transport> ParseTransport(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "auto") return Transport::kAuto;
  if (n == "tcp") return Transport::kTcp;
  if (n == "shm") return Transport::kShm;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown transport '", name, "'; use auto, tcp or shm"));
}

absl::string_view TransportName(Transport transport) {
  switch (transport) {
    case Transport::kAuto:
      return "auto";
    case Transport::kTcp:
      return "tcp";
    case Transport::kShm:
      return "shm";
  }
  return "unknown";
}

int SendBufferBytesFor(const TcpOptions& options, size_t message_bytes) {
  if (options.socket_buffer_bytes <= 0 ||
      options.small_socket_buffer_bytes <= 0) {
    return options.socket_buffer_bytes;
  }
  if (message_bytes <= static_cast<size_t>(options.socket_buffer_bytes)) {
    return 0;  // fits either way: barriers and scalars switch nothing
  }
  return message_bytes <= options.spin_max_bytes
             ? options.small_socket_buffer_bytes
             : options.socket_buffer_bytes;
}

int ReceiveBufferBytes(const TcpOptions& options) {
  if (options.socket_buffer_bytes <= 0) return options.socket_buffer_bytes;
  return std::max(options.socket_buffer_bytes,
                  options.small_socket_buffer_bytes);
}

}  // namespace gradsync
