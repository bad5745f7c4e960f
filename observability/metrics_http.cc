#include "observability/metrics_http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/host.h"
#include "common/version.h"
#include "common/wire_version.h"

namespace gradsync {
namespace {

// The longest request head read (a scrape's is a few hundred bytes).
constexpr size_t kMaxRequestBytes = 8192;
// Connections taken per wake-up, so that a flood cannot starve the rest.
constexpr int kAcceptsPerRound = 64;

// `address` split into host and port, or INVALID_ARGUMENT.
// `what` starts the error: "coordinator metrics listen address".
[[nodiscard]] absl::StatusOr<std::pair<std::string, int>> SplitListen(
    absl::string_view address, absl::string_view what) {
  return SplitListenAddress(
      address, what, "host:port (for example 127.0.0.1:9400 or 0.0.0.0:9400)");
}

// A listening socket on host:port (port 0: any), non-blocking, with
// SO_REUSEADDR (a restarted daemon rebinds through TIME_WAIT) but not
// SO_REUSEPORT, which would let two daemons share the port and split the
// scrapes between them. -1 when it cannot be bound.
int ListenOn(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = absl::StrCat(port);
  if (getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(),
                  &hints, &found) != 0) {
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                a->ai_protocol);
    if (fd < 0) continue;
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 ||
        listen(fd, SOMAXCONN) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  if (addr.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

std::string Response(int code, absl::string_view reason,
                     absl::string_view content_type, absl::string_view body,
                     bool head, absl::string_view extra_headers = "") {
  return absl::StrCat(
      "HTTP/1.1 ", code, " ", reason, "\r\nContent-Type: ", content_type,
      "\r\nContent-Length: ", body.size(), "\r\n", extra_headers,
      "Connection: close\r\n\r\n", head ? "" : body);
}

// The answer to a complete request head.
std::string Answer(absl::string_view request, const MetricsRegistry& registry) {
  const absl::string_view line = request.substr(0, request.find("\r\n"));
  std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
  constexpr absl::string_view kText = "text/plain; charset=utf-8";
  if (parts.size() != 3 || !absl::StartsWith(parts[2], "HTTP/1.")) {
    return Response(400, "Bad Request", kText, "bad request\n", false);
  }
  const absl::string_view method = parts[0];
  absl::string_view path = parts[1];
  path = path.substr(0, path.find('?'));
  const bool head = method == "HEAD";
  const bool get = method == "GET" || head;
  if (path == "/metrics") {
    if (!get) {
      return Response(405, "Method Not Allowed", kText, "", false,
                      "Allow: GET, HEAD\r\n");
    }
    return Response(200, "OK", kMetricsContentType, registry.Render(), head);
  }
  if (path == "/healthz" && get) {
    return Response(200, "OK", kText, "ok\n", head);
  }
  return Response(404, "Not Found", kText, "not found\n", head);
}

// One client connection of the loop.
struct Connection {
  int fd = -1;
  absl::Time deadline;  // to send its request, then to take its answer
  std::string in;
  std::string out;
  size_t sent = 0;
  bool answering = false;
};

void CloseConnection(Connection& c) {
  if (c.fd >= 0) close(c.fd);
  c.fd = -1;
}

// Reads what `c` sent; once its request head is complete, the answer is
// queued. False when the connection is to be closed.
bool ReadRequest(Connection& c, const MetricsRegistry& registry,
                 absl::Time now) {
  char buffer[2048];
  for (;;) {
    const ssize_t n = read(c.fd, buffer, sizeof(buffer));
    if (n > 0) {
      c.in.append(buffer, static_cast<size_t>(n));
      if (c.in.find("\r\n\r\n") != std::string::npos) break;
      if (c.in.size() > kMaxRequestBytes) return false;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;  // closed, or an error, before a whole request
  }
  c.out = Answer(c.in, registry);
  c.in.clear();
  c.answering = true;
  c.deadline = now + kMetricsIoTimeout;
  return true;
}

// Sends what it can of the answer; false once done or failed.
bool WriteAnswer(Connection& c) {
  while (c.sent < c.out.size()) {
    const ssize_t n =
        send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
    if (n > 0) {
      c.sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;
  }
  shutdown(c.fd, SHUT_WR);
  return false;
}

}  // namespace

MetricsHttpServer::MetricsHttpServer(std::string host,
                                     const MetricsRegistry* registry,
                                     int listen_fd, int port, int wake_fd)
    : host_(std::move(host)),
      registry_(registry),
      listen_fd_(listen_fd),
      port_(port),
      wake_fd_(wake_fd) {}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& listen_address, const MetricsRegistry* registry,
    absl::string_view daemon) {
  absl::StatusOr<std::pair<std::string, int>> split = SplitListen(
      listen_address, absl::StrCat(daemon, " metrics listen address"));
  if (!split.ok()) return split.status();
  const int fd = ListenOn(split->first, split->second);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat(
        daemon, " could not serve metrics on ", listen_address,
        "; is the port already in use (another daemon's --metrics-listen?), "
        "or the host not an address of this machine?"));
  }
  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(fd);
    return absl::InternalError(absl::StrCat(
        daemon, " metrics: cannot make a pipe: ", std::strerror(errno)));
  }
  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer(
      split->first, registry, fd, BoundPort(fd), wake[0]));
  server->wake_write_fd_ = wake[1];
  absl::MutexLock lock(&server->mu_);
  MetricsHttpServer* self = server.get();
  server->thread_ = std::thread([self] { self->Loop(); });
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  Shutdown();
  if (listen_fd_ >= 0) close(listen_fd_);
  close(wake_fd_);
  if (wake_write_fd_ >= 0) close(wake_write_fd_);
}

