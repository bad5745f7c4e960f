#include "cli/lab/lab_probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "cli/lab/cpu_meter.h"
#include "cli/lab/lab_network.h"
#include "common/unique_fd.h"

namespace gradsync {
namespace lab {
namespace {

constexpr int kEthernetHeader = 14;
constexpr size_t kSendChunk = 256 * 1024;
constexpr absl::Duration kIoTimeout = absl::Seconds(10);

[[nodiscard]] absl::Status Errno(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// Moves the calling thread into the network namespace `netns`.
[[nodiscard]] absl::Status EnterNamespace(const std::string& netns) {
  UniqueFd fd(open(NamespacePath(netns).c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return Errno(absl::StrCat("open ", NamespacePath(netns)));
  if (setns(fd.get(), CLONE_NEWNET) != 0) {
    return Errno(absl::StrCat("setns ", netns));
  }
  return absl::OkStatus();
}

sockaddr_in Address(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

// Waits until `fd` is ready for `events` or the timeout passes.
[[nodiscard]] absl::Status WaitFd(int fd, short events,
                                  absl::Duration timeout) {
  pollfd p{fd, events, 0};
  const int ready =
      poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout)));
  if (ready < 0) return Errno("poll");
  if (ready == 0) return absl::DeadlineExceededError("no progress");
  return absl::OkStatus();
}

// A listening socket in the receiver's namespace.
struct Listener {
  UniqueFd fd;
  int port = 0;
};

absl::StatusOr<Listener> Listen(const LabHost& host) {
  Listener l;
  l.fd = UniqueFd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (l.fd.get() < 0) return Errno("socket");
  sockaddr_in a = Address(host.address, 0);
  if (bind(l.fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    return Errno(absl::StrCat("bind ", host.address));
  }
  if (listen(l.fd.get(), 4) != 0) return Errno("listen");
  socklen_t len = sizeof(a);
  getsockname(l.fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
  l.port = ntohs(a.sin_port);
  return l;
}

absl::StatusOr<UniqueFd> Accept(int listen_fd) {
  absl::Status ready = WaitFd(listen_fd, POLLIN, kIoTimeout);
  if (!ready.ok()) return ready;
  UniqueFd fd(accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
  if (fd.get() < 0) return Errno("accept");
  return fd;
}

// `congestion`: the TCP congestion control to send with, as the lab's
// daemons do; empty: the namespace's default.
absl::StatusOr<UniqueFd> Connect(const LabHost& to, int port,
                                 const std::string& congestion = "") {
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return Errno("socket");
  if (!congestion.empty() && congestion != "default" &&
      setsockopt(fd.get(), IPPROTO_TCP, TCP_CONGESTION, congestion.data(),
                 congestion.size()) != 0) {
    return Errno(absl::StrCat("TCP_CONGESTION ", congestion));
  }
  sockaddr_in a = Address(to.address, port);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    return Errno(absl::StrCat("connect ", to.address, ":", port));
  }
  return fd;
}

struct StreamResult {
  double goodput_bps = 0;
  int mss = 0;
  int mtu = 0;
};

// Receives until EOF; goodput over what arrived after `warmup`.
[[nodiscard]] absl::StatusOr<StreamResult> ReceiveStream(
    int listen_fd, absl::Duration warmup) {
  absl::StatusOr<UniqueFd> conn = Accept(listen_fd);
  if (!conn.ok()) return conn.status();
  std::vector<char> buffer(kSendChunk);
  int64_t counted = 0;
  absl::Time first = absl::InfinitePast(), start = absl::InfinitePast();
  absl::Time last = absl::InfinitePast();
  while (true) {
    absl::Status ready = WaitFd(conn->get(), POLLIN, kIoTimeout);
    if (!ready.ok()) return ready;
    const ssize_t n = recv(conn->get(), buffer.data(), buffer.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("recv");
    if (n == 0) break;
    const absl::Time now = absl::Now();
    if (first == absl::InfinitePast()) first = now;
    if (now - first >= warmup) {
      if (start == absl::InfinitePast()) {
        start = now;
      } else {
        counted += n;
      }
      last = now;
    }
  }
  StreamResult result;
  if (last > start) {
    result.goodput_bps = counted * 8.0 / absl::ToDoubleSeconds(last - start);
  }
  socklen_t len = sizeof(result.mss);
  getsockopt(conn->get(), IPPROTO_TCP, TCP_MAXSEG, &result.mss, &len);
  len = sizeof(result.mtu);
  if (getsockopt(conn->get(), IPPROTO_IP, IP_MTU, &result.mtu, &len) != 0) {
    result.mtu = 1500;
  }
  return result;
}

[[nodiscard]] absl::Status SendStream(const LabHost& to, int port,
                                      absl::Duration duration,
                                      const std::string& congestion) {
  absl::StatusOr<UniqueFd> fd = Connect(to, port, congestion);
  if (!fd.ok()) return fd.status();
  std::vector<char> buffer(kSendChunk, 'x');
  const absl::Time end = absl::Now() + duration;
  while (absl::Now() < end) {
    absl::Status ready = WaitFd(fd->get(), POLLOUT, kIoTimeout);
    if (!ready.ok()) return ready;
    const ssize_t n =
        send(fd->get(), buffer.data(), buffer.size(), MSG_NOSIGNAL);
    if (n < 0 && errno != EINTR && errno != EAGAIN) return Errno("send");
  }
  return absl::OkStatus();
}

void NoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Echoes single bytes until EOF.
[[nodiscard]] absl::Status Echo(int listen_fd) {
  absl::StatusOr<UniqueFd> conn = Accept(listen_fd);
  if (!conn.ok()) return conn.status();
  NoDelay(conn->get());
  char byte = 0;
  while (true) {
    absl::Status ready = WaitFd(conn->get(), POLLIN, kIoTimeout);
    if (!ready.ok()) return ready;
    const ssize_t n = recv(conn->get(), &byte, 1, 0);
    if (n <= 0) return n == 0 ? absl::OkStatus() : Errno("recv");
    if (send(conn->get(), &byte, 1, MSG_NOSIGNAL) != 1) return Errno("send");
  }
}

// The median of `rounds` one-byte round trips, in microseconds.
[[nodiscard]] absl::StatusOr<double> RoundTrips(const LabHost& to, int port,
                                                int rounds) {
  absl::StatusOr<UniqueFd> fd = Connect(to, port);
  if (!fd.ok()) return fd.status();
  NoDelay(fd->get());
  std::vector<double> samples;
  char byte = 'r';
  for (int i = 0; i < rounds; ++i) {
    const absl::Time start = absl::Now();
    if (send(fd->get(), &byte, 1, MSG_NOSIGNAL) != 1) return Errno("send");
    absl::Status ready = WaitFd(fd->get(), POLLIN, kIoTimeout);
    if (!ready.ok()) return ready;
    if (recv(fd->get(), &byte, 1, 0) != 1) return Errno("recv");
    samples.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  std::sort(samples.begin(), samples.end());
  return samples.empty() ? 0.0 : samples[samples.size() / 2];
}

// Runs `body` on a new thread inside `netns`; its status in *status.
std::thread InNamespace(const std::string& netns,
                        std::function<absl::Status()> body,
                        absl::Status* status) {
  return std::thread([netns, body = std::move(body), status] {
    absl::Status entered = EnterNamespace(netns);
    *status = entered.ok() ? body() : entered;
  });
}

// One stream (and optionally the round trips) from -> to.
struct PairRun {
  const LabHost* from;
  const LabHost* to;
  StreamResult stream;
  double rtt_us = 0;
};

[[nodiscard]] absl::Status RunPairs(std::vector<PairRun>* runs,
                                    const ProbeOptions& options,
                                    const std::string& congestion,
                                    bool round_trips) {
  const size_t n = runs->size();
  std::vector<absl::Status> statuses(4 * n);
  std::vector<Listener> stream_listeners(n), echo_listeners(n);
  // Listeners first, each in its receiver's namespace.
  for (size_t i = 0; i < n; ++i) {
    std::thread t =
        InNamespace((*runs)[i].to->netns,
                    [&, i] {
                      absl::StatusOr<Listener> s = Listen(*(*runs)[i].to);
                      if (!s.ok()) return s.status();
                      stream_listeners[i] = std::move(*s);
                      absl::StatusOr<Listener> e = Listen(*(*runs)[i].to);
                      if (!e.ok()) return e.status();
                      echo_listeners[i] = std::move(*e);
                      return absl::OkStatus();
                    },
                    &statuses[i]);
    t.join();
    if (!statuses[i].ok()) return statuses[i];
  }
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) {
    PairRun& run = (*runs)[i];
    threads.push_back(InNamespace(
        run.to->netns,
        [&, i] {
          absl::StatusOr<StreamResult> r =
              ReceiveStream(stream_listeners[i].fd.get(), options.warmup);
          if (!r.ok()) return r.status();
          (*runs)[i].stream = *r;
          return round_trips ? Echo(echo_listeners[i].fd.get())
                             : absl::OkStatus();
        },
        &statuses[n + i]));
    threads.push_back(InNamespace(
        run.from->netns,
        [&, i] {
          const PairRun& r = (*runs)[i];
          absl::Status sent = SendStream(*r.to, stream_listeners[i].port,
                                         options.duration, congestion);
          if (!sent.ok() || !round_trips) return sent;
          absl::StatusOr<double> rtt =
              RoundTrips(*r.to, echo_listeners[i].port, options.round_trips);
          if (!rtt.ok()) return rtt.status();
          (*runs)[i].rtt_us = *rtt;
          return absl::OkStatus();
        },
        &statuses[2 * n + i]));
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < n; ++i) {
    for (size_t k : {n + i, 2 * n + i}) {
      if (!statuses[k].ok()) {
        return absl::Status(
            statuses[k].code(),
            absl::StrCat("probing ", (*runs)[i].from->name, " -> ",
                         (*runs)[i].to->name, ": ", statuses[k].message()));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::pair<int, int>> ProbePairList(int hosts, ProbePairs pairs) {
  std::vector<std::pair<int, int>> list;
  if (hosts < 2) return list;
  if (pairs == ProbePairs::kRing) {
    for (int i = 0; i < hosts; ++i) list.push_back({i, (i + 1) % hosts});
    if (hosts == 2) list.resize(2);
    return list;
  }
  for (int i = 0; i < hosts; ++i) {
    for (int j = 0; j < hosts; ++j) {
      if (i != j) list.push_back({i, j});
    }
  }
  return list;
}

double LabPayloadBytesPerSecond(double rate_bps) {
  return ExpectedGoodput(rate_bps, kLabMss, kLabMtu) / 8;
}

double ExpectedGoodput(double rate_bps, int mss, int mtu) {
  if (mss <= 0 || mtu <= 0) return rate_bps;
  return rate_bps * mss / (mtu + kEthernetHeader);
}

absl::StatusOr<ProbeReport> ProbeLab(const LabConfig& config,
                                     const ProbeOptions& options) {
  absl::Status privileges = CheckLabPrivileges();
  if (!privileges.ok()) return privileges;
  const std::vector<LabHost> hosts = LabHosts(config);
  for (const LabHost& host : hosts) {
    if (access(NamespacePath(host.netns).c_str(), F_OK) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "host ", host.name, " (namespace ", host.netns,
          ") does not exist; is the lab up? (gradsync lab status)"));
    }
  }
  ProbeReport report;
  report.set_time(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
  report.mutable_link()->set_rate_bps(config.link.rate_bps);
  report.mutable_link()->set_latency_us(
      absl::ToInt64Microseconds(config.link.latency));
  report.set_tolerance(options.tolerance);
  bool ok = true;
  auto judge = [&](double goodput, const StreamResult& s) {
    const double expected = ExpectedGoodput(
        static_cast<double>(config.link.rate_bps), s.mss, s.mtu);
    return std::make_pair(
        expected, std::abs(goodput - expected) <= options.tolerance * expected);
  };
  for (const auto& [i, j] :
       ProbePairList(static_cast<int>(hosts.size()), options.pairs)) {
    std::vector<PairRun> runs = {{&hosts[i], &hosts[j], {}, 0}};
    absl::Status status =
        RunPairs(&runs, options, config.tcp_congestion, /*round_trips=*/true);
    if (!status.ok()) return status;
    PairProbe* pair = report.add_pairs();
    pair->set_from(hosts[i].name);
    pair->set_to(hosts[j].name);
    pair->set_goodput_bps(runs[0].stream.goodput_bps);
    const auto [expected, pass] =
        judge(runs[0].stream.goodput_bps, runs[0].stream);
    pair->set_expected_bps(expected);
    pair->set_rtt_us(runs[0].rtt_us);
    pair->set_ok(pass);
    ok = ok && pass;
  }
  if (options.concurrent && hosts.size() >= 2) {
    std::vector<PairRun> runs;
    for (const auto& [i, j] :
         ProbePairList(static_cast<int>(hosts.size()), ProbePairs::kRing)) {
      runs.push_back({&hosts[i], &hosts[j], {}, 0});
    }
    const CpuSample before = ReadCpuSample();
    absl::Status status = RunPairs(&runs, options, config.tcp_congestion,
                                   /*round_trips=*/false);
    report.set_cpu_busy(CpuBusyShare(before, ReadCpuSample()));
    if (!status.ok()) return status;
    // The question here is whether this machine carries every link at
    // once, so the round is judged by the total. One flow of the ring may
    // fall behind while it lasts: its ACKs queue behind the next flow's
    // data in a host's FIFO (tbf has no flow queueing), which changes
    // nothing about what the links can carry.
    double total = 0, expected_total = 0, slowest = -1;
    for (const PairRun& run : runs) {
      total += run.stream.goodput_bps;
      expected_total += judge(run.stream.goodput_bps, run.stream).first;
      if (slowest < 0 || run.stream.goodput_bps < slowest) {
        slowest = run.stream.goodput_bps;
      }
    }
    report.set_concurrent_total_bps(total);
    report.set_concurrent_min_bps(slowest);
    report.set_concurrent_pairs(static_cast<int>(runs.size()));
    ok = ok &&
         std::abs(total - expected_total) <= options.tolerance * expected_total;
  }
  report.set_ok(ok);
  return report;
}

std::string FormatProbeSummary(const ProbeReport& probe) {
  if (probe.pairs().empty()) return "not probed (gradsync lab probe)";
  double low = -1, high = 0, rtt = 0;
  int failed = 0;
  for (const PairProbe& p : probe.pairs()) {
    low = low < 0 ? p.goodput_bps() : std::min(low, p.goodput_bps());
    high = std::max(high, p.goodput_bps());
    rtt = std::max(rtt, p.rtt_us());
    failed += p.ok() ? 0 : 1;
  }
  std::string text = absl::StrFormat(
      "%s: %d pairs, goodput %.0f-%.0f Mbit/s against %.0f expected "
      "(tolerance %.0f%%), round trips up to %.0f us",
      probe.ok() ? "links OK" : "LINKS OFF", probe.pairs_size(), low / 1e6,
      high / 1e6, probe.pairs(0).expected_bps() / 1e6, 100 * probe.tolerance(),
      rtt);
  if (failed > 0) absl::StrAppend(&text, "; ", failed, " pairs outside");
  if (probe.concurrent_pairs() > 0) {
    absl::StrAppend(
        &text, absl::StrFormat(
                   "\n  all at once: %d pairs, %.2f Gbit/s in total, the "
                   "slowest %.0f Mbit/s; CPUs %.0f%% busy",
                   probe.concurrent_pairs(), probe.concurrent_total_bps() / 1e9,
                   probe.concurrent_min_bps() / 1e6, 100 * probe.cpu_busy()));
  }
  return text;
}

}  // namespace lab
}  // namespace gradsync
