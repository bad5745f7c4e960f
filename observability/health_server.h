// HealthServer: a daemon's probe port (--health-listen), a plaintext gRPC
// server with gRPC's standard health service (grpc.health.v1.Health) and
// server reflection, and nothing else: no gradsync service, no data.
//
// Why a port of its own: a daemon's main gRPC port requires mutual TLS
// under --tls-dir, and Kubernetes' `grpc:` probe (like most probes) speaks
// no TLS. The worker has no gRPC server at all otherwise. The probe port
// tells only whether the daemon is alive and ready, so it can stay
// plaintext, as an exporter's port does.
//
// It answers two services:
//   ""                SERVING while the daemon runs: the liveness probe.
//   kReadyService     SERVING while the daemon can do its work, as SetReady
//                     says: the coordinator once it serves; a parameter
//                     server or a worker while it is registered with the
//                     coordinator and its last call there succeeded. The
//                     readiness probe (NOT_SERVING until then).
// Both turn NOT_SERVING at Shutdown, before the port closes.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<HealthServer> health,
//                    HealthServer::Start("0.0.0.0:9401", "gradsync-worker"));
//   health->SetReady(true);
//   // grpc_health_probe -addr host:9401 -service gradsync.ready
//
// Errors (Start): INVALID_ARGUMENT for an address that is not host:port;
// UNAVAILABLE when it cannot be bound (naming the address and the flag).
// Threading: thread-safe; Shutdown is idempotent.
#ifndef GRADSYNC_OBSERVABILITY_HEALTH_SERVER_H_
#define GRADSYNC_OBSERVABILITY_HEALTH_SERVER_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/flags.h"

namespace grpc {
class CallbackGenericService;
class Server;
}  // namespace grpc

namespace gradsync {

// The health service name of readiness.
inline constexpr char kReadyService[] = "gradsync.ready";

// Turns on, for every gRPC server this process builds afterwards, gRPC's
// health checking service (grpc.health.v1.Health: SERVING once the server
// runs, as Kubernetes probes and grpc_health_probe expect) and server
// reflection (grpc.reflection.v1alpha, for grpcurl and grpc_cli). Both are
// process-wide switches in gRPC; call it before constructing the
// ServerBuilder. Idempotent and thread-safe.
void EnableHealthAndReflection();

class HealthServer {
 public:
  // Binds `listen_address` ("host:port"; port 0 picks a free one) and
  // serves until Shutdown, not ready. `daemon` names the process in
  // errors.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HealthServer>> Start(
      const std::string& listen_address, absl::string_view daemon);

  HealthServer(const HealthServer&) = delete;
  HealthServer& operator=(const HealthServer&) = delete;
  ~HealthServer();

  // "host:port" actually bound.
  std::string address() const { return address_; }

  // kReadyService's status: SERVING or NOT_SERVING. Ignored after
  // Shutdown.
  void SetReady(bool ready);

  // Both services NOT_SERVING, then the server stops. Later calls return
  // at once.
  void Shutdown();

 private:
  HealthServer(std::unique_ptr<grpc::CallbackGenericService> unknown,
               std::unique_ptr<grpc::Server> server, std::string address);

  const std::string address_;
  // Answers every method but health's UNIMPLEMENTED; it also gives the
  // server the callback method gRPC wants before it starts. Outlives
  // server_ (declared first).
  const std::unique_ptr<grpc::CallbackGenericService> unknown_;
  absl::Mutex mu_;
  std::unique_ptr<grpc::Server> server_ ABSL_GUARDED_BY(mu_);
  bool ready_ ABSL_GUARDED_BY(mu_) = false;
};

// What a daemon does with --health-listen: starts a HealthServer there,
// or returns null when `listen_address` is empty.
[[nodiscard]] absl::StatusOr<std::unique_ptr<HealthServer>> ServeDaemonHealth(
    const std::string& listen_address, absl::string_view daemon);

// --health-listen HOST:PORT for a daemon's flag table; empty (the default)
// serves no probe port.
FlagSpec HealthListenFlag(std::string* out);

}  // namespace gradsync

#endif  // GRADSYNC_OBSERVABILITY_HEALTH_SERVER_H_
