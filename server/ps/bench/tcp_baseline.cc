#include "server/ps/bench/tcp_baseline.h"

#include <sys/socket.h>
#include <unistd.h>

#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/tcp_congestion.h"
#include "server/ps/bench/raw_socket.h"

namespace gradsync {

absl::StatusOr<std::unique_ptr<TcpShardServer>> TcpShardServer::Start(
    std::shared_ptr<PsShard> shard, absl::Duration timeout,
    const std::string& congestion) {
  RETURN_IF_ERROR(CheckCongestionControl(congestion));
  ASSIGN_OR_RETURN(const RawListener listener, ListenOnLoopback());
  std::unique_ptr<TcpShardServer> server(
      new TcpShardServer(std::move(shard), listener.fd, listener.port, timeout,
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
    const int fd = AcceptRaw(listen_fd_, timeout_, congestion_name_);
    if (fd < 0) return;  // shut down
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
    RawPushHeader header;
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
  ASSIGN_OR_RETURN(const int fd, ConnectRaw(port, rank, timeout, congestion));
  return std::unique_ptr<TcpShardClient>(new TcpShardClient(fd));
}

TcpShardClient::~TcpShardClient() { close(fd_); }

absl::Status TcpShardClient::PushPull(int64_t step,
                                      absl::Span<const float> grads,
                                      absl::Span<float> params) {
  const RawPushHeader header = {step, grads.size() * sizeof(float)};
  RETURN_IF_ERROR(SendAll(fd_, &header, sizeof(header)));
  RETURN_IF_ERROR(SendAll(fd_, grads.data(), header.bytes));
  return Annotate(RecvAll(fd_, params.data(), params.size() * sizeof(float)),
                  absl::StrCat("step ", step));
}

}  // namespace gradsync
