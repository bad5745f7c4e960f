#include "server/ps/bench/bench_roles.h"

#include <time.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "collectives/verifiable.h"
#include "common/flags.h"
#include "common/status_macros.h"
#include "common/tcp_congestion.h"
#include "common/units.h"
#include "server/ps/bench/bench_process.h"
#include "server/ps/bench/tcp_baseline.h"
#include "server/ps/bench/tcp_pipelined.h"
#include "server/ps/client/ps_client.h"
#include "server/ps/daemon/ps_server.h"

namespace gradsync {
namespace {

constexpr char kGrpcJob[] = "bench-grpc";
constexpr char kTcpJob[] = "bench-tcp";
constexpr char kTlsJob[] = "bench-tls";
constexpr char kPlaneJob[] = "bench-plane";
// How long a server or client process waits for its next command.
constexpr absl::Duration kCommandTimeout = absl::Hours(1);

// CPU time (user + system) of all threads of this process.
int64_t ProcessCpuNanos() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t MonotonicNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

PsShardConfig BenchShardConfig(const BenchOptions& options, const char* job) {
  PsShardConfig config;
  config.job_id = job;
  config.begin = 0;
  config.end = options.bytes / sizeof(float);
  config.num_workers = options.clients;
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.lr = 1.0;
  config.max_wait = options.timeout;
  return config;
}

// Per-round milliseconds of the shard's update (the mean and the
// optimizer, fused) and its wait for the last worker.
std::string ShardWork(const char* name, const PsShard& shard) {
  const PsShardStats stats = shard.Stats();
  const double rounds = std::max<double>(1, stats.updates);
  return absl::StrFormat(
      "%s: apply %.1f, wait-last %.1f", name,
      absl::ToDoubleMilliseconds(stats.apply_time) / rounds,
      absl::ToDoubleMilliseconds(stats.wait_last_worker) / rounds);
}

}  // namespace

namespace {

// A byte count >= 1 that fits an int (the transport's window and frame).
std::function<absl::Status(absl::string_view)> IntBytes(const char* flag,
                                                        int* out) {
  return [flag, out](absl::string_view value) -> absl::Status {
    ASSIGN_OR_RETURN(const uint64_t bytes, ParseSizeValue(flag, value, 1));
    if (bytes > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, " is at most 2G - 1, got '", value, "'"));
    }
    *out = static_cast<int>(bytes);
    return absl::OkStatus();
  };
}

// "grpc,pipe" -> "gp" (TransportName's letters); INVALID_ARGUMENT for an
// unknown or repeated name.
[[nodiscard]] absl::Status ParseTransports(absl::string_view value,
                                           std::string* out) {
  std::string letters;
  for (absl::string_view name : absl::StrSplit(value, ',')) {
    char letter = 0;
    for (char c : std::string("gtpsl")) {
      if (name == TransportName(c)) letter = c;
    }
    if (letter == 0 || letters.find(letter) != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown or repeated transport '", name,
                       "': use grpc, tcp, pipe, tls, plane"));
    }
    letters += letter;
  }
  *out = letters;
  return absl::OkStatus();
}

