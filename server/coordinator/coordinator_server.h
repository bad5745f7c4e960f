// CoordinatorServer: the coordinator served over gRPC. It owns the logic
// (CoordinatorService, with its lease-check thread running), the RPC
// adapter (CoordinatorRpc) and the gRPC server; `gradsync-coordinator`
// runs one, and tests start one on port 0.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<CoordinatorServer> server,
//                    CoordinatorServer::Start("127.0.0.1:0", config));
//   ... clients connect to server->address() ...
//   server->Shutdown();  // or let it go out of scope
//
// Threads: a sync gRPC server. Each waiting call (heartbeat long-poll,
// store get/wait, barrier, job watch) holds one server thread; the server
// adds threads as calls arrive, so up to CoordinatorServerOptions::
// max_threads calls can wait while others still get a thread. Past that
// bound new calls fail at once with RESOURCE_EXHAUSTED. One more thread
// accepts the connections and hands them to gRPC, reporting those it
// turns away before any call (security/grpc_listener.h).
//
// Errors (Start): INVALID_ARGUMENT for an address that is not host:port or
// a bad config; UNAVAILABLE if the address cannot be bound.
//
// Thread-safe. Shutdown may be called from any thread, more than once.
#ifndef GRADSYNC_SERVER_COORDINATOR_COORDINATOR_SERVER_H_
#define GRADSYNC_SERVER_COORDINATOR_COORDINATOR_SERVER_H_

#include <grpcpp/server.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "observability/metrics_http.h"
#include "observability/prometheus.h"
#include "security/grpc_listener.h"
#include "security/tls.h"
#include "server/coordinator/coordinator_config.h"
#include "server/coordinator/coordinator_rpc.h"
#include "server/coordinator/coordinator_service.h"

namespace gradsync {

struct CoordinatorServerOptions {
  // Most server threads at once, pollers included; it bounds how many calls
  // can wait at the same time (about 2 per worker plus one per rank in a
  // store wait or barrier, plus one per watching CLI).
  int max_threads = 4096;
  // Mutual TLS or plaintext (security/tls.h); default plaintext.
  GrpcSecurity security;
  // Where to serve Prometheus metrics (observability/metrics_http.h; the
  // daemon's --metrics-listen); empty: nowhere.
  std::string metrics_listen;
  // Where the connections it turns away before any call are reported (the
  // peer, the likely cause, what to do; security/grpc_listener.h), and the
  // process's GrpcLogTap, without which a TLS handshake that fails inside
  // gRPC is not named. Default: stderr, no tap.
  HandshakeReporting handshakes;
  // Where daemons and users reach the coordinator: HOST or HOST:PORT (the
  // daemon's --advertise). Empty: the listen address, a wildcard host made
  // the default route's interface (CoordinatorAdvertisedAddress).
  std::string advertise;
};

class CoordinatorServer {
 public:
  // Binds `listen_address` ("host:port"; port 0 picks a free one; the port
  // is bound exclusively) and starts serving and checking leases.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<CoordinatorServer>> Start(
      const std::string& listen_address, CoordinatorConfig config,
      const CoordinatorServerOptions& options = CoordinatorServerOptions());

  CoordinatorServer(const CoordinatorServer&) = delete;
  CoordinatorServer& operator=(const CoordinatorServer&) = delete;
  ~CoordinatorServer();

  int port() const { return port_; }
  // The host of the listen address and port().
  std::string address() const;

  // The /metrics endpoint's "host:port"; empty when it serves none.
  std::string metrics_address() const;
  // Where the cluster reaches it (options.advertise, or the default).
  const std::string& advertised_address() const { return advertised_; }
  // The series it serves (coordinator_metrics.h and gradsync_build_info).
  const MetricsRegistry& metrics() const { return metrics_; }

  // The logic behind the server, for in-process callers and tests.
  CoordinatorService* service() { return service_.get(); }

  // Makes waiting calls return UNAVAILABLE, stops accepting calls and
  // returns once every handler has returned. Later calls return at once.
  void Shutdown();

 private:
  CoordinatorServer(std::string host,
                    std::unique_ptr<CoordinatorService> service);

  const std::string host_;
  int port_ = 0;
  std::string advertised_;

  // Declared in dependency order: the gRPC server goes first on
  // destruction (after the listener that hands it connections), then the
  // adapter it calls, then the logic.
  std::unique_ptr<CoordinatorService> service_;
  CoordinatorRpc rpc_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<GrpcListener> listener_;
  // After the service (its collector reads it), stopped first.
  MetricsRegistry metrics_;
  std::unique_ptr<MetricsHttpServer> metrics_http_;

  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_COORDINATOR_SERVER_H_