std::string MetricsHttpServer::address() const {
  return absl::StrCat(host_, ":", port_);
}

void MetricsHttpServer::Shutdown() {
  absl::MutexLock lock(&mu_);
  if (!thread_.joinable()) return;
  const char byte = 1;
  while (write(wake_write_fd_, &byte, 1) < 0 && errno == EINTR) {
  }
  thread_.join();
  // Refuse new clients at once, instead of leaving them in the backlog.
  close(listen_fd_);
  listen_fd_ = -1;
}

void MetricsHttpServer::Loop() {
  // In accept order: the oldest first, which a full table evicts.
  std::list<Connection> connections;
  std::vector<pollfd> fds;
  std::vector<std::list<Connection>::iterator> polled;
  for (;;) {
    absl::Time now = absl::Now();
    absl::Time next = now + absl::Seconds(1);
    fds.assign({{wake_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}});
    polled.clear();
    for (auto it = connections.begin(); it != connections.end(); ++it) {
      fds.push_back(
          {it->fd, static_cast<short>(it->answering ? POLLOUT : POLLIN), 0});
      polled.push_back(it);
      next = std::min(next, it->deadline);
    }
    const int wait_ms = static_cast<int>(
        std::max<int64_t>(0, absl::ToInt64Milliseconds(next - now) + 1));
    const int ready = poll(fds.data(), fds.size(), wait_ms);
    if (ready < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;  // Shutdown
    now = absl::Now();
    for (size_t i = 0; i < polled.size(); ++i) {
      Connection& c = *polled[i];
      const short events = fds[i + 2].revents;
      bool keep = now < c.deadline;
      if (keep && events != 0) {
        keep = c.answering ? WriteAnswer(c) : ReadRequest(c, *registry_, now);
        // An answer is sent at once: most fit the socket's buffer.
        if (keep && c.answering && c.sent == 0) keep = WriteAnswer(c);
      }
      if (!keep) {
        CloseConnection(c);
        connections.erase(polled[i]);
      }
    }
    if (fds[1].revents == 0) continue;
    for (int i = 0; i < kAcceptsPerRound; ++i) {
      const int fd =
          accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;
      if (static_cast<int>(connections.size()) >= kMetricsMaxConnections) {
        // Full: the oldest connection still silent makes room (answers
        // in progress stay); silent ones cannot lock a scrape out.
        auto victim =
            std::find_if(connections.begin(), connections.end(),
                         [](const Connection& c) { return !c.answering; });
        if (victim == connections.end()) {
          close(fd);
          continue;
        }
        CloseConnection(*victim);
        connections.erase(victim);
      }
      Connection c;
      c.fd = fd;
      c.deadline = now + kMetricsRequestTimeout;
      connections.push_back(std::move(c));
    }
  }
  for (Connection& c : connections) CloseConnection(c);
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
