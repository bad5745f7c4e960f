// Socket: a move-only owner of a TCP socket, with the blocking I/O the TCP
// backend needs: every call has a deadline and notices an abort flag, so a
// dead or silent peer can never block a rank forever.
//
// Sockets are blocking with short kernel timeouts (SO_RCVTIMEO/SO_SNDTIMEO
// slices) so that loops can re-check the deadline and the abort flag;
// Shutdown() from another thread wakes a blocked call at once.
//
// Errors: DEADLINE_EXCEEDED (deadline passed), UNAVAILABLE (connection
// refused, closed or reset by the peer), ABORTED (the abort flag was set),
// INTERNAL (other socket errors, with errno text).
#ifndef GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_SOCKET_H_
#define GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_SOCKET_H_

#include <atomic>
#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace gradsync {

// Splits "host:port" into its parts (INVALID_ARGUMENT if malformed).
[[nodiscard]] absl::Status SplitHostPort(const std::string& address,
                                         std::string* host, int* port);

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { Close(); }
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  // A listening socket bound to host:port (port 0 picks a free one).
  [[nodiscard]] static absl::StatusOr<Socket> Listen(const std::string& host,
                                                     int port);
  // Connects to host:port, retrying refused connections (the peer may not
  // listen yet) until `deadline`, or CANCELLED once `*cancelled` is true.
  [[nodiscard]] static absl::StatusOr<Socket> Connect(
      const std::string& host, int port, absl::Time deadline,
      const std::atomic<bool>* cancelled = nullptr);

  // Accepts one connection (listening sockets only).
  [[nodiscard]] absl::StatusOr<Socket> Accept(absl::Time deadline);

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  [[nodiscard]] absl::StatusOr<int> LocalPort() const;
  // "ip:port" of the peer, or "?" if unknown.
  std::string PeerAddress() const;

  // TCP_NODELAY, kernel send and receive buffer sizes (0 = keep the
  // default) and the timeout slice after which blocked calls re-check
  // deadline and abort flag. Call before any data moves: TCP offers its
  // peer a window from the receive buffer's size.
  [[nodiscard]] absl::Status Configure(int send_buffer_bytes,
                                       int receive_buffer_bytes,
                                       absl::Duration slice);
  // True when the peer of this connected socket is on this host: its
  // address is a loopback address or our own. Such connections run
  // through the kernel's loopback device, not a network.
  bool PeerIsLocal() const;
  // Sets the TCP congestion control algorithm (TCP_CONGESTION), e.g.
  // "reno". INVALID_ARGUMENT for a name longer than
  // kMaxCongestionControlName (common/tcp_congestion.h);
  // FAILED_PRECONDITION if the kernel refuses it: not built, or not in
  // net.ipv4.tcp_allowed_congestion_control for this process.
  [[nodiscard]] absl::Status SetCongestionControl(
      const std::string& name) const;
  // The algorithm in use ("bbr", "cubic", ...).
  [[nodiscard]] absl::StatusOr<std::string> CongestionControl() const;
  // Sets SO_SNDBUF (the kernel doubles it for overhead). Safe at any time,
  // also while another thread sends: a smaller buffer only makes later
  // sends wait sooner. (The receive buffer has no such method: shrinking
  // it under a window already offered makes the kernel drop data.)
  [[nodiscard]] absl::Status SetSendBuffer(int bytes) const;

  // Sends / receives exactly `len` bytes. `spin_polls` non-blocking tries
  // (with sched_yield) precede blocking, for low latency on small messages.
  [[nodiscard]] absl::Status SendAll(const void* data, size_t len,
                                     absl::Time deadline,
                                     const std::atomic<bool>* aborted) const;
  [[nodiscard]] absl::Status RecvAll(void* data, size_t len,
                                     absl::Time deadline,
                                     const std::atomic<bool>* aborted,
                                     int spin_polls = 0) const;
  // Sends what the kernel takes without blocking; returns the byte count.
  [[nodiscard]] absl::StatusOr<size_t> SendNonBlocking(const void* data,
                                                       size_t len) const;

  // Wakes any blocked call; later calls fail. Safe from any thread.
  void Shutdown() const;
  void Close();
  // Gives up ownership: returns the descriptor (-1 if none) and leaves
  // this socket invalid; the caller closes it.
  int Release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_TRANSPORTS_TCP_SOCKET_H_
