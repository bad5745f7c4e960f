// GrpcListener: a gRPC server's port, accepted by gradsync instead of by
// gRPC, so that the server can say who it turned away and why. gRPC 1.51
// logs a failed TLS handshake as "Handshake failed with fatal error ..."
// without the peer; this listener accepts each connection itself (so it
// knows the peer's address), looks at the first bytes the client sends,
// and hands the connection to the server through gRPC's external
// connection acceptor (ServerBuilder::experimental().
// AddExternalConnectionAcceptor), which then serves it as if gRPC had
// accepted it (same credentials, same peer string for the calls).
//
// What it sees, at a TLS port:
//   - an HTTP/2 preface ("PRI * HTTP/2.0"): a plaintext gRPC client. It
//     says so, naming the peer and what to do, and closes the connection.
//   - other bytes that are no TLS record: the same, quoting what came.
//   - a TLS ClientHello: handed over to gRPC. When gRPC's handshake then
//     fails (a certificate of another CA, none at all), gRPC logs its line
//     and closes the socket right after, on the same thread. With a
//     GrpcLogTap (grpc_log_tap.h), the listener keeps a duplicate of each
//     new connection's descriptor for its first seconds and pairs each
//     line with the connection gRPC closed just after it: the peer, the
//     cause in OpenSSL's words, and what to do. When connections from
//     several hosts closed within the same half second, the line names
//     them all ("one of ...") rather than guess.
//   - a TLS client that hangs up having sent nothing but its ClientHello
//     (the kernel's count of bytes received says so): it refused this
//     server's certificate, as a gRPC client does without a word when it
//     trusts another cluster's CA.
// At a plaintext port, a TLS ClientHello is said and closed; everything
// else goes to gRPC untouched.
//
// Limits, by design: at most one line per peer host per period, and a
// count of those held back (with the host's next line, or on its own when
// the period ends). A client that gives up on its own right after its
// ClientHello (a very short deadline) reads as one that refused the
// certificate; the line says "likely". A connection that sends nothing is
// closed after kFirstBytesTimeout, silently (probes and scanners do that).
//
// Bounded: at most kMaxUnread connections wait for their first bytes and
// kMaxWatched are watched; past either, new connections go to gRPC
// straight away, unreported. Nothing it holds outlives kFirstBytesTimeout
// or kWatchTime.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<GrpcListener> listener,
//                    GrpcListener::Bind("0.0.0.0:29400", options));
//   listener->AddTo(builder, MakeServerCredentials(security));
//   server = builder.BuildAndStart();
//   RETURN_IF_ERROR(listener->Start());
//   ... listener->Shutdown(); server->Shutdown(); ...
//
// Errors: Bind, UNAVAILABLE with the OS's reason when the port cannot be
// bound; Start, INTERNAL when epoll or its thread cannot be had.
// Threading: one thread of its own from Start to Shutdown; the methods are
// for the owner's thread. Shutdown is idempotent; the destructor calls it.
#ifndef GRADSYNC_SECURITY_GRPC_LISTENER_H_
#define GRADSYNC_SECURITY_GRPC_LISTENER_H_

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/listen_sockets.h"
#include "common/unique_fd.h"
#include "security/grpc_log_tap.h"
#include "security/handshake_report.h"

namespace gradsync {

// How a daemon's gRPC port reports the connections it turns away.
struct HandshakeReporting {
  // Where the lines go, one at a time without the newline. Empty: stderr.
  std::function<void(absl::string_view)> log;
  // gRPC's handshake-failure lines; null: only clients that speak no TLS
  // (or TLS at a plaintext port) are reported.
  GrpcLogTap* tap = nullptr;
  // At most one line per peer host per period.
  absl::Duration period = absl::Minutes(1);
};

struct GrpcListenerOptions {
  // The server in lines: "this coordinator serves mutual TLS only".
  std::string server = "server";
  // Whether the server's credentials are TLS (MakeServerCredentials).
  bool tls = false;
  HandshakeReporting reporting;
  // Called with each accepted connection before anything else: what a
  // gRPC socket mutator did for connections gRPC accepted (gRPC applies
  // none to those handed to it). May be empty.
  std::function<void(int fd)> on_accept;
};

class GrpcListener {
 public:
  // A connection that sends nothing for this long is closed.
  static constexpr absl::Duration kFirstBytesTimeout = absl::Seconds(10);
  // How long a handed-over TLS connection is watched for gRPC closing it.
  static constexpr absl::Duration kWatchTime = absl::Seconds(10);
  // A handshake line pairs with connections closed this long after it...
  static constexpr absl::Duration kPairAfter = absl::Milliseconds(500);
  // ... or this long before (a peer's reset can beat gRPC's close).
  static constexpr absl::Duration kPairBefore = absl::Milliseconds(50);
  static constexpr int kMaxUnread = 128;
  static constexpr int kMaxWatched = 128;

