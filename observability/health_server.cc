#include "observability/health_server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/host.h"

namespace gradsync {
namespace {

// The host of "host:port" as written (brackets kept, for the address the
// server reports); INVALID_ARGUMENT otherwise.
[[nodiscard]] absl::StatusOr<std::string> HostOf(absl::string_view address) {
  absl::StatusOr<std::pair<std::string, int>> split = SplitListenAddress(
      address, "--health-listen", "HOST:PORT (for example 0.0.0.0:9401)");
  if (!split.ok()) return split.status();
  return std::string(address.substr(0, address.rfind(':')));
}

// Takes out the reflection plugin that EnableHealthAndReflection gives every
// builder: the probe port is plaintext and unauthenticated, and reflection
// there would hand anyone the whole API (the descriptor pool is the
// process's, so `file_containing_symbol gradsync.Coordinator` answered).
class WithoutReflection : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>*
                         plugins) override {
    plugins->erase(
        std::remove_if(plugins->begin(), plugins->end(),
                       [](const std::unique_ptr<grpc::ServerBuilderPlugin>& p) {
                         return p->name() == kReflectionPluginName;
                       }),
        plugins->end());
  }

 private:
  // grpc::reflection::ProtoServerReflectionPlugin::name().
  static constexpr char kReflectionPluginName[] = "proto_server_reflection";
};

}  // namespace

void EnableHealthAndReflection() {
  static std::once_flag once;
  std::call_once(once, []() {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  });
}

absl::StatusOr<std::unique_ptr<HealthServer>> HealthServer::Start(
    const std::string& listen_address, absl::string_view daemon) {
  absl::StatusOr<std::string> host = HostOf(listen_address);
  if (!host.ok()) return host.status();
  EnableHealthAndReflection();  // before the builder exists
  grpc::ServerBuilder builder;
  // gRPC turns SO_REUSEPORT on by default on Linux, which would let a
  // second daemon share the port and answer half the probes.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetOption(std::make_unique<WithoutReflection>());
  // Without reflection the builder would hold no method of its own (the
  // health service joins at start) and refuse to build: a generic service
  // that answers UNIMPLEMENTED, as gRPC does for unknown methods anyway.
  auto unknown = std::make_unique<grpc::CallbackGenericService>();
  builder.RegisterCallbackGenericService(unknown.get());
  int port = 0;
  builder.AddListeningPort(listen_address, grpc::InsecureServerCredentials(),
                           &port);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat(
        daemon, ": cannot serve health checks on --health-listen ",
        listen_address,
        "; is the port already in use (another daemon's --health-listen or "
        "--metrics-listen?), or the address not this host's?"));
  }
  server->GetHealthCheckService()->SetServingStatus(kReadyService, false);
  return std::unique_ptr<HealthServer>(new HealthServer(
      std::move(unknown), std::move(server), absl::StrCat(*host, ":", port)));
}

HealthServer::HealthServer(
    std::unique_ptr<grpc::CallbackGenericService> unknown,
    std::unique_ptr<grpc::Server> server, std::string address)
    : address_(std::move(address)),
      unknown_(std::move(unknown)),
      server_(std::move(server)) {}

HealthServer::~HealthServer() { Shutdown(); }

void HealthServer::SetReady(bool ready) {
  absl::MutexLock lock(&mu_);
  if (server_ == nullptr || ready_ == ready) return;
  ready_ = ready;
  server_->GetHealthCheckService()->SetServingStatus(kReadyService, ready);
}

void HealthServer::Shutdown() {
  std::unique_ptr<grpc::Server> server;
  {
    absl::MutexLock lock(&mu_);
    server = std::move(server_);
  }
  if (server == nullptr) return;
  // NOT_SERVING for every service, and later updates ignored: a probe
  // that still gets through sees the daemon going.
  server->GetHealthCheckService()->Shutdown();
  server->Shutdown(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(500));
  server->Wait();
}

absl::StatusOr<std::unique_ptr<HealthServer>> ServeDaemonHealth(
    const std::string& listen_address, absl::string_view daemon) {
  if (listen_address.empty()) return std::unique_ptr<HealthServer>();
  return HealthServer::Start(listen_address, daemon);
}

FlagSpec HealthListenFlag(std::string* out) {
  return FlagSpec(
      "health-listen", "HOST:PORT",
      "serve gRPC health checks (grpc.health.v1; service \"\" live, "
      "\"gradsync.ready\" ready) in plaintext on HOST:PORT, for probes "
      "that speak no TLS; no reflection there (default: none)",
      [out](absl::string_view value) {
        absl::StatusOr<std::string> host = HostOf(value);
        if (!host.ok()) return host.status();
        *out = std::string(value);
        return absl::OkStatus();
      });
}

}  // namespace gradsync
