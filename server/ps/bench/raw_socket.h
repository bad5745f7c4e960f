// Blocking loopback sockets for the bench's raw-TCP yardsticks
// (tcp_baseline.h, tcp_pipelined.h): listen, connect, and send or receive
// exactly n bytes. Every socket gets SO_RCVTIMEO/SO_SNDTIMEO of the
// caller's timeout and TCP_NODELAY, so no call blocks forever.
//
// Errors: UNAVAILABLE naming the failed call and errno's text, or the
// peer closing. Thread-safe (plain syscalls).
#ifndef GRADSYNC_SERVER_PS_BENCH_RAW_SOCKET_H_
#define GRADSYNC_SERVER_PS_BENCH_RAW_SOCKET_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace gradsync {

// The header of a raw push: the step and the gradient's byte count.
struct RawPushHeader {
  int64_t step;
  uint64_t bytes;
};

// A listening socket on 127.0.0.1 with a kernel-chosen port.
struct RawListener {
  int fd = -1;
  int port = 0;
};
[[nodiscard]] absl::StatusOr<RawListener> ListenOnLoopback();

// accept4 on `listen_fd` (EINTR retried); -1 once the listener is shut
// down. The socket gets `timeout` and, unless empty, the congestion
// control `congestion_name`.
int AcceptRaw(int listen_fd, absl::Duration timeout,
              const std::string& congestion_name);

// A socket connected to 127.0.0.1:port under congestion control policy
// `congestion` (common/tcp_congestion.h), set before connect as gRPC's
// socket mutator does; then sends the int32 `rank`.
[[nodiscard]] absl::StatusOr<int> ConnectRaw(int port, int rank,
                                             absl::Duration timeout,
                                             const std::string& congestion);

[[nodiscard]] absl::Status SendAll(int fd, const void* data, size_t n);
[[nodiscard]] absl::Status RecvAll(int fd, void* data, size_t n);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_BENCH_RAW_SOCKET_H_