  // Binds `listen_address` ("host:port", checked by the caller; port 0
  // picks one) and listens. Connections wait in the backlog until Start.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<GrpcListener>> Bind(
      const std::string& listen_address, GrpcListenerOptions options);

  GrpcListener(const GrpcListener&) = delete;
  GrpcListener& operator=(const GrpcListener&) = delete;
  ~GrpcListener();

  int port() const { return port_; }

  // Makes the server `builder` builds take this port's connections with
  // `credentials`. Once, before BuildAndStart.
  void AddTo(grpc::ServerBuilder& builder,
             std::shared_ptr<grpc::ServerCredentials> credentials);

  // Starts accepting; after BuildAndStart succeeded.
  [[nodiscard]] absl::Status Start();

  // Stops accepting and closes what it still holds (not the connections
  // handed to gRPC: the server's own Shutdown ends those).
  void Shutdown();

 private:
  // A connection waiting for its first bytes.
  struct Unread {
    UniqueFd fd;
    std::string peer, host;
    absl::Time deadline;
  };
  // A duplicate of a handed-over TLS connection's descriptor.
  struct Watched {
    UniqueFd dup;
    std::string peer, host;
    absl::Time deadline;
    uint64_t hello_bytes = 0;  // its first TLS record's size, 0: unknown
  };
  // A watched connection that gRPC (or the peer) closed.
  struct Closed {
    std::string peer, host;
    absl::Time at;
    // The peer had sent nothing but its ClientHello: it hung up on this
    // server's certificate, unless gRPC refused the hello itself (a line).
    bool hello_only = false;
    bool claimed = false;  // reported, or paired with a line
  };

  GrpcListener(GrpcListenerOptions options, ListenSockets sockets);

  void Loop();
  void Accept(int listen_fd, absl::Time now);
  void Classify(int fd, absl::Time now);
  void HandOver(UniqueFd fd, const std::string& peer, const std::string& host,
                bool watch, uint64_t hello_bytes, absl::Time now);
  void OnWatched(int fd, uint32_t events, absl::Time now);
  void TakeLines();
  void PairLines(absl::Time now);
  void ReportHangUps(absl::Time now);
  void Expire(absl::Time now);
  void Report(const RefusalReport& report, absl::Time now);
  void Say(const std::string& line) const;
  void PauseAccepting(absl::Time now);
  absl::Time NextDeadline() const;

  const GrpcListenerOptions options_;
  std::vector<UniqueFd> listen_fds_;
  const int port_;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;
  UniqueFd epoll_;
  UniqueFd wake_;  // an eventfd: Shutdown and the tap's new lines
  std::unique_ptr<GrpcLogTap::Subscription> lines_in_;
  std::thread thread_;
  std::atomic<bool> stop_{false};

  // The loop's alone (Start to Shutdown; the owner's before and after).
  absl::flat_hash_map<int, Unread> unread_;
  absl::flat_hash_map<int, Watched> watched_;
  std::deque<Closed> closed_;
  std::deque<GrpcLogTap::HandshakeLine> lines_;
  ReportLimiter limiter_;
  absl::Time accept_paused_until_ = absl::InfinitePast();
};

}  // namespace gradsync

#endif  // GRADSYNC_SECURITY_GRPC_LISTENER_H_
