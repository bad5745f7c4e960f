#include "security/grpc_listener.h"

#include <fcntl.h>
#include <linux/tcp.h>  // tcp_info with tcpi_bytes_received, TCP_NODELAY
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <iostream>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/host.h"
#include "common/status_macros.h"

namespace gradsync {
namespace {

// What a plaintext gRPC (HTTP/2) client sends first.
constexpr absl::string_view kHttp2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
// Connections taken per wake-up, so that a flood cannot starve the rest.
constexpr int kAcceptsPerRound = 64;
// Closed connections and gRPC lines kept for pairing.
constexpr size_t kMaxClosed = 512;
constexpr size_t kMaxLines = 512;
// Peers the limiter tells apart; past it they share one count.
constexpr size_t kMaxPeerHosts = 1024;
// How long accepting pauses when the process is out of descriptors.
constexpr absl::Duration kAcceptPause = absl::Milliseconds(100);
// The longest epoll wait: deadlines are re-read at least this often.
constexpr absl::Duration kMaxWait = absl::Seconds(1);

// The first bytes a client sent, printable: "GET /metrics HTT".
std::string Printable(absl::string_view bytes) {
  std::string out;
  for (char c : bytes.substr(0, 16)) {
    out += (c >= 0x20 && c < 0x7f) ? c : '.';
  }
  return out;
}

// The bytes the peer sent on `fd` so far (all of them, once it hung up),
// or 0 when the kernel does not say.
uint64_t BytesReceived(int fd) {
  tcp_info info{};
  socklen_t length = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0 ||
      length < offsetof(tcp_info, tcpi_bytes_received) +
                   sizeof(info.tcpi_bytes_received)) {
    return 0;
  }
  return info.tcpi_bytes_received;
}

// "A", "A or B", "A, B or C".
std::string OneOf(const std::vector<std::string>& peers) {
  if (peers.size() == 1) return peers[0];
  return absl::StrCat(absl::StrJoin(peers.begin(), peers.end() - 1, ", "),
                      " or ", peers.back());
}

}  // namespace

absl::StatusOr<std::unique_ptr<GrpcListener>> GrpcListener::Bind(
    const std::string& listen_address, GrpcListenerOptions options) {
  ASSIGN_OR_RETURN(
      auto host_port,
      SplitListenAddress(listen_address, "listen address", "host:port"));
  ASSIGN_OR_RETURN(ListenSockets sockets,
                   BindListenSockets(host_port.first, host_port.second));
  return std::unique_ptr<GrpcListener>(
      new GrpcListener(std::move(options), std::move(sockets)));
}

GrpcListener::GrpcListener(GrpcListenerOptions options, ListenSockets sockets)
    : options_(std::move(options)),
      listen_fds_(std::move(sockets.fds)),
      port_(sockets.port),
      limiter_(options_.reporting.period, kMaxPeerHosts) {}

GrpcListener::~GrpcListener() { Shutdown(); }

void GrpcListener::AddTo(grpc::ServerBuilder& builder,
                         std::shared_ptr<grpc::ServerCredentials> credentials) {
  acceptor_ = builder.experimental().AddExternalConnectionAcceptor(
      grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD,
      std::move(credentials));
}

absl::Status GrpcListener::Start() {
  if (thread_.joinable() || acceptor_ == nullptr) {
    return absl::FailedPreconditionError(
        "GrpcListener::Start: once, after AddTo and BuildAndStart");
  }
  epoll_ = UniqueFd(epoll_create1(EPOLL_CLOEXEC));
  wake_ = UniqueFd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (epoll_.get() < 0 || wake_.get() < 0) {
    return absl::InternalError(
        absl::StrCat("cannot make an epoll set: ", strerror(errno)));
  }
  std::vector<int> fds = {wake_.get()};
  for (const UniqueFd& fd : listen_fds_) fds.push_back(fd.get());
  for (int fd : fds) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event) != 0) {
      return absl::InternalError(
          absl::StrCat("cannot watch a listening socket: ", strerror(errno)));
    }
  }
  if (options_.tls && options_.reporting.tap != nullptr) {
    const int wake = wake_.get();
    lines_in_ = options_.reporting.tap->Subscribe([wake] {
      const uint64_t one = 1;
      (void)!write(wake, &one, sizeof(one));
    });
  }
  thread_ = std::thread(&GrpcListener::Loop, this);
  return absl::OkStatus();
}

