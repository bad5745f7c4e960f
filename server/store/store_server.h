// StoreServer: the rendezvous store served over gRPC, so that ranks that are
// separate processes (or hosts) can find each other. It owns the store's
// state (a MemoryStore), the RPC adapter (StoreServiceImpl) and the gRPC
// server, and is what `gradsync-store` runs and the coordinator embeds.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<StoreServer> server,
//                    StoreServer::Start("127.0.0.1:0"));  // any free port
//   ... ConnectGrpcStore(server->address(), absl::Seconds(10)) elsewhere ...
//   server->Shutdown();  // or let it go out of scope
//
// Threads: a sync gRPC server. Every Get or Wait that is waiting for its keys
// holds one server thread; the server adds threads as calls arrive, so any
// number of blocked waiters up to StoreServerOptions::max_threads still
// leaves threads for the Set that releases them. Past that bound the server
// refuses new calls, Sets included, with RESOURCE_EXHAUSTED (at once, not
// after a wait), so size it above the number of ranks that may wait at once.
//
// Errors (Start): INVALID_ARGUMENT for an address that is not host:port;
// UNAVAILABLE if the address cannot be bound (port in use, host not local).
//
// Thread-safe. Shutdown may be called from any thread, more than once.
#ifndef GRADSYNC_SERVER_STORE_STORE_SERVER_H_
#define GRADSYNC_SERVER_STORE_STORE_SERVER_H_

#include <grpcpp/server.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "collectives/memory_store.h"
#include "security/tls.h"
#include "server/store/store_service.h"

namespace gradsync {

struct StoreServerOptions {
  // Most server threads at once, pollers included. Each waiting Get or Wait
  // holds one, so this bounds how many can wait at the same time; calls
  // beyond it fail at once with RESOURCE_EXHAUSTED. Threads are only made
  // as calls need them.
  int max_threads = 4096;
  // Mutual TLS or plaintext (security/tls.h); default plaintext.
  GrpcSecurity security;
};

class StoreServer {
 public:
  // Binds `listen_address` ("host:port"; port 0 picks a free one) and starts
  // serving. The port is bound exclusively (no SO_REUSEPORT), so a second
  // server on a busy port fails instead of sharing it.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<StoreServer>> Start(
      const std::string& listen_address,
      const StoreServerOptions& options = StoreServerOptions());

  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  // Shuts down (see Shutdown).
  ~StoreServer();

  // The port actually bound.
  int port() const { return port_; }

  // "host:port" actually bound: the host of the listen address and port().
  // A wildcard host (0.0.0.0, [::]) is returned as is.
  std::string address() const;

  // The store's state, for in-process users (the coordinator, tests): what
  // they set is what remote clients get, and EraseWithPrefix drops a finished
  // job's keys.
  MemoryStore* store() { return &store_; }

  // Stops accepting calls, makes waiting Get and Wait calls return
  // UNAVAILABLE within StoreServiceImpl::kCancelCheckInterval, and returns
  // once every handler has returned. Later calls return at once.
  void Shutdown();

 private:
  explicit StoreServer(std::string host);

  const std::string host_;
  int port_ = 0;

  // Declared in dependency order: the gRPC server goes first on
  // destruction, then the service it calls, then the store the service uses.
  MemoryStore store_;
  StoreServiceImpl service_;
  std::unique_ptr<grpc::Server> server_;

  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_STORE_STORE_SERVER_H_
