#include "server/ps/bench/bench_roles.h"

#include <time.h>

#include <cmath>
#include <cstring>
#include <iostream>
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
#include "common/tcp_congestion.h"
#include "common/units.h"
#include "server/ps/bench/bench_process.h"
#include "server/ps/bench/tcp_baseline.h"
#include "server/ps/ps_client.h"
#include "server/ps/ps_server.h"

namespace gradsync {
namespace {

constexpr char kGrpcJob[] = "bench-grpc";
constexpr char kTcpJob[] = "bench-tcp";
// How long a server or client process waits for its next command.
constexpr absl::Duration kCommandTimeout = absl::Hours(1);

[[nodiscard]] absl::StatusOr<size_t> ParseBytes(absl::string_view text) {
  size_t scale = 1;
  std::string digits = absl::AsciiStrToUpper(text);
  for (const auto& [suffix, factor] :
       {std::pair<const char*, size_t>{"GIB", size_t{1} << 30},
        {"MIB", size_t{1} << 20},
        {"KIB", size_t{1} << 10},
        {"G", size_t{1} << 30},
        {"M", size_t{1} << 20},
        {"K", size_t{1} << 10}}) {
    if (absl::EndsWith(digits, suffix)) {
      digits.resize(digits.size() - std::strlen(suffix));
      scale = factor;
      break;
    }
  }
  uint64_t value = 0;
  if (!absl::SimpleAtoi(digits, &value) || value == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a byte count (e.g. 65536, 64M)"));
  }
  return static_cast<size_t>(value) * scale;
}

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

const char* BenchUsage() {
  return "usage: gradsync-ps-bench [--clients N] [--bytes S] [--rounds R]\n"
         "         [--warmup W] [--chunk_bytes C] [--window_bytes B]\n"
         "         [--max_frame_bytes F] [--bdp_probe] [--no_malloc_tuning]\n"
         "         [--only grpc|tcp] [--tcp_congestion auto|default|NAME]\n"
         "\n"
         "N client processes push and pull S bytes each per round through\n"
         "one parameter-server process, over gRPC and over raw TCP\n"
         "alternately; prints GB/s per round and the gRPC/TCP ratio.\n"
         "Defaults: 4 clients, 64M, 10 rounds (+2 warm-up), 1M chunks,\n"
         "16M window, BDP probing off, malloc tuned. Sizes take K/M/G.\n"
         "--only runs one transport (for profiling). --tcp_congestion\n"
         "sets both paths' TCP congestion control (default auto: reno,\n"
         "as for every connection between processes of one host).\n";
}

absl::StatusOr<BenchOptions> ParseBenchOptions(int argc, char** argv) {
  BenchOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
    }
    auto next = [&]() -> absl::StatusOr<std::string> {
      if (!value.empty()) return value;
      if (i + 1 == argc) {
        return absl::InvalidArgumentError(absl::StrCat(arg, " needs a value"));
      }
      return std::string(argv[++i]);
    };
    auto integer = [&](int* out, int min) -> absl::Status {
      absl::StatusOr<std::string> text = next();
      if (!text.ok()) return text.status();
      if (!absl::SimpleAtoi(*text, out) || *out < min) {
        return absl::InvalidArgumentError(
            absl::StrCat(arg, " must be an integer >= ", min));
      }
      return absl::OkStatus();
    };
    auto bytes = [&](size_t* out) -> absl::Status {
      absl::StatusOr<std::string> text = next();
      if (!text.ok()) return text.status();
      absl::StatusOr<size_t> parsed = ParseBytes(*text);
      if (!parsed.ok()) return parsed.status();
      *out = *parsed;
      return absl::OkStatus();
    };
    absl::Status status;
    size_t window = 0, frame = 0;
    if (arg == "--help" || arg == "-h") {
      options.help = true;
    } else if (arg == "--clients") {
      status = integer(&options.clients, 1);
    } else if (arg == "--rounds") {
      status = integer(&options.rounds, 1);
    } else if (arg == "--warmup") {
      status = integer(&options.warmup, 0);
    } else if (arg == "--bytes") {
      status = bytes(&options.bytes);
    } else if (arg == "--chunk_bytes") {
      status = bytes(&options.chunk_bytes);
    } else if (arg == "--window_bytes") {
      status = bytes(&window);
      options.transport.stream_window_bytes = static_cast<int>(window);
    } else if (arg == "--max_frame_bytes") {
      status = bytes(&frame);
      options.transport.max_frame_bytes = static_cast<int>(frame);
    } else if (arg == "--bdp_probe") {
      options.transport.bdp_probe = true;
    } else if (arg == "--no_malloc_tuning") {
      options.tune_malloc = false;
    } else if (arg == "--tcp_congestion") {
      absl::StatusOr<std::string> name = next();
      if (!name.ok()) return name.status();
      status = CheckCongestionControl(*name);
      options.transport.congestion_control = *name;
    } else if (arg == "--only") {
      absl::StatusOr<std::string> which = next();
      if (!which.ok()) return which.status();
      if (*which != "grpc" && *which != "tcp") {
        return absl::InvalidArgumentError("--only takes grpc or tcp");
      }
      options.transports = *which == "grpc" ? "g" : "t";
    } else {
      status = absl::InvalidArgumentError(
          absl::StrCat("unknown argument '", argv[i], "'"));
    }
    if (!status.ok()) return status;
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

int RunBenchServer(const BenchOptions& options, int in, int out) {
  if (options.tune_malloc) TuneMallocForTensorTraffic();
  PsServerOptions server_options;
  server_options.transport = options.transport;
  absl::StatusOr<std::unique_ptr<PsServer>> server =
      PsServer::Start("127.0.0.1:0", server_options);
  if (!server.ok()) {
    std::cerr << "bench server: " << server.status() << "\n";
    return 1;
  }
  ShardSpec spec;
  spec.config = BenchShardConfig(options, kGrpcJob);
  spec.total_elements = spec.config.end;
  absl::Status created = (*server)->service()->CreateShard(spec);
  absl::StatusOr<std::shared_ptr<PsShard>> grpc_shard =
      (*server)->service()->FindShard(kGrpcJob, 0);
  // The same shard code, threads included, behind both transports.
  PsShardConfig tcp_config = BenchShardConfig(options, kTcpJob);
  tcp_config.compute = (*server)->service()->compute();
  absl::StatusOr<std::shared_ptr<PsShard>> tcp_shard = PsShard::Create(
      tcp_config, std::vector<float>(options.bytes / sizeof(float), 0.0f));
  if (!created.ok() || !grpc_shard.ok() || !tcp_shard.ok()) {
    std::cerr << "bench server: " << created << " " << grpc_shard.status()
              << " " << tcp_shard.status() << "\n";
    return 1;
  }
  absl::StatusOr<std::unique_ptr<TcpShardServer>> tcp = TcpShardServer::Start(
      *tcp_shard, options.timeout, options.transport.congestion_control);
  if (!tcp.ok()) {
    std::cerr << "bench server: " << tcp.status() << "\n";
    return 1;
  }
  WriteLineTo(
      out, absl::StrCat("serving ", (*server)->address(), " ", (*tcp)->port()));
  for (;;) {
    const std::string command = ReadLineFrom(in, kCommandTimeout);
    if (command != "cpu") break;
    WriteLineTo(out, absl::StrCat(ProcessCpuNanos()));
  }
  WriteLineTo(out, absl::StrCat(ShardWork("grpc", **grpc_shard), "; ",
                                ShardWork("tcp", **tcp_shard)));
  tcp->reset();
  (*server)->Shutdown();
  return 0;
}

int RunBenchClient(const BenchOptions& options, int rank,
                   const std::string& grpc_address, int tcp_port, int in,
                   int out) {
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
  absl::StatusOr<std::unique_ptr<PsClient>> grpc = PsClient::Create(
      kGrpcJob, rank, n, {{grpc_address, 0, 0, n}}, client_options);
  absl::StatusOr<std::unique_ptr<TcpShardClient>> tcp = TcpShardClient::Connect(
      tcp_port, rank, options.timeout, options.transport.congestion_control);
  if (!grpc.ok() || !tcp.ok()) {
    WriteLineTo(out, absl::StrCat("error: ", grpc.status().ToString(), " ",
                                  tcp.status().ToString()));
    return 1;
  }
  WriteLineTo(out, "ready");
  for (;;) {
    const std::string command = ReadLineFrom(in, kCommandTimeout);
    const std::vector<std::string> parts = absl::StrSplit(command, ' ');
    int64_t step = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &step) ||
        (parts[0] != "g" && parts[0] != "t" && parts[0] != "check")) {
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
                        : (*tcp)->PushPull(step, grads, absl::MakeSpan(params));
    const int64_t end = MonotonicNanos();
    WriteLineTo(
        out, absl::StrCat(start, " ", end, " ", ProcessCpuNanos() - cpu, " ",
                          status.ok() ? "ok" : "error: " + status.ToString()));
  }
}

}  // namespace gradsync
