#include "server/ps/bench/tcp_pipelined.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/tcp_congestion.h"
#include "server/ps/bench/raw_socket.h"
#include "server/ps/shard/gradient_sum.h"

namespace gradsync {

absl::StatusOr<std::unique_ptr<PipelinedTcpServer>> PipelinedTcpServer::Start(
    size_t elements, int num_ranks, size_t chunk_bytes, absl::Duration timeout,
    const std::string& congestion) {
  if (elements == 0 || num_ranks < 1 || chunk_bytes < sizeof(float) ||
      chunk_bytes % sizeof(float) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("pipelined TCP server: ", elements, " elements, ",
                     num_ranks, " ranks, chunks of ", chunk_bytes, " bytes"));
  }
  RETURN_IF_ERROR(CheckCongestionControl(congestion));
  OptimizerConfig config;
  config.kind = OptimizerKind::kSgd;
  config.lr = 1.0;
  ASSIGN_OR_RETURN(Optimizer optimizer, Optimizer::Create(config, elements));
  ASSIGN_OR_RETURN(const RawListener listener, ListenOnLoopback());
  std::unique_ptr<PipelinedTcpServer> server(
      new PipelinedTcpServer(elements, num_ranks, chunk_bytes / sizeof(float),
                             std::move(optimizer), listener.fd, listener.port,
                             timeout, CongestionControlFor(congestion, true)));
  server->acceptor_ = std::thread([s = server.get()]() { s->AcceptLoop(); });
  return server;
}

PipelinedTcpServer::PipelinedTcpServer(size_t elements, int num_ranks,
                                       size_t chunk_elements,
                                       Optimizer optimizer, int listen_fd,
                                       int port, absl::Duration timeout,
                                       std::string congestion_name)
    : elements_(elements),
      num_ranks_(num_ranks),
      chunk_elements_(chunk_elements),
      listen_fd_(listen_fd),
      port_(port),
      timeout_(timeout),
      congestion_name_(std::move(congestion_name)),
      params_(elements, 0.0f),
      optimizer_(std::move(optimizer)),
      stage_(num_ranks, std::vector<float>(elements)),
      arrived_(num_chunks(), 0),
      done_(num_chunks(), 0),
      started_(num_ranks, 0) {}

PipelinedTcpServer::~PipelinedTcpServer() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);
  }
  shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();  // no thread is added after this
  {
    absl::MutexLock lock(&mu_);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
  absl::MutexLock lock(&mu_);
  for (int fd : fds_) close(fd);
  close(listen_fd_);
}

size_t PipelinedTcpServer::num_chunks() const {
  return (elements_ + chunk_elements_ - 1) / chunk_elements_;
}

double PipelinedTcpServer::ApplyMsPerRound() const {
  absl::MutexLock lock(&mu_);
  return absl::ToDoubleMilliseconds(apply_time_) /
         static_cast<double>(std::max<int64_t>(1, rounds_));
}

void PipelinedTcpServer::AcceptLoop() {
  for (;;) {
    const int fd = AcceptRaw(listen_fd_, timeout_, congestion_name_);
    if (fd < 0) return;  // shut down
    int32_t rank = -1;
    const bool known =
        RecvAll(fd, &rank, sizeof(rank)).ok() && rank >= 0 && rank < num_ranks_;
    absl::MutexLock lock(&mu_);
    if (closing_ || !known) {
      if (!known)
        std::cerr << "pipelined TCP server: bad rank " << rank << "\n";
      close(fd);
      if (closing_) return;
      continue;
    }
    fds_.push_back(fd);
    threads_.emplace_back([this, rank, fd]() { Receive(rank, fd); });
    threads_.emplace_back([this, rank, fd]() { Send(rank, fd); });
  }
}

