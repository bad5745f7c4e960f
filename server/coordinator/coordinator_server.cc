#include "server/coordinator/coordinator_server.h"

#include <grpcpp/resource_quota.h>
#include <grpcpp/server_builder.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/advertised_address.h"
#include "common/host.h"
#include "common/status_macros.h"
#include "server/store/sync_server.h"

namespace gradsync {
namespace {

// How long Shutdown lets calls in flight finish before gRPC cancels them;
// waiting calls return within a wait slice once the service shuts down.
constexpr absl::Duration kShutdownGrace = absl::Milliseconds(500);

}  // namespace

CoordinatorServer::CoordinatorServer(
    std::string host, std::unique_ptr<CoordinatorService> service)
    : host_(std::move(host)),
      service_(std::move(service)),
      rpc_(service_.get()) {}

absl::StatusOr<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(
    const std::string& listen_address, CoordinatorConfig config,
    const CoordinatorServerOptions& options) {
  ASSIGN_OR_RETURN(std::string host,
                   ListenHost(listen_address, "coordinator",
                              "127.0.0.1:29400 or 0.0.0.0:29400"));
  if (options.max_threads < kSyncServerMaxPollers + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("coordinator max_threads is ", options.max_threads,
                     "; it needs at least ", kSyncServerMaxPollers + 1,
                     " (pollers plus one caller)"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<CoordinatorService> service,
                   CoordinatorService::Create(std::move(config)));
  std::unique_ptr<CoordinatorServer> server(
      new CoordinatorServer(std::move(host), std::move(service)));

  // The coordinator accepts its connections itself, so that a client it
  // turns away (plaintext against TLS, a certificate of another CA) is
  // named in its log (security/grpc_listener.h). The port is bound
  // exclusively: a second coordinator on it would split the workers.
  GrpcListenerOptions listener;
  listener.server = "coordinator";
  listener.tls = options.security.tls();
  listener.reporting = options.handshakes;
  absl::StatusOr<std::unique_ptr<GrpcListener>> bound =
      GrpcListener::Bind(listen_address, std::move(listener));
  if (!bound.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "coordinator could not listen on ", listen_address,
        "; is the port already in use (another gradsync-coordinator?), or "
        "the host not an address of this machine? (",
        bound.status().message(), ")"));
  }
  server->listener_ = *std::move(bound);
  server->port_ = server->listener_->port();
  ASSIGN_OR_RETURN(server->advertised_, CoordinatorAdvertisedAddress(
                                            options.advertise, server->host_,
                                            server->port_, HostName()));
  server->service_->SetAdvertisedAddress(server->advertised_);

  EnableHealthAndReflection();  // before the builder exists
  grpc::ServerBuilder builder;
  server->listener_->AddTo(builder, MakeServerCredentials(options.security));
  ConfigureSyncServer(builder, "gradsync-coordinator", options.max_threads);
  builder.RegisterService(&server->rpc_);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "coordinator could not start its gRPC server on ", listen_address));
  }
  RETURN_IF_ERROR(server->listener_->Start());
  server->service_->StartLeaseChecks();
  CoordinatorService* logic = server->service_.get();
  server->metrics_.AddCollector(
      [logic](std::vector<MetricFamily>* out) { logic->CollectMetrics(out); });
  ASSIGN_OR_RETURN(server->metrics_http_,
                   ServeDaemonMetrics(options.metrics_listen, &server->metrics_,
                                      "gradsync-coordinator"));
  return server;
}

CoordinatorServer::~CoordinatorServer() { Shutdown(); }

std::string CoordinatorServer::address() const {
  return absl::StrCat(host_, ":", port_);
}

std::string CoordinatorServer::metrics_address() const {
  return metrics_http_ == nullptr ? "" : metrics_http_->address();
}

void CoordinatorServer::Shutdown() {
  absl::MutexLock lock(&shutdown_mu_);
  if (shut_down_) return;
  shut_down_ = true;
  if (metrics_http_ != nullptr) metrics_http_->Shutdown();
  // No new connections; those handed to gRPC end with the server.
  if (listener_ != nullptr) listener_->Shutdown();
  service_->Shutdown();
  if (server_ == nullptr) return;
  server_->Shutdown(absl::ToChronoTime(absl::Now() + kShutdownGrace));
  server_->Wait();
}

}  // namespace gradsync
