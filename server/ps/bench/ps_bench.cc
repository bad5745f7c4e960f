// gradsync-ps-bench: how fast the parameter server's gRPC path moves
// gradient bytes, next to raw TCP sockets doing the same push/pull.
//
//   gradsync-ps-bench --clients 4 --bytes 64M --rounds 10
//
// Layout: one server process and N client processes (separate processes,
// forked before any gRPC is touched), all on loopback. The server process
// holds two identical synchronous shards (K = 1, SGD, lr 1) of S bytes:
// one behind the gRPC parameter server (PsServer, PsClient: chunked
// streams, zero-copy sends), one behind raw TCP sockets (tcp_baseline.h:
// one socket per client, bytes received straight into the shard's buffer
// and sent straight from it). Each round, every client pushes its S-byte
// gradient and pulls S bytes of updated parameters through one transport;
// the shard sums the N gradients in rank order, averages and applies SGD
// in both cases, so the two columns differ only in transport. Rounds
// alternate between the transports (g t t g g t ...) to spread noise.
// With --transports grpc,tls a second gRPC server holds the same shard
// behind mutual TLS (a CA and certificates made in memory at start), so
// that the cost of TLS on the PS path shows side by side with plaintext
// gRPC (docs/security.md has the figures).
//
// Reported per round: the time from the first client's start to the last
// client's end, the server's throughput (N*S in + N*S out, / time, in
// GB/s = 1e9 B/s), and #wrong: parameters that differ from the exact
// expected value (the gradients are small integers, so every sum is
// exact), and cpu_ms: the CPU time the server and client processes spent
// in the round (all their threads), which other load on the host does not
// inflate the way it inflates wall time, and srv_cpu: the part of it
// the server process spent. The summary gives medians and the
// gRPC / TCP ratios, plus the shards' own time per round for applying
// the step (the mean and the optimizer, fused; the same work in both
// columns) and for waiting on the last worker.
//
// Exit code: 0 when every round ran with #wrong = 0, 1 otherwise, 2 on a
// bad command line.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/flags.h"
#include "common/median.h"
#include "common/tcp_congestion.h"
#include "common/units.h"
#include "server/ps/bench/bench_process.h"
#include "server/ps/bench/bench_roles.h"
#include "server/ps/transport/ps_socket_mutator.h"

