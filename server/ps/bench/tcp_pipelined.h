// The pipelined raw-TCP yardstick of gradsync-ps-bench: what a synchronous
// push/pull server that streams its answer back can do on this host, with
// no gRPC, no framing and no shard objects in the way.
//
// One socket per rank, two threads per socket: a receiver that reads the
// rank's gradient chunk by chunk (chunk_bytes) into that rank's staging
// buffer, and a sender that streams the parameters back. When the last
// rank's chunk c is in, the receiver that brought it sums chunk c over the
// ranks in rank order, averages, and applies SGD (lr 1) to those
// parameters while the sums are in L1 (ReduceInBlocks + StepRange, the
// shard's own fused update); every sender then sends chunk c at once. So
// the pull of chunk c overlaps the push of chunk c + 1, and the sums of
// different chunks run on different threads: the work of the gRPC PS's
// synchronous step (the same results, bitwise), pipelined as finely as
// the chunk size.
//
// A round on the wire: the client sends {step, bytes} and its gradient,
// and reads bytes of parameters back while it still sends.
//
// Not a product transport: it trusts its peers (the header's size is
// checked, nothing else), serves one job of num_ranks ranks on loopback,
// and lives only in the bench.
//
// Errors: UNAVAILABLE when a socket fails, the peer goes away or the
// server is closing; INVALID_ARGUMENT for a push of the wrong size.
// Sockets and waits time out after `timeout`, so nothing waits forever.
// Threading: the server's threads are its own; a client is used by one
// thread at a time.
#ifndef GRADSYNC_SERVER_PS_BENCH_TCP_PIPELINED_H_
#define GRADSYNC_SERVER_PS_BENCH_TCP_PIPELINED_H_

#include <cstddef>
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
#include "common/optimizer.h"

namespace gradsync {

class PipelinedTcpServer {
 public:
  // Serves `elements` parameters (zeros) to `num_ranks` ranks on
  // 127.0.0.1, port chosen by the kernel, in chunks of `chunk_bytes`
  // (a multiple of 4). Connections run the congestion control policy
  // `congestion` gives a local peer (common/tcp_congestion.h).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<PipelinedTcpServer>>
  Start(size_t elements, int num_ranks, size_t chunk_bytes,
        absl::Duration timeout, const std::string& congestion = "auto");

  PipelinedTcpServer(const PipelinedTcpServer&) = delete;
  PipelinedTcpServer& operator=(const PipelinedTcpServer&) = delete;
  // Closes every socket and joins the threads.
  ~PipelinedTcpServer();

  int port() const { return port_; }
  // Mean milliseconds per round spent summing and updating (all chunks,
  // all threads), for the bench's summary.
  double ApplyMsPerRound() const;

 private:
  PipelinedTcpServer(size_t elements, int num_ranks, size_t chunk_elements,
                     Optimizer optimizer, int listen_fd, int port,
                     absl::Duration timeout, std::string congestion_name);
  size_t num_chunks() const;
  void AcceptLoop();
  void Receive(int rank, int fd);
  void Send(int rank, int fd);
  // Sums chunk c over the ranks and updates its parameters.
  void Reduce(size_t chunk);

  const size_t elements_;
  const int num_ranks_;
  const size_t chunk_elements_;
  const int listen_fd_;
  const int port_;
  const absl::Duration timeout_;
  const std::string congestion_name_;  // "" keeps the system's default
  // Written by Reduce of a chunk only (disjoint ranges; StepRange is safe
  // from several threads), read by the senders after done_ says so.
  std::vector<float> params_;
  Optimizer optimizer_;
  // Rank r's gradient of the current round; chunk c is written by rank
  // r's receiver, then read by the Reduce of chunk c.
  std::vector<std::vector<float>> stage_;
  std::thread acceptor_;

  mutable absl::Mutex mu_;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<int> fds_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  // Per chunk: ranks whose chunk of this round is in.
  std::vector<int> arrived_ ABSL_GUARDED_BY(mu_);
  // Per chunk: rounds whose parameters are ready.
  std::vector<int64_t> done_ ABSL_GUARDED_BY(mu_);
  // Per rank: rounds whose header arrived.
  std::vector<int64_t> started_ ABSL_GUARDED_BY(mu_);
  size_t reduced_this_round_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t rounds_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration apply_time_ ABSL_GUARDED_BY(mu_);
};

class PipelinedTcpClient {
 public:
  // Connects to a PipelinedTcpServer on 127.0.0.1 as `rank`.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<PipelinedTcpClient>>
  Connect(int port, int rank, absl::Duration timeout,
          const std::string& congestion = "auto");

  PipelinedTcpClient(const PipelinedTcpClient&) = delete;
  PipelinedTcpClient& operator=(const PipelinedTcpClient&) = delete;
  ~PipelinedTcpClient();

  // Sends `grads` for `step` while it receives the parameters into
  // `params` (both the server's size).
  [[nodiscard]] absl::Status PushPull(int64_t step,
                                      absl::Span<const float> grads,
                                      absl::Span<float> params);

 private:
  explicit PipelinedTcpClient(int fd) : fd_(fd) {}
  const int fd_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_BENCH_TCP_PIPELINED_H_