void GrpcListener::Shutdown() {
  if (thread_.joinable()) {
    stop_.store(true);
    const uint64_t one = 1;
    (void)!write(wake_.get(), &one, sizeof(one));
    thread_.join();
  }
  lines_in_.reset();  // what it had not resolved counts as unclaimed
  lines_.clear();
  unread_.clear();
  watched_.clear();
  closed_.clear();
  listen_fds_.clear();
  epoll_.Reset();
  wake_.Reset();
}

void GrpcListener::Loop() {
  constexpr int kEvents = 64;
  epoll_event events[kEvents];
  while (!stop_.load()) {
    const absl::Duration wait = std::clamp(NextDeadline() - absl::Now(),
                                           absl::ZeroDuration(), kMaxWait);
    const int n = epoll_wait(epoll_.get(), events, kEvents,
                             static_cast<int>(absl::ToInt64Milliseconds(
                                 wait + absl::Milliseconds(1))));
    const absl::Time now = absl::Now();
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_.get()) {
        uint64_t count = 0;
        (void)!read(fd, &count, sizeof(count));
      } else if (unread_.contains(fd)) {
        Classify(fd, now);
      } else if (watched_.contains(fd)) {
        OnWatched(fd, events[i].events, now);
      } else {
        Accept(fd, now);
      }
    }
    if (stop_.load()) break;
    TakeLines();
    PairLines(now);
    ReportHangUps(now);
    Expire(now);
  }
}

void GrpcListener::Accept(int listen_fd, absl::Time now) {
  if (now < accept_paused_until_) return;
  for (int i = 0; i < kAcceptsPerRound; ++i) {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    const int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&address),
                           &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
          errno == ENOMEM) {
        PauseAccepting(now);
      }
      return;  // EAGAIN: taken them all
    }
    UniqueFd connection(fd);
    const int yes = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    if (options_.on_accept) options_.on_accept(fd);
    std::string peer = SocketAddressString(address);
    std::string host = SocketAddressHost(address);
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP;
    event.data.fd = fd;
    if (static_cast<int>(unread_.size()) >= kMaxUnread ||
        epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event) != 0) {
      // Too many say nothing yet: gRPC takes this one as it comes.
      HandOver(std::move(connection), peer, host, /*watch=*/false, 0, now);
      continue;
    }
    unread_.emplace(fd, Unread{std::move(connection), std::move(peer),
                               std::move(host), now + kFirstBytesTimeout});
  }
}

void GrpcListener::PauseAccepting(absl::Time now) {
  accept_paused_until_ = now + kAcceptPause;
  for (const UniqueFd& fd : listen_fds_) {
    epoll_event event{};
    event.data.fd = fd.get();
    epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd.get(), &event);
  }
}