// The flag table (the underscore spellings are the bench's own; '-' works
// as well), writing into `options`.
std::vector<FlagSpec> BenchFlags(BenchOptions* options) {
  return {
      IntFlag("clients", "client processes (4)", 1, &options->clients),
      SizeFlag("bytes", "pushed and pulled per client and round (64M)", 1,
               &options->bytes),
      IntFlag("rounds", "measured rounds per transport (10)", 1,
              &options->rounds),
      IntFlag("warmup", "unmeasured rounds first (2)", 0, &options->warmup),
      SizeFlag("chunk_bytes", "largest push/pull stream message (1M)", 1,
               &options->chunk_bytes),
      FlagSpec(
          "window_bytes", "SIZE", "HTTP/2 stream window (16M)",
          IntBytes("--window_bytes", &options->transport.stream_window_bytes)),
      FlagSpec(
          "max_frame_bytes", "SIZE", "largest HTTP/2 DATA frame",
          IntBytes("--max_frame_bytes", &options->transport.max_frame_bytes)),
      SwitchFlag("bdp_probe", "let gRPC probe the bandwidth-delay product",
                 &options->transport.bdp_probe),
      FlagSpec("no_malloc_tuning", "", "leave malloc as it is",
               [options](absl::string_view) {
                 options->tune_malloc = false;
                 return absl::OkStatus();
               }),
      SizeFlag("partition_bytes",
               "gRPC path: the slice in partitions of at most SIZE, pipelined "
               "as a job's (0: one shard, the default)",
               0, &options->partition_bytes),
      FlagSpec("transports", "LIST",
               "the transports to alternate: grpc, tcp, pipe (the pipelined "
               "raw-TCP server), tls (grpc with mutual TLS, certificates "
               "made in memory), plane (the PS's tensor plane); default "
               "grpc,tcp,pipe",
               [options](absl::string_view value) {
                 return ParseTransports(value, &options->transports);
               }),
      FlagSpec("only", "grpc|tcp|pipe|tls|plane",
               "run one transport (for profiling)",
               [options](absl::string_view value) {
                 RETURN_IF_ERROR(ParseTransports(value, &options->transports));
                 if (options->transports.size() != 1) {
                   return absl::InvalidArgumentError("--only takes one name");
                 }
                 return absl::OkStatus();
               }),
      FlagSpec("tcp_congestion", "auto|default|NAME",
               "both paths' TCP congestion control (default auto: reno, as "
               "for every connection between processes of one host)",
               [options](absl::string_view value) {
                 options->transport.congestion_control = std::string(value);
                 return CheckCongestionControl(
                     options->transport.congestion_control);
               }),
      HelpFlag(&options->help),
      VersionFlag(&options->version),
  };
}

}  // namespace

const char* TransportName(char letter) {
  switch (letter) {
    case 'g':
      return "grpc";
    case 't':
      return "tcp";
    case 'p':
      return "pipe";
    case 's':
      return "tls";
    case 'l':
      return "plane";
  }
  return "?";
}

std::string BenchUsage(int width) {
  BenchOptions unused;
  return absl::StrCat(
      "usage: gradsync-ps-bench [flags]\n\n"
      "N client processes push and pull S bytes each per round through one\n"
      "parameter-server process, over gRPC, raw TCP and a pipelined raw-TCP\n"
      "server (and gRPC with mutual TLS: --transports grpc,tls) in turn;\n"
      "prints time and GB/s per round and the ratios. Sizes: K = 1024.\n\n",
      FlagsHelp(BenchFlags(&unused), width));
}

absl::StatusOr<BenchOptions> ParseBenchOptions(int argc, char** argv) {
  BenchOptions options;
  ASSIGN_OR_RETURN(const std::vector<std::string> positional,
                   ParseFlags(argc, argv, BenchFlags(&options),
                              /*env=*/nullptr));
  if (!positional.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown argument '", positional[0], "'"));
  }
  if (options.bytes % sizeof(float) != 0) {
    return absl::InvalidArgumentError("--bytes must be a multiple of 4");
  }
  if (options.chunk_bytes > kMaxChunkBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--chunk_bytes is at most ", FormatSize(kMaxChunkBytes)));
  }
  return options;
}

namespace {

// Job `job`'s shards (with --partition_bytes, its partitions) on
// `server`; returns partition 0 (for the summary: partitions share the work
// evenly).
[[nodiscard]] absl::StatusOr<std::shared_ptr<PsShard>> CreateBenchShards(
    const BenchOptions& options, PsServer& server, const char* job) {
  const size_t n = options.bytes / sizeof(float);
  ASSIGN_OR_RETURN(const std::vector<PsShardLocation> partitions,
                   PartitionedShardLocations(n, {server.address()},
                                             options.partition_bytes));
  for (size_t k = 0; k < partitions.size(); ++k) {
    ShardSpec spec;
    spec.config = BenchShardConfig(options, job);
    spec.config.shard = static_cast<int>(k);
    spec.config.begin = partitions[k].begin;
    spec.config.end = partitions[k].end;
    spec.num_shards = static_cast<int>(partitions.size());
    spec.total_elements = n;
    RETURN_IF_ERROR(server.service()->CreateShard(spec));
  }
  return server.service()->FindShard(job, 0);
}

// A PsServer on 127.0.0.1:0 with `security`, holding job `job`'s shards.
[[nodiscard]] absl::StatusOr<std::shared_ptr<PsShard>> StartGrpcShards(
    const BenchOptions& options, const GrpcSecurity& security, const char* job,
    std::unique_ptr<PsServer>* server) {
  PsServerOptions server_options;
  server_options.transport = options.transport;
  server_options.transport.security = security;
  // The plaintext server also serves the tensor plane (its own job).
  server_options.tensor_port = 0;
  ASSIGN_OR_RETURN(*server, PsServer::Start("127.0.0.1:0", server_options));
  return CreateBenchShards(options, **server, job);
}

bool WantsTls(const BenchOptions& options) {
  return options.transports.find('s') != std::string::npos;
}

GrpcSecurity BenchSecurity(const BenchOptions& options, bool server) {
  const CertAndKey& mine = server ? options.certs.node : options.certs.client;
  return GrpcSecurity::Mtls(options.certs.ca.cert_pem, mine.cert_pem,
                            mine.key_pem, "gradsync-ps-bench's own CA");
}

}  // namespace