namespace gradsync {
namespace {

constexpr absl::Duration kReplyTimeout = absl::Minutes(2);

struct RoundResult {
  double seconds = 0;
  double cpu_seconds = 0;         // server and clients together
  double server_cpu_seconds = 0;  // the server process alone
  int64_t wrong = 0;
  bool ok = true;
};

// The server process's CPU time so far, in ns (0 if it does not answer).
int64_t ServerCpu(ChildProcess& server) {
  server.WriteLine("cpu");
  int64_t ns = 0;
  return absl::SimpleAtoi(server.ReadLine(kReplyTimeout), &ns) ? ns : 0;
}

// Runs one round of `transport` ('g', 't', 'p' or 's') at `step` on every
// client.
RoundResult RunRound(ChildProcess& server, std::vector<ChildProcess>& clients,
                     char transport, int64_t step) {
  const int64_t server_cpu = ServerCpu(server);
  for (ChildProcess& client : clients) {
    client.WriteLine(absl::StrCat(std::string(1, transport), " ", step));
  }
  RoundResult result;
  int64_t first_start = INT64_MAX, last_end = 0;
  for (size_t r = 0; r < clients.size(); ++r) {
    const std::string reply = clients[r].ReadLine(kReplyTimeout);
    const std::vector<std::string> parts =
        absl::StrSplit(reply, absl::MaxSplits(' ', 3));
    int64_t start = 0, end = 0, cpu = 0;
    if (parts.size() < 4 || !absl::SimpleAtoi(parts[0], &start) ||
        !absl::SimpleAtoi(parts[1], &end) ||
        !absl::SimpleAtoi(parts[2], &cpu) || parts[3] != "ok") {
      std::cerr << "gradsync-ps-bench: client " << r
                << " failed: " << (reply.empty() ? "no reply" : reply) << "\n";
      result.ok = false;
      continue;
    }
    first_start = std::min(first_start, start);
    last_end = std::max(last_end, end);
    result.cpu_seconds += static_cast<double>(cpu) * 1e-9;
  }
  result.server_cpu_seconds =
      static_cast<double>(ServerCpu(server) - server_cpu) * 1e-9;
  result.cpu_seconds += result.server_cpu_seconds;
  // Checked after every client finished, so that no check overlaps a round.
  for (ChildProcess& client : clients) {
    client.WriteLine(absl::StrCat("check ", step));
  }
  for (size_t r = 0; r < clients.size(); ++r) {
    int64_t wrong = 0;
    if (!absl::SimpleAtoi(clients[r].ReadLine(kReplyTimeout), &wrong)) {
      result.ok = false;
    }
    result.wrong += wrong;
  }
  result.seconds = static_cast<double>(last_end - first_start) * 1e-9;
  return result;
}

// "auto (reno)": the policy and what it gives these loopback connections;
// gRPC's connections keep the system's default where this build cannot
// set it on them.
std::string CongestionLabel(const std::string& policy) {
  const std::string name = CongestionControlFor(policy, true);
  std::string label = policy.empty() ? "default" : policy;
  if (policy == "auto") label += " (" + name + ")";  // reno
  if (!name.empty() && !SocketMutatorSupported()) {
    label += "; gRPC path: system default (no socket mutator in this gRPC)";
  }
  return label;
}

// Per transport, the measured rounds.
struct Series {
  std::vector<double> seconds, rates, cpu, server_cpu;
};

// The side-by-side figures of `a` against `b`: the ratio of their median
// times, and the median (and range) of the rounds' own ratios. Each
// round runs every transport back to back, so a round's ratio sees one
// load on the host; its median moves less with load that changes from
// round to round.
void PrintTimeRatio(const char* a_name, const Series& a, const char* b_name,
                    const Series& b) {
  if (a.seconds.empty() || b.seconds.empty()) return;
  std::vector<double> ratios;
  for (size_t i = 0; i < a.seconds.size() && i < b.seconds.size(); ++i) {
    if (b.seconds[i] > 0) ratios.push_back(a.seconds[i] / b.seconds[i]);
  }
  if (ratios.empty()) return;
  std::printf(
      "# time %s/%s: ratio of the medians %.3f; median of the rounds' "
      "ratios %.3f (range %.3f .. %.3f)\n",
      a_name, b_name, Median(a.seconds) / Median(b.seconds), Median(ratios),
      *std::min_element(ratios.begin(), ratios.end()),
      *std::max_element(ratios.begin(), ratios.end()));
}

int Run(const BenchOptions& options) {
  ChildProcess server = ChildProcess::Fork(
      [&options](int in, int out) { return RunBenchServer(options, in, out); });
  const std::vector<std::string> endpoints =
      absl::StrSplit(server.ReadLine(kReplyTimeout), ' ');
  int tcp_port = 0, pipe_port = 0;
  if (endpoints.size() != 5 || endpoints[0] != "serving" ||
      !absl::SimpleAtoi(endpoints[2], &tcp_port) ||
      !absl::SimpleAtoi(endpoints[3], &pipe_port)) {
    std::cerr << "gradsync-ps-bench: the server process did not start\n";
    return 1;
  }
  const std::string grpc_address = endpoints[1];
  const std::string tls_address = endpoints[4];
  std::vector<ChildProcess> clients;
  for (int r = 0; r < options.clients; ++r) {
    clients.push_back(ChildProcess::Fork([&, r](int in, int out) {
      return RunBenchClient(options, r, grpc_address, tcp_port, pipe_port,
                            tls_address, in, out);
    }));
  }
  for (int r = 0; r < options.clients; ++r) {
    if (clients[r].ReadLine(kReplyTimeout) != "ready") {
      std::cerr << "gradsync-ps-bench: client " << r << " did not start\n";
      return 1;
    }
  }

  const double moved =
      2.0 * options.clients * static_cast<double>(options.bytes);
  std::printf(
      "# gradsync-ps-bench: %d client processes x %s push + pull through one "
      "server process (K=1 shard, sync, SGD), chunk %s, window %s, "
      "tcp congestion %s%s%s%s\n",
      options.clients, FormatSize(options.bytes).c_str(),
      FormatSize(options.chunk_bytes).c_str(),
      FormatSize(options.transport.stream_window_bytes).c_str(),
      CongestionLabel(options.transport.congestion_control).c_str(),
      options.partition_bytes > 0
          ? (", gRPC partitions of " + FormatSize(options.partition_bytes))
                .c_str()
          : "",
      options.transport.bdp_probe ? ", BDP probing on" : "",
      options.tune_malloc ? "" : ", malloc untuned");
  std::printf("# %5s  %-9s %10s %14s %9s %9s %7s\n", "round", "transport",
              "time_ms", "GB/s(in+out)", "cpu_ms", "srv_cpu", "#wrong");
  std::map<char, Series> series;
  int64_t total_wrong = 0;
  bool all_ok = true;
  int64_t step = 0;
  for (int round = 0; round < options.warmup + options.rounds; ++round) {
    const bool warm = round < options.warmup;
    std::string order = options.transports;
    if (round % 2 == 1) std::reverse(order.begin(), order.end());
    for (char transport : order) {
      const RoundResult r = RunRound(server, clients, transport, step);
      all_ok = all_ok && r.ok;
      total_wrong += r.wrong;
      const double rate = r.seconds > 0 ? moved / r.seconds / 1e9 : 0;
      if (!warm) {
        Series& s = series[transport];
        s.seconds.push_back(r.seconds);
        s.rates.push_back(rate);
        s.cpu.push_back(r.cpu_seconds);
        s.server_cpu.push_back(r.server_cpu_seconds);
      }
      std::printf("  %5d  %-9s %10.1f %14.3f %9.1f %9.1f %7lld%s\n", round,
                  TransportName(transport), r.seconds * 1e3, rate,
                  r.cpu_seconds * 1e3, r.server_cpu_seconds * 1e3,
                  static_cast<long long>(r.wrong), warm ? "  (warm-up)" : "");
      if (!all_ok) break;
    }
    ++step;  // each transport's shard counts its own steps
    if (!all_ok) break;
  }
  for (ChildProcess& client : clients) client.WriteLine("quit");
  for (ChildProcess& client : clients) client.Wait();
  server.WriteLine("quit");
  const std::string stats = server.ReadLine(kReplyTimeout);
  server.Wait();

  for (const auto& [transport, s] : series) {
    std::printf(
        "# %-4s median: %.1f ms, %.3f GB/s; CPU ms per round %.1f (server "
        "%.1f)\n",
        TransportName(transport), Median(s.seconds) * 1e3, Median(s.rates),
        Median(s.cpu) * 1e3, Median(s.server_cpu) * 1e3);
  }
  PrintTimeRatio("grpc", series['g'], "tcp", series['t']);
  PrintTimeRatio("grpc", series['g'], "pipe", series['p']);
  PrintTimeRatio("tcp", series['t'], "pipe", series['p']);
  PrintTimeRatio("tls", series['s'], "grpc", series['g']);
  PrintTimeRatio("plane", series['l'], "pipe", series['p']);
  PrintTimeRatio("grpc", series['g'], "plane", series['l']);
  std::printf("# server shard work per round (ms): %s\n", stats.c_str());
  std::printf("# #wrong total: %lld\n", static_cast<long long>(total_wrong));
  return all_ok && total_wrong == 0 ? 0 : 1;
}

}  // namespace
}  // namespace gradsync

int main(int argc, char** argv) {
  // Children report their own failures; a dead pipe must not kill us.
  signal(SIGPIPE, SIG_IGN);
  absl::StatusOr<gradsync::BenchOptions> options =
      gradsync::ParseBenchOptions(argc, argv);
  if (!options.ok()) {
    std::cerr << "gradsync-ps-bench: " << options.status().message() << "\n\n"
              << gradsync::BenchUsage(gradsync::TerminalWidth());
    return 2;
  }
  if (options->help) {
    std::cout << gradsync::BenchUsage(gradsync::TerminalWidth());
    return 0;
  }
  if (options->version) {
    std::cout << gradsync::VersionLine("gradsync-ps-bench") << "\n";
    return 0;
  }
  if (options->transports.find('s') != std::string::npos) {
    // One CA for the server and client processes, made before they fork.
    absl::StatusOr<gradsync::ClusterCertificates> certs =
        gradsync::NewClusterCertificates(1);
    if (!certs.ok()) {
      std::cerr << "gradsync-ps-bench: " << certs.status().message() << "\n";
      return 1;
    }
    options->certs = *std::move(certs);
  }
  return gradsync::Run(*options);
}
