// The options of gradsync-ps-bench and what its server and client
// processes run (see ps_bench.cc for the measurement as a whole).
//
// Server process: a PsServer with one synchronous shard (job
// "bench-grpc"; with --partition_bytes, its partitions), a raw-TCP server
// (tcp_baseline.h) with an identical shard, a pipelined raw-TCP server
// (tcp_pipelined.h), a tensor plane (tensor_plane_server.h) over the
// PsServer's service with its own job's shards, and, when the transports
// include "tls", a second PsServer with the same shards over mutual TLS
// (certificates made in memory by the parent, BenchOptions::certs); prints
// "serving <grpc address> <tcp port> <pipe port> <tls address or ->";
// answers "cpu" with
// the CPU time its threads used so far (ns), and "quit" with one line of
// its shards' work per round, then ends.
// Client process r: a PsClient, a TcpShardClient, a PipelinedTcpClient and
// a PsClient over the tensor plane (and a PsClient of the TLS server) as
// rank r; prints
// "ready", then for each "g <step>", "t <step>", "p <step>", "l <step>" or
// "s <step>" runs one push/pull over gRPC, TCP, the pipelined server, the
// tensor plane or gRPC with mutual TLS and
// answers "<start ns> <end ns> <cpu ns> ok" (monotonic
// clock, shared by all processes; CPU time of the client process's
// threads) or "... error: <why>"; "check
// <step>" answers how many parameters differ from their exact value after
// that step (run between rounds, so that no check steals CPU from a
// round); "quit" ends it.
#ifndef GRADSYNC_SERVER_PS_BENCH_BENCH_ROLES_H_
#define GRADSYNC_SERVER_PS_BENCH_BENCH_ROLES_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "security/certs.h"
#include "server/ps/transport/ps_transport.h"

namespace gradsync {

struct BenchOptions {
  int clients = 4;
  size_t bytes = size_t{64} << 20;  // per client and round, each way
  int rounds = 10;                  // measured, per transport
  int warmup = 2;                   // unmeasured rounds first
  size_t chunk_bytes = size_t{1} << 20;
  PsTransportOptions transport;
  bool tune_malloc = true;  // TuneMalloc in every process
  // The transports each round runs, in turn: gRPC (g), raw TCP (t), the
  // pipelined raw-TCP server (p), gRPC with mutual TLS (s), the PS's tensor
  // plane (l: the same shards behind server/ps/daemon/tensor_plane_server.h).
  std::string transports = "gtp";
  // The CA and certificates of the "tls" transport (NewClusterCertificates,
  // made before the processes fork); unused without it.
  ClusterCertificates certs;
  // gRPC path: partitions of at most this many bytes (0: one shard).
  size_t partition_bytes = 0;
  absl::Duration timeout = absl::Minutes(2);  // per push/pull
  bool help = false;
  bool version = false;
};

// Parses argv (common/flags.h); INVALID_ARGUMENT naming a bad flag or
// value.
[[nodiscard]] absl::StatusOr<BenchOptions> ParseBenchOptions(int argc,
                                                             char** argv);
// The usage text, its flags wrapped to `width` columns.
std::string BenchUsage(int width = 80);

// The process bodies; `in` and `out` are the pipes to the parent.
int RunBenchServer(const BenchOptions& options, int in, int out);
int RunBenchClient(const BenchOptions& options, int rank,
                   const std::string& grpc_address, int tcp_port, int pipe_port,
                   const std::string& tls_address, int in, int out);

// "grpc", "tcp", "pipe", "tls" or "plane" for a transport's letter.
const char* TransportName(char letter);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_BENCH_BENCH_ROLES_H_
