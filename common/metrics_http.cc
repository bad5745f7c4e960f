#include "common/metrics_http.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/host.h"
#include "common/version.h"
#include "common/wire_version.h"

namespace gradsync {
namespace {

// Scrapes are rare and small: two threads serve them.
constexpr size_t kMetricsThreads = 2;

// `address` split into host and port, or INVALID_ARGUMENT.
// `what` starts the error: "coordinator metrics listen address".
[[nodiscard]] absl::StatusOr<std::pair<std::string, int>> SplitListen(
    absl::string_view address, absl::string_view what) {
  return SplitListenAddress(
      address, what, "host:port (for example 127.0.0.1:9400 or 0.0.0.0:9400)");
}

// SO_REUSEADDR (a restarted daemon rebinds through TIME_WAIT) but not
// httplib's default SO_REUSEPORT, which would let two daemons share the
// port and split the scrapes between them.
void ExclusiveSocket(socket_t sock) {
  int yes = 1;
  setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

}  // namespace

MetricsHttpServer::MetricsHttpServer(std::string host,
                                     const MetricsRegistry* registry)
    : host_(std::move(host)),
      registry_(registry),
      server_(std::make_unique<httplib::Server>()) {}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& listen_address, const MetricsRegistry* registry,
    absl::string_view daemon) {
  absl::StatusOr<std::pair<std::string, int>> split = SplitListen(
      listen_address, absl::StrCat(daemon, " metrics listen address"));
  if (!split.ok()) return split.status();
  std::unique_ptr<MetricsHttpServer> server(
      new MetricsHttpServer(split->first, registry));
  httplib::Server& http = *server->server_;
  http.new_task_queue = [] { return new httplib::ThreadPool(kMetricsThreads); };
  http.set_socket_options(ExclusiveSocket);
  const auto timeout = absl::ToChronoSeconds(kMetricsIoTimeout);
  http.set_read_timeout(timeout);
  http.set_write_timeout(timeout);
  http.set_keep_alive_timeout(timeout.count());
  http.Get("/metrics",
           [registry](const httplib::Request&, httplib::Response& response) {
             response.set_content(registry->Render(), kMetricsContentType);
           });
  // Liveness for probes that cannot speak TLS (Kubernetes' grpc: probe),
  // which the daemons' gRPC ports require under --tls-dir.
  http.Get("/healthz",
           [](const httplib::Request&, httplib::Response& response) {
             response.set_content("ok\n", "text/plain; charset=utf-8");
           });
  auto not_allowed = [](const httplib::Request&, httplib::Response& response) {
    response.status = 405;
    response.set_header("Allow", "GET, HEAD");
  };
  http.Post("/metrics", not_allowed);
  http.Put("/metrics", not_allowed);
  http.Delete("/metrics", not_allowed);

  int port = split->second;
  const bool bound = port == 0
                         ? (port = http.bind_to_any_port(split->first)) > 0
                         : http.bind_to_port(split->first, port);
  if (!bound) {
    return absl::UnavailableError(absl::StrCat(
        daemon, " could not serve metrics on ", listen_address,
        "; is the port already in use (another daemon's --metrics-listen?), "
        "or the host not an address of this machine?"));
  }
  server->port_ = port;
  absl::MutexLock lock(&server->mu_);
  std::atomic<bool>* returned = &server->listen_returned_;
  server->thread_ = std::thread([&http, returned] {
    http.listen_after_bind();
    returned->store(true);
  });
  return server;
}

MetricsHttpServer::~MetricsHttpServer() { Shutdown(); }

std::string MetricsHttpServer::address() const {
  return absl::StrCat(host_, ":", port_);
}

void MetricsHttpServer::Shutdown() {
  absl::MutexLock lock(&mu_);
  if (!thread_.joinable()) return;
  // httplib's stop() does nothing until the accept loop runs (0.11 has no
  // wait_until_ready): wait for it, or for the loop to have ended.
  const absl::Time deadline = absl::Now() + kMetricsIoTimeout;
  while (!server_->is_running() && !listen_returned_.load() &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  server_->stop();
  thread_.join();
}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> ServeDaemonMetrics(
    const std::string& listen_address, MetricsRegistry* registry,
    absl::string_view daemon) {
  absl::StatusOr<GaugeFamily*> info = registry->AddGauge(
      "gradsync_build_info", "1, labelled with the daemon and its build.",
      {"daemon", "version", "wire_version"});
  if (!info.ok()) return info.status();
  absl::StatusOr<Gauge*> gauge = (*info)->WithLabels(
      {std::string(daemon), Version(), absl::StrCat(kWireVersion)});
  if (!gauge.ok()) return gauge.status();
  (*gauge)->Set(1);
  if (listen_address.empty()) return std::unique_ptr<MetricsHttpServer>();
  return MetricsHttpServer::Start(listen_address, registry, daemon);
}

FlagSpec MetricsListenFlag(std::string* out) {
  return FlagSpec(
      "metrics-listen", "HOST:PORT",
      "serve Prometheus metrics on http://HOST:PORT/metrics (port 0 picks a "
      "free one; default: no metrics endpoint)",
      [out](absl::string_view value) {
        absl::StatusOr<std::pair<std::string, int>> split =
            SplitListen(value, "--metrics-listen");
        if (!split.ok()) return split.status();
        *out = std::string(value);
        return absl::OkStatus();
      });
}

}  // namespace gradsync