void GrpcListener::Classify(int fd, absl::Time now) {
  char head[kHttp2Preface.size()];
  const ssize_t n = recv(fd, head, sizeof(head), MSG_PEEK);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;  // not yet
  auto it = unread_.find(fd);
  Unread unread = std::move(it->second);
  unread_.erase(it);
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
  if (n <= 0) return;  // gone before a byte: closed, nothing to say
  const absl::string_view bytes(head, static_cast<size_t>(n));
  // A TLS handshake record: content type 22, then version 3.x.
  const bool tls = head[0] == 0x16 && (n < 2 || head[1] == 0x03);
  if (!options_.tls) {
    if (tls) {
      Report({RefusalCause::kTlsAtPlaintext, unread.peer, unread.host, ""},
             now);
      return;
    }
    HandOver(std::move(unread.fd), unread.peer, unread.host, false, 0, now);
    return;
  }
  if (tls) {
    // The record's length follows its type and version.
    const uint64_t hello_bytes =
        n < 5 ? 0
              : 5 + (static_cast<uint64_t>(static_cast<uint8_t>(head[3])) << 8 |
                     static_cast<uint8_t>(head[4]));
    HandOver(std::move(unread.fd), unread.peer, unread.host,
             /*watch=*/lines_in_ != nullptr, hello_bytes, now);
    return;
  }
  if (absl::StartsWith(kHttp2Preface, bytes)) {
    Report({RefusalCause::kPlaintextGrpc, unread.peer, unread.host, ""}, now);
  } else {
    Report({RefusalCause::kNotTls, unread.peer, unread.host, Printable(bytes)},
           now);
  }
}

void GrpcListener::HandOver(UniqueFd fd, const std::string& peer,
                            const std::string& host, bool watch,
                            uint64_t hello_bytes, absl::Time now) {
  if (acceptor_ == nullptr) return;
  // The duplicate first: once handed over, gRPC may close the descriptor
  // and the number may name another file.
  if (watch && static_cast<int>(watched_.size()) < kMaxWatched) {
    UniqueFd dup(fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
    epoll_event event{};
    // Edge-triggered: the peer's FIN alone would stay readable; the
    // duplicate never reads.
    event.events = EPOLLRDHUP | EPOLLET;
    event.data.fd = dup.get();
    if (dup.get() >= 0 &&
        epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, dup.get(), &event) == 0) {
      const int key = dup.get();
      watched_.emplace(key, Watched{std::move(dup), peer, host,
                                    now + kWatchTime, hello_bytes});
    }
  }
  grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters
      params;
  params.listener_fd = listen_fds_.empty() ? -1 : listen_fds_[0].get();
  params.fd = fd.Release();
  acceptor_->HandleNewConnection(&params);
}

void GrpcListener::OnWatched(int fd, uint32_t events, absl::Time now) {
  // Both directions shut: gRPC closed its side (after a failed handshake,
  // or after the peer's FIN), or the peer reset it. A FIN alone: not yet.
  if ((events & (EPOLLHUP | EPOLLERR)) == 0) return;
  auto it = watched_.find(fd);
  const Watched& watched = it->second;
  // The kernel counts the peer's FIN as a byte received.
  const uint64_t received = BytesReceived(fd);
  const bool hello_only =
      watched.hello_bytes > 0 &&
      (received == watched.hello_bytes || received == watched.hello_bytes + 1);
  closed_.push_back(Closed{watched.peer, watched.host, now, hello_only});
  if (closed_.size() > kMaxClosed) closed_.pop_front();
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
  watched_.erase(it);
}

void GrpcListener::TakeLines() {
  if (lines_in_ == nullptr) return;
  for (GrpcLogTap::HandshakeLine& line : lines_in_->Take()) {
    lines_.push_back(std::move(line));
    if (lines_.size() > kMaxLines) {
      lines_in_->Resolve(lines_.front().id, false);
      lines_.pop_front();
    }
  }
}

