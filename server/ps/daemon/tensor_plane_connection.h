// TensorPlaneConnection: one client connection of a TensorPlaneServer
// (tensor_plane_server.h): its reader thread takes the requests, its
// writer thread answers them, in order. Internal to the server.
//
// Authentication: a new connection is unauthenticated, with its reader
// thread only, until its handshake (tensor_plane_handshake.h) proves the
// job's PS token (PsService::JobToken); only then does its writer start,
// and from then on it serves that job's shards only. The whole handshake
// must end within `handshake_timeout`. One that fails gets its error reply
// from the reader at once (500 ms at most) and is closed, with no drain: a
// flood of garbage holds no thread for long.
//
// Link probes: an authenticated connection may carry probe requests
// instead of pushes (tensor_plane_probe.h, for `gradsync links probe`);
// the reader serves each whole, echoing or streaming on the socket itself,
// while the writer has nothing to send.
//
// Threading: the threads are its own; done(), authenticated(), Stop() and
// the destructor may be called from any thread. The destructor stops the
// threads (a bounded time: every wait is sliced) and closes the socket.
#ifndef GRADSYNC_SERVER_PS_DAEMON_TENSOR_PLANE_CONNECTION_H_
#define GRADSYNC_SERVER_PS_DAEMON_TENSOR_PLANE_CONNECTION_H_

#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collectives/transports/tcp/socket.h"
#include "proto/ps.pb.h"
#include "server/ps/daemon/ps_service.h"
#include "server/ps/shard/ps_shard.h"

namespace gradsync {

class TensorPlaneConnection {
 public:
  TensorPlaneConnection(PsService* service, Socket socket,
                        absl::Duration idle_timeout,
                        absl::Duration handshake_timeout);
  TensorPlaneConnection(const TensorPlaneConnection&) = delete;
  TensorPlaneConnection& operator=(const TensorPlaneConnection&) = delete;
  ~TensorPlaneConnection();

  // Its threads ended (the client went away, or an error ended it).
  bool done() const {
    return threads_done_.load() == (writer_started_.load() ? 2 : 1);
  }
  // Its handshake proved the job's token.
  bool authenticated() const { return authenticated_.load(); }
  // Ends the connection without waiting (the server evicting it); the
  // threads end within a socket slice.
  void Stop();
  bool stopped() const { return stopping_.load(); }

 private:
  // A reply the writer owes, in request order: the parameters of
  // `pull_step` of `shard` for `rank`, or `error`.
  struct Reply {
    std::shared_ptr<PsShard> shard;
    int rank = 0;
    int64_t step = 0;  // the request's, for errors
    int64_t pull_step = 0;
    absl::Status error;
  };

  void ReadLoop();
  void WriteLoop();
  // The handshake, by the reader: OK once the client proved the token of
  // the job it named, which job_ then holds; else the error (sent to the
  // client where there is one to tell).
  [[nodiscard]] absl::Status Handshake();
  // One request whose head has been read: OK once its reply is queued.
  [[nodiscard]] absl::Status TakeRequest(uint32_t header_bytes);
  // One link probe request (tensor_plane_probe.h) whose first
  // kRequestHeadBytes are at `start`: OK once it was served.
  [[nodiscard]] absl::Status ServeProbe(const char* start);
  // The gradient (and trailer) of `push`, as the request sends them, in
  // elements of the shard's `wire_dtype` (fp32, or 16-bit).
  [[nodiscard]] absl::Status ReceiveGradient(const ps::PushHeader& header,
                                             DataType wire_dtype,
                                             PsShard::Push* push,
                                             absl::Time deadline);
  // Sends the parameters `reply` asks for, or its error.
  [[nodiscard]] absl::Status SendReply(const Reply& reply);
  [[nodiscard]] absl::Status SendError(const absl::Status& error);
  // Reads and drops what the client still sends, until it closes or a
  // few seconds pass: an error reply must reach it before the close.
  void Drain();
  void Enqueue(Reply reply);
  // Why a wait must stop: the server is closing, or the client is gone.
  [[nodiscard]] absl::Status Alive() const;

  // Starts the writer thread (the reader, once authenticated or to send
  // a late error).
  void StartWriter();

  PsService* const service_;
  Socket socket_;
  const absl::Duration idle_timeout_;
  const absl::Duration handshake_timeout_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> authenticated_{false};
  std::atomic<bool> writer_started_{false};
  std::atomic<int> threads_done_{0};
  // The job the handshake proved: written by the reader before the writer
  // starts, then read by the reader only.
  std::string job_;
  // What the connection carried, by the reader: probes or pushes, never
  // both (tensor_plane_probe.h).
  bool probed_ = false;
  bool pushed_ = false;

  absl::Mutex mu_;
  std::deque<Reply> replies_ ABSL_GUARDED_BY(mu_);
  bool reader_done_ ABSL_GUARDED_BY(mu_) = false;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;  // an error reply went out

  std::thread reader_;
  std::thread writer_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_DAEMON_TENSOR_PLANE_CONNECTION_H_
