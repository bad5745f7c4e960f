// The raw-TCP yardstick of gradsync-ps-bench: the same PsShard as the gRPC
// parameter server, reached over one plain TCP socket per rank instead of
// gRPC streams. A push is a 16-byte header (step, byte count) and the
// gradient bytes, received straight into the shard's staging buffer; the
// reply is the parameter bytes, sent straight from the shard. No chunking,
// framing or copies: the fastest a push/pull of these bytes can be on
// this host, for the bench to compare the gRPC path against.
//
// Not a product transport: it trusts its peer (sizes are checked, nothing
// else) and lives only in the bench.
//
// Errors: UNAVAILABLE when a socket fails or the peer goes away, naming the
// step; the shard's own errors (ps_shard.h). Sockets time out after
// `timeout` of silence, so nothing waits forever.
// Threading: the server serves each connection on its own thread; a client
// is used by one thread.
#ifndef GRADSYNC_SERVER_PS_BENCH_TCP_BASELINE_H_
#define GRADSYNC_SERVER_PS_BENCH_TCP_BASELINE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "server/ps/shard/ps_shard.h"

namespace gradsync {

class TcpShardServer {
 public:
  // Serves `shard` on 127.0.0.1, port chosen by the kernel. Accepted
  // connections run the TCP congestion control that policy `congestion`
  // gives a local peer (common/tcp_congestion.h), as the gRPC path's do.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TcpShardServer>> Start(
      std::shared_ptr<PsShard> shard, absl::Duration timeout,
      const std::string& congestion = "auto");

  TcpShardServer(const TcpShardServer&) = delete;
  TcpShardServer& operator=(const TcpShardServer&) = delete;
  // Closes every socket and joins the threads.
  ~TcpShardServer();

  int port() const { return port_; }

 private:
  TcpShardServer(std::shared_ptr<PsShard> shard, int listen_fd, int port,
                 absl::Duration timeout, std::string congestion_name);
  void AcceptLoop();
  void Serve(int fd);

  const std::shared_ptr<PsShard> shard_;
  const int listen_fd_;
  const int port_;
  const absl::Duration timeout_;
  const std::string congestion_name_;  // "" keeps the system's default
  std::thread acceptor_;
  absl::Mutex mu_;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<int> fds_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> servers_ ABSL_GUARDED_BY(mu_);
};

class TcpShardClient {
 public:
  // Connects to a TcpShardServer on 127.0.0.1 as `rank`, under the same
  // congestion control policy.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TcpShardClient>> Connect(
      int port, int rank, absl::Duration timeout,
      const std::string& congestion = "auto");

  TcpShardClient(const TcpShardClient&) = delete;
  TcpShardClient& operator=(const TcpShardClient&) = delete;
  ~TcpShardClient();

  // Sends `grads` for `step` and receives the parameters into `params`
  // (both the shard's size).
  [[nodiscard]] absl::Status PushPull(int64_t step,
                                      absl::Span<const float> grads,
                                      absl::Span<float> params);

 private:
  explicit TcpShardClient(int fd) : fd_(fd) {}
  const int fd_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_BENCH_TCP_BASELINE_H_
