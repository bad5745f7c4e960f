#include "server/ps/daemon/ps_server.h"

#include <grpcpp/resource_quota.h>
#include <grpcpp/server_builder.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "common/tcp_congestion.h"
#include "security/tls.h"
#include "server/ps/daemon/ps_metrics.h"
#include "server/ps/transport/ps_socket_mutator.h"
#include "server/store/sync_server.h"

namespace gradsync {
namespace {

// How long Shutdown lets calls in flight finish before gRPC cancels them;
// waiting handlers return within a cancel-check slice anyway.
constexpr absl::Duration kShutdownGrace = absl::Milliseconds(500);

}  // namespace

PsServer::PsServer(std::string host, int compute_threads)
    : host_(std::move(host)),
      service_(std::make_shared<ComputePool>(
          compute_threads > 0 ? compute_threads - 1
                              : ComputePool::DefaultHelpers())),
      rpc_(&service_) {}

absl::StatusOr<std::unique_ptr<PsServer>> PsServer::Start(
    const std::string& listen_address, const PsServerOptions& options) {
  ASSIGN_OR_RETURN(std::string host,
                   ListenHost(listen_address, "parameter-server",
                              "127.0.0.1:0 or 0.0.0.0:29600"));
  if (options.max_threads < kSyncServerMaxPollers + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter-server max_threads is ", options.max_threads,
                     "; it needs at least ", kSyncServerMaxPollers + 1));
  }
  // A refused algorithm fails here, not silently per connection.
  RETURN_IF_ERROR(CheckCongestionControl(options.transport.congestion_control));
  if (options.compute_threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter-server compute_threads is ",
                     options.compute_threads, "; use 0 for one per core"));
  }
  if (options.tensor_port < -1 || options.tensor_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter-server tensor_port is ", options.tensor_port,
                     "; use -1 (none), 0 (any free port) or a port"));
  }
  std::unique_ptr<PsServer> server(
      new PsServer(std::move(host), options.compute_threads));
  if (options.require_tokens) server->service_.RequireTokens();

  // The server accepts its connections itself (security/grpc_listener.h):
  // a client it turns away is named in its log, and each connection gets
  // its TCP congestion control as it is accepted.
  GrpcListenerOptions listener;
  listener.server = "parameter server";
  listener.tls = options.transport.security.tls();
  listener.reporting = options.handshakes;
  listener.on_accept = [policy = options.transport.congestion_control](int fd) {
    SetAcceptedCongestionControl(fd, policy);
  };
  absl::StatusOr<std::unique_ptr<GrpcListener>> bound =
      GrpcListener::Bind(listen_address, std::move(listener));
  if (!bound.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "parameter server could not listen on ", listen_address,
        "; is the port already in use, or the host not an address of this "
        "machine? (",
        bound.status().message(), ")"));
  }
  server->listener_ = *std::move(bound);
  server->port_ = server->listener_->port();

  EnableHealthAndReflection();  // before the builder exists
  grpc::ServerBuilder builder;
  server->listener_->AddTo(builder,
                           MakeServerCredentials(options.transport.security));
  ApplyPsServerArguments(&builder, options.transport);
  ConfigureSyncServer(builder, "gradsync-ps", options.max_threads);
  builder.RegisterService(&server->rpc_);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("parameter server could not start its gRPC server on ",
                     listen_address));
  }
  RETURN_IF_ERROR(server->listener_->Start());
  if (options.tensor_port >= 0) {
    TensorPlaneServer::Options plane;
    plane.host = server->host_;
    plane.port = options.tensor_port;
    plane.congestion_control = options.transport.congestion_control;
    ASSIGN_OR_RETURN(server->tensor_plane_,
                     TensorPlaneServer::Start(&server->service_, plane));
    server->rpc_.set_tensor_port(server->tensor_plane_->port());
  }
  PsService* service = &server->service_;
  server->metrics_.AddCollector([service](std::vector<MetricFamily>* out) {
    CollectPsMetrics(*service, out);
  });
  ASSIGN_OR_RETURN(server->metrics_http_,
                   ServeDaemonMetrics(options.metrics_listen, &server->metrics_,
                                      "gradsync-ps"));
  if (options.on_serving) {
    RETURN_IF_ERROR(options.on_serving(server->address()));
  }
  return server;
}

PsServer::~PsServer() { Shutdown(); }

std::string PsServer::address() const {
  return absl::StrCat(host_, ":", port_);
}

std::string PsServer::metrics_address() const {
  return metrics_http_ == nullptr ? "" : metrics_http_->address();
}

void PsServer::Shutdown() {
  absl::MutexLock lock(&shutdown_mu_);
  if (shut_down_) return;
  shut_down_ = true;
  if (metrics_http_ != nullptr) metrics_http_->Shutdown();
  // No new connections; those handed to gRPC end with the server.
  if (listener_ != nullptr) listener_->Shutdown();
  if (server_ == nullptr) return;
  rpc_.BeginShutdown();
  service_.ReleaseAll();
  tensor_plane_.reset();
  server_->Shutdown(absl::ToChronoTime(absl::Now() + kShutdownGrace));
  server_->Wait();
}

}  // namespace gradsync