void GrpcListener::PairLines(absl::Time now) {
  while (!lines_.empty() && now >= lines_.front().at + kPairAfter) {
    const GrpcLogTap::HandshakeLine line = std::move(lines_.front());
    lines_.pop_front();
    // gRPC logs the failure, then closes that socket on the same thread:
    // the line's connection is among those closed just after it.
    // A client's certificate (or its absence) shows only after its
    // ClientHello: a connection that sent nothing more cannot be the one.
    const RefusalCause cause = TlsFailureCause(line.text);
    const bool needs_more = cause == RefusalCause::kUntrustedCertificate ||
                            cause == RefusalCause::kNoCertificate;
    std::vector<Closed*> candidates;
    for (Closed& closed : closed_) {
      if (!closed.claimed && closed.at >= line.at - kPairBefore &&
          closed.at <= line.at + kPairAfter &&
          !(needs_more && closed.hello_only)) {
        candidates.push_back(&closed);
      }
    }
    if (candidates.empty()) {  // not this server's, or not watched
      lines_in_->Resolve(line.id, false);
      continue;
    }
    Closed& first = *candidates.front();
    first.claimed = true;
    std::set<std::string> hosts;
    std::vector<std::string> peers;
    for (const Closed* closed : candidates) {
      if (hosts.insert(closed->host).second) peers.push_back(closed->peer);
    }
    RefusalReport report;
    report.cause = cause;
    report.detail = TlsFailureReason(line.text);
    if (hosts.size() == 1) {
      report.peer = first.peer;
      report.host = first.host;
    } else {
      // Another host's connection closed at the same moment: name both
      // rather than guess.
      report.peer = absl::StrCat("one of ", OneOf(peers));
      report.host = absl::StrJoin(hosts, ",");
    }
    Report(report, now);
    lines_in_->Resolve(line.id, true);
  }
}

void GrpcListener::ReportHangUps(absl::Time now) {
  // Past the pairing window no line of gRPC's can claim it: the peer hung
  // up on the certificate (a gRPC client that does not trust it sends no
  // alert, so gRPC logs nothing).
  for (Closed& closed : closed_) {
    if (closed.claimed || !closed.hello_only ||
        now < closed.at + kPairBefore + kPairAfter) {
      continue;
    }
    closed.claimed = true;
    Report({RefusalCause::kRefusedOurCertificate, closed.peer, closed.host, ""},
           now);
  }
}

void GrpcListener::Expire(absl::Time now) {
  absl::erase_if(unread_, [&](const auto& entry) {
    if (now < entry.second.deadline) return false;
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, entry.first, nullptr);
    return true;  // said nothing in time: closed
  });
  absl::erase_if(watched_, [&](const auto& entry) {
    if (now < entry.second.deadline) return false;
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, entry.first, nullptr);
    return true;  // past its handshake
  });
  while (!closed_.empty() &&
         closed_.front().at + kPairAfter + kPairBefore + kMaxWait < now) {
    closed_.pop_front();
  }
  for (const auto& [host, held_back] : limiter_.Flush(now)) {
    Say(HeldBackLine(host, held_back, limiter_.period()));
  }
  if (accept_paused_until_ != absl::InfinitePast() &&
      now >= accept_paused_until_) {
    accept_paused_until_ = absl::InfinitePast();
    for (const UniqueFd& fd : listen_fds_) {
      epoll_event event{};
      event.events = EPOLLIN;
      event.data.fd = fd.get();
      epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd.get(), &event);
    }
  }
}

absl::Time GrpcListener::NextDeadline() const {
  absl::Time next = limiter_.NextFlush();
  for (const auto& [fd, unread] : unread_) {
    next = std::min(next, unread.deadline);
  }
  for (const auto& [fd, watched] : watched_) {
    next = std::min(next, watched.deadline);
  }
  if (!lines_.empty()) next = std::min(next, lines_.front().at + kPairAfter);
  for (const Closed& closed : closed_) {
    if (!closed.claimed && closed.hello_only) {
      next = std::min(next, closed.at + kPairBefore + kPairAfter);
    }
  }
  if (accept_paused_until_ != absl::InfinitePast()) {
    next = std::min(next, accept_paused_until_);
  }
  return next;
}

void GrpcListener::Report(const RefusalReport& report, absl::Time now) {
  int64_t held_back = 0;
  if (!limiter_.Admit(report.host, now, &held_back)) return;
  Say(absl::StrCat(DescribeRefusal(options_.server, report),
                   HeldBackSuffix(report.host, held_back, limiter_.period())));
}

void GrpcListener::Say(const std::string& line) const {
  if (options_.reporting.log) {
    options_.reporting.log(line);
  } else {
    std::cerr << line << std::endl;
  }
}

}  // namespace gradsync
