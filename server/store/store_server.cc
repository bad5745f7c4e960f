#include "server/store/store_server.h"

#include <grpcpp/resource_quota.h>
#include <grpcpp/server_builder.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "server/store/sync_server.h"

namespace gradsync {
namespace {

// How long Shutdown lets calls in flight finish before gRPC cancels them.
// Waiters return within a cancel-check slice anyway; this covers the
// non-blocking calls.
constexpr absl::Duration kShutdownGrace = absl::Milliseconds(500);

}  // namespace

StoreServer::StoreServer(std::string host)
    : host_(std::move(host)), service_(&store_) {}

absl::StatusOr<std::unique_ptr<StoreServer>> StoreServer::Start(
    const std::string& listen_address, const StoreServerOptions& options) {
  ASSIGN_OR_RETURN(std::string host,
                   ListenHost(listen_address, "store",
                              "127.0.0.1:29500, 0.0.0.0:0 or [::]:29500"));
  if (options.max_threads < kSyncServerMaxPollers + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("store server max_threads is ", options.max_threads,
                     "; it needs at least ", kSyncServerMaxPollers + 1,
                     " (pollers plus one caller)"));
  }
  std::unique_ptr<StoreServer> server(new StoreServer(std::move(host)));

  EnableHealthAndReflection();  // before the builder exists
  grpc::ServerBuilder builder;
  builder.AddListeningPort(
      listen_address, MakeServerCredentials(options.security), &server->port_);
  ConfigureSyncServer(builder, "gradsync-store", options.max_threads);
  builder.RegisterService(&server->service_);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat(
        "store server could not listen on ", listen_address,
        "; is the port already in use, or the host not an address of this "
        "machine?"));
  }
  return server;
}

StoreServer::~StoreServer() { Shutdown(); }

std::string StoreServer::address() const {
  return absl::StrCat(host_, ":", port_);
}

void StoreServer::Shutdown() {
  absl::MutexLock lock(&shutdown_mu_);
  if (shut_down_) return;
  shut_down_ = true;
  if (server_ == nullptr) return;
  service_.BeginShutdown();
  server_->Shutdown(absl::ToChronoTime(absl::Now() + kShutdownGrace));
  server_->Wait();
}

}  // namespace gradsync