void PipelinedTcpServer::Receive(int rank, int fd) {
  const size_t chunks = num_chunks();
  for (;;) {
    RawPushHeader header;
    if (!RecvAll(fd, &header, sizeof(header)).ok()) break;  // client left
    if (header.bytes != elements_ * sizeof(float)) {
      std::cerr << "pipelined TCP server, rank " << rank << ": push of "
                << header.bytes << " bytes for " << elements_ * sizeof(float)
                << "\n";
      break;
    }
    {
      absl::MutexLock lock(&mu_);
      ++started_[rank];
    }
    float* stage = stage_[rank].data();
    for (size_t c = 0; c < chunks; ++c) {
      const size_t begin = c * chunk_elements_;
      const size_t n = std::min(chunk_elements_, elements_ - begin);
      if (absl::Status got = RecvAll(fd, stage + begin, n * sizeof(float));
          !got.ok()) {
        std::cerr << "pipelined TCP server, rank " << rank << ", step "
                  << header.step << ": " << got << "\n";
        shutdown(fd, SHUT_RDWR);
        return;
      }
      bool last = false;
      {
        absl::MutexLock lock(&mu_);
        last = ++arrived_[c] == num_ranks_;
        if (last) arrived_[c] = 0;
      }
      if (last) Reduce(c);
    }
  }
  shutdown(fd, SHUT_RDWR);  // wakes the sender's socket calls
}

void PipelinedTcpServer::Reduce(size_t chunk) {
  const absl::Time start = absl::Now();
  const size_t begin = chunk * chunk_elements_;
  const size_t n = std::min(chunk_elements_, elements_ - begin);
  std::vector<GradientSegments> segments(num_ranks_);
  std::vector<const GradientSegments*> ranks(num_ranks_);
  for (int r = 0; r < num_ranks_; ++r) {
    AppendSegment(&segments[r],
                  reinterpret_cast<const char*>(stage_[r].data() + begin),
                  n * sizeof(float));
    ranks[r] = &segments[r];
  }
  ReduceInBlocks(
      ranks, /*average=*/true, n, /*pool=*/nullptr,
      [&](size_t b, absl::Span<const float> block) {
        optimizer_
            .StepRange(begin + b,
                       absl::MakeSpan(params_).subspan(begin + b, block.size()),
                       block)
            .IgnoreError();  // ranges are in bounds by design
      });
  absl::MutexLock lock(&mu_);
  apply_time_ += absl::Now() - start;
  ++done_[chunk];
  if (++reduced_this_round_ == num_chunks()) {
    reduced_this_round_ = 0;
    optimizer_.EndStep();
    ++rounds_;
  }
}

void PipelinedTcpServer::Send(int rank, int fd) {
  const size_t chunks = num_chunks();
  for (int64_t round = 0;; ++round) {
    for (size_t c = 0; c < chunks; ++c) {
      {
        absl::MutexLock lock(&mu_);
        auto ready = [this, rank, round, c]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
          return closing_ || (started_[rank] > round && done_[c] > round);
        };
        if (!mu_.AwaitWithTimeout(absl::Condition(&ready), timeout_) ||
            closing_) {
          return;  // the client is gone or idle past the timeout
        }
      }
      const size_t begin = c * chunk_elements_;
      const size_t n = std::min(chunk_elements_, elements_ - begin);
      if (!SendAll(fd, params_.data() + begin, n * sizeof(float)).ok()) return;
    }
  }
}

absl::StatusOr<std::unique_ptr<PipelinedTcpClient>> PipelinedTcpClient::Connect(
    int port, int rank, absl::Duration timeout, const std::string& congestion) {
  ASSIGN_OR_RETURN(const int fd, ConnectRaw(port, rank, timeout, congestion));
  return std::unique_ptr<PipelinedTcpClient>(new PipelinedTcpClient(fd));
}

PipelinedTcpClient::~PipelinedTcpClient() { close(fd_); }

absl::Status PipelinedTcpClient::PushPull(int64_t step,
                                          absl::Span<const float> grads,
                                          absl::Span<float> params) {
  const RawPushHeader header = {step, grads.size() * sizeof(float)};
  absl::Status sent;
  std::thread sender([&]() {
    sent = SendAll(fd_, &header, sizeof(header));
    if (sent.ok()) sent = SendAll(fd_, grads.data(), header.bytes);
    if (!sent.ok()) shutdown(fd_, SHUT_RDWR);  // ends the receive below
  });
  absl::Status got = RecvAll(fd_, params.data(), params.size() * sizeof(float));
  if (!got.ok()) shutdown(fd_, SHUT_RDWR);  // ends the send
  sender.join();
  RETURN_IF_ERROR(Annotate(sent, absl::StrCat("push of step ", step)));
  return Annotate(got, absl::StrCat("pull of step ", step));
}

}  // namespace gradsync
