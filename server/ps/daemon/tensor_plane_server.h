// TensorPlaneServer: the server end of the PS tensor plane
// (tensor_plane_wire.h) over one process's shards (PsService). It listens
// on a port of its own; per connection, a reader thread takes the
// requests in order (BeginPush, the gradient received straight into the
// shard's staging buffer, Commit) and a writer thread answers them in the
// same order (Pull, then the parameters sent from the shard's own memory).
// So a client's next partition comes in while the previous one's
// parameters go out, as on the gRPC PushPull streams, without gRPC's
// per-message work.
//
// Security: plaintext, like the ring's data, and authenticated the way the
// ring is: each connection's handshake proves its job's PS token with an
// HMAC over both ends' nonces (tensor_plane_handshake.h), and the
// connection then serves that job only. So gradsync-ps serves it beside
// TLS too (docs/security.md, "What travels encrypted").
//
// Waits: a request's waits end at its shard's max_wait; a connection idle
// for options.idle_timeout is closed; the destructor closes every
// connection and joins every thread within about a socket slice.
//
// Unauthenticated connections (trust finding 4: 1,100 idle connections
// that never sent a byte filled the 1,024 slots, two threads each, for 30
// minutes): a connection is authenticated once its handshake proved its
// job's token. Until then it holds one thread, must end the handshake
// within options.handshake_timeout, and counts against
// options.max_unauthenticated only: one more evicts the oldest of them.
// options.max_connections bounds the authenticated ones; a connection
// accepted while they are all taken is answered RESOURCE_EXHAUSTED.
// Errors: each failed request is answered with an error reply that names
// the rank and step, and ends the connection (the client reconnects); its
// push is abandoned, so its shard is unchanged.
//
// Threading: thread-safe; the threads are the server's own.
#ifndef GRADSYNC_SERVER_PS_DAEMON_TENSOR_PLANE_SERVER_H_
#define GRADSYNC_SERVER_PS_DAEMON_TENSOR_PLANE_SERVER_H_

#include <atomic>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collectives/transports/tcp/socket.h"
#include "server/ps/daemon/ps_service.h"

namespace gradsync {

class TensorPlaneConnection;

class TensorPlaneServer {
 public:
  struct Options {
    std::string host = "0.0.0.0";  // the address to bind
    int port = 0;                  // 0: a free port
    // TCP congestion control of the connections (common/tcp_congestion.h).
    std::string congestion_control = "auto";
    absl::Duration idle_timeout = absl::Minutes(30);
    // Connections open at once (each holds two threads); one more is
    // answered RESOURCE_EXHAUSTED and closed. A job's ranks need one per
    // server each (per shard when a server's shards are not partitions).
    int max_connections = 1024;
    // The first request's deadline, and how many connections may wait
    // for theirs at once (see above).
    absl::Duration handshake_timeout = absl::Seconds(5);
    int max_unauthenticated = 64;
  };

  // Listens and starts accepting. `service` must outlive the server.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TensorPlaneServer>> Start(
      PsService* service, const Options& options);

  TensorPlaneServer(const TensorPlaneServer&) = delete;
  TensorPlaneServer& operator=(const TensorPlaneServer&) = delete;
  ~TensorPlaneServer();

  int port() const { return port_; }
  // Connections open now, and of those, the authenticated ones.
  int connections() const;
  int authenticated_connections() const;

 private:
  TensorPlaneServer(PsService* service, const Options& options, Socket listener,
                    int port);
  void AcceptLoop();
  // Tells a connection over max_connections why it is closed.
  void RefuseFull(Socket& socket) const;
  // Joins and drops the connections that ended.
  void ReapLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  PsService* const service_;
  const Options options_;
  Socket listener_;
  const int port_;
  std::atomic<bool> stopping_{false};

  mutable absl::Mutex mu_;
  std::list<std::unique_ptr<TensorPlaneConnection>> connections_
      ABSL_GUARDED_BY(mu_);
  std::thread acceptor_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_DAEMON_TENSOR_PLANE_SERVER_H_
