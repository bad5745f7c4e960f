// PsServer: a parameter server on gRPC. It owns the shards (a PsService),
// the RPC adapter (ps_rpc.h) and the gRPC server with the PS transport
// settings (ps_transport.h); `gradsync-ps` runs one, and tests and the
// bench embed one.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<PsServer> server,
//                    PsServer::Start("127.0.0.1:0"));   // any free port
//   ... PsClient / PsAdminClient on server->address() elsewhere ...
//   server->Shutdown();  // or let it go out of scope
//
// Threads: PushPull, the step's stream, runs on gRPC's callback API: its
// messages are handled on gRPC's polling threads, and only while its shard
// waits (for the last worker, the staleness bound) does it hold a thread
// of the adapter's BlockingExecutor, which grows as needed. The other
// calls are sync-API handlers: each open SeedShard or FetchState stream
// holds one server thread, so max_threads bounds those open at once (a
// few per switch); calls beyond it fail at once with RESOURCE_EXHAUSTED.
// One more thread accepts the connections and hands them to gRPC
// (security/grpc_listener.h).
//
// Errors (Start): INVALID_ARGUMENT for an address that is not host:port or
// too few threads; UNAVAILABLE if the address cannot be bound.
//
// Thread-safe. Shutdown may be called from any thread, more than once.
#ifndef GRADSYNC_SERVER_PS_DAEMON_PS_SERVER_H_
#define GRADSYNC_SERVER_PS_DAEMON_PS_SERVER_H_

#include <grpcpp/server.h>

#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "observability/metrics_http.h"
#include "observability/prometheus.h"
#include "security/grpc_listener.h"
#include "server/ps/daemon/ps_rpc.h"
#include "server/ps/daemon/ps_service.h"
#include "server/ps/daemon/tensor_plane_server.h"
#include "server/ps/transport/ps_transport.h"

namespace gradsync {

struct PsServerOptions {
  // Most server threads at once, pollers included (see "Threads" above).
  int max_threads = 4096;
  PsTransportOptions transport;
  // Threads that sum a synchronous step's gradients and apply the
  // optimizer, the applying one included; 0: one per core.
  int compute_threads = 0;
  // Every call for a job's shards must carry the job's token from the
  // first call on (PsService::RequireTokens): a server that registers with
  // a coordinator. False: open (the benches' in-process servers).
  bool require_tokens = false;
  // Called once the server listens, with the bound "host:port" (for
  // example to register it with a coordinator). An error stops Start,
  // which returns it.
  std::function<absl::Status(const std::string& address)> on_serving;
  // Where to serve Prometheus metrics (observability/metrics_http.h,
  // ps_metrics.h; the daemon's --metrics-listen); empty: nowhere.
  std::string metrics_listen;
  // Also serve the step's tensors over the tensor plane
  // (tensor_plane_server.h: plain TCP after an HMAC handshake that proves
  // the job's token, beside TLS too) on this port of the listen host: -1
  // no, 0 any free port.
  int tensor_port = -1;
  // Where the connections its gRPC port turns away before any call are
  // reported (the peer, the likely cause, what to do;
  // security/grpc_listener.h), and the process's GrpcLogTap, without which
  // a TLS handshake that fails inside gRPC is not named. Default: stderr,
  // no tap.
  HandshakeReporting handshakes;
};

class PsServer {
 public:
  // Binds `listen_address` ("host:port"; port 0 picks a free one) and
  // starts serving. The port is bound exclusively (no SO_REUSEPORT). A TCP
  // congestion control the kernel refuses (options.transport) fails here
  // (CheckCongestionControl).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<PsServer>> Start(
      const std::string& listen_address,
      const PsServerOptions& options = PsServerOptions());

  PsServer(const PsServer&) = delete;
  PsServer& operator=(const PsServer&) = delete;
  // Shuts down (see Shutdown).
  ~PsServer();

  int port() const { return port_; }
  // "host:port" actually bound: the listen host and port().
  std::string address() const;
  // The /metrics endpoint's "host:port"; empty when it serves none.
  std::string metrics_address() const;
  // The series it serves (ps_metrics.h and gradsync_build_info).
  const MetricsRegistry& metrics() const { return metrics_; }
  // The shards, for in-process users (tests, the bench).
  PsService* service() { return &service_; }
  // The tensor plane's port; 0 when it serves none.
  int tensor_port() const {
    return tensor_plane_ == nullptr ? 0 : tensor_plane_->port();
  }

  // Releases every shard (waiting calls return ABORTED or UNAVAILABLE),
  // stops accepting calls and returns once every handler has returned.
  void Shutdown();

 private:
  PsServer(std::string host, int compute_threads);

  const std::string host_;
  int port_ = 0;

  // Dependency order: the gRPC server goes first on destruction (after the
  // listener that hands it connections), then the adapter it calls, then
  // the shards it uses.
  PsService service_;
  PsRpc rpc_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<GrpcListener> listener_;
  std::unique_ptr<TensorPlaneServer> tensor_plane_;
  // After the shards (its collector reads them), stopped first.
  MetricsRegistry metrics_;
  std::unique_ptr<MetricsHttpServer> metrics_http_;

  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_DAEMON_PS_SERVER_H_
