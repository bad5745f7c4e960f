// MetricsHttpServer: serves a MetricsRegistry (observability/prometheus.h) in
// Prometheus's text format on GET /metrics: a small HTTP/1.1 server of its
// own, one thread with poll(), so that no client can hold it. Services
// fill the registry and never see this.
//
//   MetricsRegistry registry;
//   ... registry.AddCollector(...) ...
//   ASSIGN_OR_RETURN(std::unique_ptr<MetricsHttpServer> http,
//                    MetricsHttpServer::Start("0.0.0.0:9400", &registry,
//                                             "gradsync-coordinator"));
//   // curl http://host:9400/metrics
//
// GET /healthz answers 200 "ok" while the daemon runs: a liveness probe
// for probes that speak no TLS (Kubernetes' grpc: probe cannot reach a
// daemon's gRPC port under --tls-dir).
//
// Other paths answer 404; other methods on /metrics 405; a request line
// that is not HTTP 400. Every answer closes its connection.
//
// Silent and slow clients (trust finding 5: two silent connections
// delayed a scrape by 4 s, sixteen stopped them): a connection must send
// its whole request within kMetricsRequestTimeout of being accepted and
// take its answer within kMetricsIoTimeout, or it is closed; at most
// kMetricsMaxConnections are open, and one more evicts the oldest that
// has not sent a request yet. A request is answered as soon as it is
// complete, so a scrape among thousands of idle connections answers at
// once.
//
// Errors (Start): INVALID_ARGUMENT for an address that is not host:port;
// UNAVAILABLE if it cannot be bound (the message names the flag's
// address and what to check).
//
// Threading: Start and Shutdown from any thread; Shutdown is idempotent
// and returns once the serving thread has ended. `registry` must outlive
// the server.
#ifndef GRADSYNC_OBSERVABILITY_METRICS_HTTP_H_
#define GRADSYNC_OBSERVABILITY_METRICS_HTTP_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/flags.h"
#include "observability/prometheus.h"

namespace gradsync {

inline constexpr absl::Duration kMetricsIoTimeout = absl::Seconds(5);
inline constexpr absl::Duration kMetricsRequestTimeout = absl::Seconds(2);
inline constexpr int kMetricsMaxConnections = 64;
// The content type of the text format, version 0.0.4.
inline constexpr char kMetricsContentType[] =
    "text/plain; version=0.0.4; charset=utf-8";

class MetricsHttpServer {
 public:
  // Binds `listen_address` ("host:port"; port 0 picks a free one; no
  // SO_REUSEPORT, so a second daemon on the same port fails here) and
  // serves `registry` until Shutdown. `daemon` names the process in
  // errors ("gradsync-coordinator").
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& listen_address, const MetricsRegistry* registry,
      absl::string_view daemon);

  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;
  ~MetricsHttpServer();

  int port() const { return port_; }
  // "host:port" actually bound.
  std::string address() const;

  // Stops accepting, ends the serving thread. Later calls return at once.
  void Shutdown();

 private:
  MetricsHttpServer(std::string host, const MetricsRegistry* registry,
                    int listen_fd, int port, int wake_fd);
  // The serving thread: poll() over the listener, the connections and
  // the wake-up pipe until Shutdown writes to it.
  void Loop();

  const std::string host_;
  const MetricsRegistry* const registry_;
  int listen_fd_;  // -1 once Shutdown closed it
  const int port_;
  const int wake_fd_;  // read end of the wake-up pipe (the thread's)
  int wake_write_fd_ = -1;
  absl::Mutex mu_;
  std::thread thread_ ABSL_GUARDED_BY(mu_);
};

// What every daemon does with its metrics: adds
// gradsync_build_info{daemon,version,wire_version} 1 to `registry` and,
// when `listen_address` is not empty, serves `registry` there (null when it
// is empty). Errors: Start's, and ALREADY_EXISTS when called twice on one
// registry.
[[nodiscard]] absl::StatusOr<std::unique_ptr<MetricsHttpServer>>
ServeDaemonMetrics(const std::string& listen_address, MetricsRegistry* registry,
                   absl::string_view daemon);

// --metrics-listen HOST:PORT for a daemon's flag table: where the daemon
// serves /metrics; empty (the default) serves none.
FlagSpec MetricsListenFlag(std::string* out);

}  // namespace gradsync

#endif  // GRADSYNC_OBSERVABILITY_METRICS_HTTP_H_
