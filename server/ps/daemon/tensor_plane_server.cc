#include "server/ps/daemon/tensor_plane_server.h"

#include <sys/socket.h>

#include <iostream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/tcp_congestion.h"
#include "server/ps/daemon/tensor_plane_connection.h"
#include "server/ps/transport/tensor_plane_wire.h"

namespace gradsync {
namespace {

// How often the acceptor looks up from Accept (to stop, and to reap).
constexpr absl::Duration kAcceptSlice = absl::Milliseconds(200);
// The sockets' timeout slice: how soon a blocked call sees a stop.
constexpr absl::Duration kIoSlice = absl::Milliseconds(100);

}  // namespace

absl::StatusOr<std::unique_ptr<TensorPlaneServer>> TensorPlaneServer::Start(
    PsService* service, const Options& options) {
  if (service == nullptr) {
    return absl::InvalidArgumentError("TensorPlaneServer needs a PsService");
  }
  if (options.idle_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "TensorPlaneServer: idle_timeout must be positive");
  }
  if (options.max_connections < 1 || options.max_unauthenticated < 1) {
    return absl::InvalidArgumentError(
        "TensorPlaneServer: max_connections and max_unauthenticated must be "
        "at least 1");
  }
  if (options.handshake_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "TensorPlaneServer: handshake_timeout must be positive");
  }
  ASSIGN_OR_RETURN(Socket listener, Socket::Listen(options.host, options.port));
  ASSIGN_OR_RETURN(const int port, listener.LocalPort());
  return std::unique_ptr<TensorPlaneServer>(
      new TensorPlaneServer(service, options, std::move(listener), port));
}

TensorPlaneServer::TensorPlaneServer(PsService* service, const Options& options,
                                     Socket listener, int port)
    : service_(service),
      options_(options),
      listener_(std::move(listener)),
      port_(port) {
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

TensorPlaneServer::~TensorPlaneServer() {
  stopping_.store(true);
  listener_.Shutdown();
  acceptor_.join();
  absl::MutexLock lock(&mu_);
  connections_.clear();  // each stops its threads and closes its socket
}

int TensorPlaneServer::connections() const {
  absl::MutexLock lock(&mu_);
  int open = 0;
  for (const auto& c : connections_) open += !c->done();
  return open;
}

int TensorPlaneServer::authenticated_connections() const {
  absl::MutexLock lock(&mu_);
  int open = 0;
  for (const auto& c : connections_) {
    open += !c->done() && c->authenticated();
  }
  return open;
}

void TensorPlaneServer::ReapLocked() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    it = (*it)->done() ? connections_.erase(it) : std::next(it);
  }
}

void TensorPlaneServer::RefuseFull(Socket& socket) const {
  const std::string out =
      tensor_plane::EncodeErrorReply(absl::ResourceExhaustedError(absl::StrCat(
          "the parameter server's tensor plane holds ",
          options_.max_connections,
          " connections already; close idle clients, or raise the limit")));
  // Best effort, briefly: the acceptor must not stall on one client.
  (void)socket.SendAll(out.data(), out.size(),
                       absl::Now() + absl::Milliseconds(100), &stopping_);
  ::shutdown(socket.fd(), SHUT_WR);
  // The client's hello is usually in already: read it, so that the close
  // sends a FIN after the reply rather than a reset that could beat it.
  char scratch[4096];
  while (::recv(socket.fd(), scratch, sizeof(scratch), MSG_DONTWAIT) > 0) {
  }
}

void TensorPlaneServer::AcceptLoop() {
  while (!stopping_.load()) {
    absl::StatusOr<Socket> socket =
        listener_.Accept(absl::Now() + kAcceptSlice);
    absl::MutexLock lock(&mu_);
    ReapLocked();
    if (!socket.ok()) {
      if (!absl::IsDeadlineExceeded(socket.status()) && !stopping_.load()) {
        std::cerr << "gradsync-ps: tensor plane: accept failed: "
                  << socket.status().message() << "\n";
        mu_.Unlock();
        absl::SleepFor(kAcceptSlice);  // not a busy loop on a broken listener
        mu_.Lock();
      }
      continue;
    }
    if (absl::Status s = socket->Configure(0, 0, kIoSlice); !s.ok()) {
      std::cerr << "gradsync-ps: tensor plane: a connection from "
                << socket->PeerAddress() << " refused: " << s.message() << "\n";
      continue;
    }
    const std::string algorithm = CongestionControlFor(
        options_.congestion_control, socket->PeerIsLocal());
    if (!algorithm.empty()) {
      // Best effort, as the ring's policy: the default stays if refused.
      (void)socket->SetCongestionControl(algorithm);
    }
    int authenticated = 0;
    std::vector<TensorPlaneConnection*> waiting;  // oldest first
    for (const auto& c : connections_) {
      if (c->done()) continue;
      if (c->authenticated()) {
        ++authenticated;
      } else if (!c->stopped()) {
        waiting.push_back(c.get());
      }
    }
    if (authenticated >= options_.max_connections) {
      RefuseFull(*socket);
      continue;
    }
    // Connections that never sent a request cannot lock others out: the
    // oldest makes room (it ends within a socket slice; reaped later).
    if (static_cast<int>(waiting.size()) >= options_.max_unauthenticated) {
      waiting.front()->Stop();
    }
    connections_.push_back(std::make_unique<TensorPlaneConnection>(
        service_, *std::move(socket), options_.idle_timeout,
        options_.handshake_timeout));
  }
}

}  // namespace gradsync