int RunBenchServer(const BenchOptions& options, int in, int out) {
  if (options.tune_malloc) TuneMallocForTensorTraffic();
  const size_t n = options.bytes / sizeof(float);
  std::unique_ptr<PsServer> server, tls_server;
  absl::StatusOr<std::shared_ptr<PsShard>> grpc_shard =
      StartGrpcShards(options, GrpcSecurity(), kGrpcJob, &server);
  absl::StatusOr<std::shared_ptr<PsShard>> tls_shard =
      WantsTls(options) ? StartGrpcShards(options, BenchSecurity(options, true),
                                          kTlsJob, &tls_server)
                        : absl::StatusOr<std::shared_ptr<PsShard>>(nullptr);
  if (!grpc_shard.ok() || !tls_shard.ok()) {
    std::cerr << "bench server: " << grpc_shard.status() << " "
              << tls_shard.status() << "\n";
    return 1;
  }
  // The same shard code, threads included, behind both transports.
  PsShardConfig tcp_config = BenchShardConfig(options, kTcpJob);
  tcp_config.compute = server->service()->compute();
  absl::StatusOr<std::shared_ptr<PsShard>> tcp_shard =
      PsShard::Create(tcp_config, std::vector<float>(n, 0.0f));
  if (!tcp_shard.ok()) {
    std::cerr << "bench server: " << tcp_shard.status() << "\n";
    return 1;
  }
  absl::StatusOr<std::unique_ptr<TcpShardServer>> tcp = TcpShardServer::Start(
      *tcp_shard, options.timeout, options.transport.congestion_control);
  absl::StatusOr<std::unique_ptr<PipelinedTcpServer>> pipe =
      PipelinedTcpServer::Start(n, options.clients, options.chunk_bytes,
                                options.timeout,
                                options.transport.congestion_control);
  // The tensor plane: the gRPC server's own, with a job of its own.
  absl::StatusOr<std::shared_ptr<PsShard>> plane_shard =
      CreateBenchShards(options, *server, kPlaneJob);
  if (!tcp.ok() || !pipe.ok() || !plane_shard.ok()) {
    std::cerr << "bench server: " << tcp.status() << " " << pipe.status() << " "
              << plane_shard.status() << "\n";
    return 1;
  }
  WriteLineTo(
      out, absl::StrCat("serving ", server->address(), " ", (*tcp)->port(), " ",
                        (*pipe)->port(), " ",
                        tls_server != nullptr ? tls_server->address() : "-"));
  for (;;) {
    const std::string command = ReadLineFrom(in, kCommandTimeout);
    if (command != "cpu") break;
    WriteLineTo(out, absl::StrCat(ProcessCpuNanos()));
  }
  WriteLineTo(
      out,
      absl::StrCat(
          ShardWork("grpc", **grpc_shard), "; ", ShardWork("tcp", **tcp_shard),
          absl::StrFormat("; pipe: apply %.1f", (*pipe)->ApplyMsPerRound()),
          *tls_shard != nullptr ? "; " + ShardWork("tls", **tls_shard) : "",
          "; ", ShardWork("plane", **plane_shard)));
  pipe->reset();
  tcp->reset();
  server->Shutdown();
  if (tls_server != nullptr) tls_server->Shutdown();
  return 0;
}

