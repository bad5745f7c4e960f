#include "server/ps/bench/tcp_baseline.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/tcp_congestion.h"

namespace gradsync {
namespace {

struct PushHeaderWire {
  int64_t step;
  uint64_t bytes;
};

[[nodiscard]] absl::Status SocketError(absl::string_view what) {
  return absl::UnavailableError(
      absl::StrCat("raw TCP ", what, ": ", std::strerror(errno)));
}

void SetTimeouts(int fd, absl::Duration timeout) {
  const timeval tv = absl::ToTimeval(timeout);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

absl::Status SendAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t sent = send(fd, p, n, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return SocketError("send");
    p += sent;
    n -= static_cast<size_t>(sent);
  }
  return absl::OkStatus();
}

absl::Status RecvAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t got = recv(fd, p, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got == 0) return absl::UnavailableError("raw TCP peer closed");
    if (got < 0) return SocketError("recv");
    p += got;
    n -= static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpShardServer>> TcpShardServer::Start(
    std::shared_ptr<PsShard> shard, absl::Duration timeout,
    const std::string& congestion) {
  RETURN_IF_ERROR(CheckCongestionControl(congestion));
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return SocketError("socket");
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 128) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const absl::Status error = SocketError("listen");
    close(fd);
    return error;
  }
  std::unique_ptr<TcpShardServer> server(
      new TcpShardServer(std::move(shard), fd, ntohs(addr.sin_port), timeout,
                         CongestionControlFor(congestion, true)));
  server->acceptor_ = std::thread([s = server.get()]() { s->AcceptLoop(); });
  return server;
}

TcpShardServer::TcpShardServer(std::shared_ptr<PsShard> shard, int listen_fd,
                               int port, absl::Duration timeout,
                               std::string congestion_name)
    : shard_(std::move(shard)),
      listen_fd_(listen_fd),
      port_(port),
      timeout_(timeout),
      congestion_name_(std::move(congestion_name)) {}

TcpShardServer::~TcpShardServer() {
  std::vector<std::thread> servers;
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);
    servers.swap(servers_);
  }
  shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  for (std::thread& t : servers) t.join();
  absl::MutexLock lock(&mu_);
  for (std::thread& t : servers_) t.join();
  for (int fd : fds_) close(fd);
  close(listen_fd_);
}

void TcpShardServer::AcceptLoop() {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return;  // shut down
    }
    SetTimeouts(fd, timeout_);
    if (!congestion_name_.empty()) {
      SetTcpCongestionControl(fd, congestion_name_).IgnoreError();  // checked
    }
    absl::MutexLock lock(&mu_);
    if (closing_) {
      close(fd);
      return;
    }
    fds_.push_back(fd);
    servers_.emplace_back([this, fd]() { Serve(fd); });
  }
}

void TcpShardServer::Serve(int fd) {
  int32_t rank = -1;
  if (!RecvAll(fd, &rank, sizeof(rank)).ok()) return;
  for (;;) {
    PushHeaderWire header;
    if (!RecvAll(fd, &header, sizeof(header)).ok()) return;  // client left
    const absl::Time deadline = absl::Now() + timeout_;
    absl::Status status = [&]() -> absl::Status {
      ASSIGN_OR_RETURN(PsShard::Push push,
                       shard_->BeginPush(rank, header.step, deadline));
      if (header.bytes != push.size_bytes()) {
        return absl::InvalidArgumentError(absl::StrCat("push of ", header.bytes,
                                                       " bytes for a shard of ",
                                                       push.size_bytes()));
      }
      RETURN_IF_ERROR(RecvAll(fd, push.unfilled().data(), header.bytes));
      RETURN_IF_ERROR(push.MarkFilled(header.bytes));
      RETURN_IF_ERROR(shard_->Commit(std::move(push), deadline));
      ASSIGN_OR_RETURN(ShardViewRef view,
                       shard_->Pull(rank, header.step + 1, deadline));
      return SendAll(fd, view->params.data(),
                     view->params.size() * sizeof(float));
    }();
    if (!status.ok()) {
      std::cerr << "raw TCP server, rank " << rank << ": " << status << "\n";
      return;
    }
  }
}

absl::StatusOr<std::unique_ptr<TcpShardClient>> TcpShardClient::Connect(
    int port, int rank, absl::Duration timeout, const std::string& congestion) {
  RETURN_IF_ERROR(CheckCongestionControl(congestion));
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return SocketError("socket");
  // Before connect, as gRPC's socket mutator does (ps_socket_mutator.h).
  const std::string name = CongestionControlFor(congestion, true);
  if (!name.empty()) SetTcpCongestionControl(fd, name).IgnoreError();
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  SetTimeouts(fd, timeout);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const absl::Status error = SocketError("connect");
    close(fd);
    return error;
  }
  std::unique_ptr<TcpShardClient> client(new TcpShardClient(fd));
  const int32_t wire_rank = rank;
  RETURN_IF_ERROR(SendAll(fd, &wire_rank, sizeof(wire_rank)));
  return client;
}

TcpShardClient::~TcpShardClient() { close(fd_); }

absl::Status TcpShardClient::PushPull(int64_t step,
                                      absl::Span<const float> grads,
                                      absl::Span<float> params) {
  const PushHeaderWire header = {step, grads.size() * sizeof(float)};
  RETURN_IF_ERROR(SendAll(fd_, &header, sizeof(header)));
  RETURN_IF_ERROR(SendAll(fd_, grads.data(), header.bytes));
  return Annotate(RecvAll(fd_, params.data(), params.size() * sizeof(float)),
                  absl::StrCat("step ", step));
}

}  // namespace gradsync