int RunBenchClient(const BenchOptions& options, int rank,
                   const std::string& grpc_address, int tcp_port, int pipe_port,
                   const std::string& tls_address, int in, int out) {
  if (options.tune_malloc) TuneMallocForTensorTraffic();
  const size_t n = options.bytes / sizeof(float);
  // Rank r's gradient, the same every round: the verifiable input
  // (collectives/verifiable.h), (r + 1) * P(i) with P(i) in [1, 16]. The
  // mean over ranks, P(i) * (N + 1) / 2, is a multiple of 1/2, so every sum
  // and the parameters after each step, -(step + 1) * mean, are exact in
  // fp32.
  std::vector<float> grads(n), params(n), mean(n);
  FillInput(DataType::kFloat32, rank, grads.data(), n);
  for (size_t i = 0; i < n; ++i) {
    mean[i] = static_cast<float>(
        ReducedValue(ReduceOp::kAvg, DataType::kFloat32, options.clients, i));
  }
  PsClientOptions client_options;
  client_options.chunk_bytes = options.chunk_bytes;
  client_options.timeout = options.timeout;
  client_options.transport = options.transport;
  absl::StatusOr<std::vector<PsShardLocation>> partitions =
      PartitionedShardLocations(n, {grpc_address}, options.partition_bytes);
  absl::StatusOr<std::unique_ptr<PsClient>> grpc =
      partitions.ok()
          ? PsClient::Create(kGrpcJob, rank, n, *partitions, client_options)
          : partitions.status();
  absl::StatusOr<std::unique_ptr<TcpShardClient>> tcp = TcpShardClient::Connect(
      tcp_port, rank, options.timeout, options.transport.congestion_control);
  absl::StatusOr<std::unique_ptr<PipelinedTcpClient>> pipe =
      PipelinedTcpClient::Connect(pipe_port, rank, options.timeout,
                                  options.transport.congestion_control);
  PsClientOptions tls_options = client_options;
  tls_options.transport.security = BenchSecurity(options, false);
  absl::StatusOr<std::vector<PsShardLocation>> tls_partitions =
      PartitionedShardLocations(n, {tls_address}, options.partition_bytes);
  absl::StatusOr<std::unique_ptr<PsClient>> tls =
      !WantsTls(options) ? absl::StatusOr<std::unique_ptr<PsClient>>(nullptr)
      : tls_partitions.ok()
          ? PsClient::Create(kTlsJob, rank, n, *tls_partitions, tls_options)
          : tls_partitions.status();
  PsClientOptions plane_options = client_options;
  plane_options.tensor_plane = true;
  absl::StatusOr<std::unique_ptr<PsClient>> plane =
      partitions.ok()
          ? PsClient::Create(kPlaneJob, rank, n, *partitions, plane_options)
          : partitions.status();
  if (!grpc.ok() || !tcp.ok() || !pipe.ok() || !tls.ok() || !plane.ok()) {
    WriteLineTo(out, absl::StrCat("error: ", grpc.status().ToString(), " ",
                                  tcp.status().ToString(), " ",
                                  pipe.status().ToString(), " ",
                                  tls.status().ToString(), " ",
                                  plane.status().ToString()));
    return 1;
  }
  WriteLineTo(out, "ready");
  for (;;) {
    const std::string command = ReadLineFrom(in, kCommandTimeout);
    const std::vector<std::string> parts = absl::StrSplit(command, ' ');
    int64_t step = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &step) ||
        (parts[0] != "g" && parts[0] != "t" && parts[0] != "p" &&
         parts[0] != "l" && (parts[0] != "s" || *tls == nullptr) &&
         parts[0] != "check")) {
      return command == "quit" ? 0 : 1;
    }
    if (parts[0] == "check") {
      // Outside the timed rounds: parameters after `step` vs the exact
      // expected values.
      int64_t wrong = 0;
      const float factor = static_cast<float>(step + 1);
      for (size_t i = 0; i < n; ++i) wrong += params[i] != -factor * mean[i];
      WriteLineTo(out, absl::StrCat(wrong));
      continue;
    }
    const int64_t cpu = ProcessCpuNanos();
    const int64_t start = MonotonicNanos();
    const absl::Status status =
        parts[0] == "g" ? (*grpc)->PushPull(step, grads, absl::MakeSpan(params))
        : parts[0] == "t"
            ? (*tcp)->PushPull(step, grads, absl::MakeSpan(params))
        : parts[0] == "s"
            ? (*tls)->PushPull(step, grads, absl::MakeSpan(params))
        : parts[0] == "l"
            ? (*plane)->PushPull(step, grads, absl::MakeSpan(params))
            : (*pipe)->PushPull(step, grads, absl::MakeSpan(params));
    const int64_t end = MonotonicNanos();
    WriteLineTo(
        out, absl::StrCat(start, " ", end, " ", ProcessCpuNanos() - cpu, " ",
                          status.ok() ? "ok" : "error: " + status.ToString()));
  }
}

}  // namespace gradsync
