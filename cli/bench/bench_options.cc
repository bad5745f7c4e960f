#include "cli/bench/bench_options.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli/bench/ps_options.h"
#include "cli/bench/verifiable.h"
#include "common/flags.h"
#include "common/status_macros.h"
#include "common/units.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {

// Options plus what was given explicitly, for the checks that need it.
struct ParseState {
  BenchOptions options;
  bool factor_set = false;
  bool increment_set = false;
  bool ranks_set = false;
  bool world_set = false;
  bool ps_shards_set = false;
  bool ps_transport_set = false;
  // Where --rank and --world came from, for errors: the flag, or the
  // launcher's variable ("$SLURM_PROCID").
  std::string rank_from = "--rank";
  std::string world_from = "--world";
};

[[nodiscard]] absl::Status ParseInt(absl::string_view flag,
                                    absl::string_view value, int min,
                                    int* out) {
  int parsed = 0;
  if (!absl::SimpleAtoi(value, &parsed) || parsed < min) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " wants an integer >= ", min, ", got '", value, "'"));
  }
  *out = parsed;
  return absl::OkStatus();
}

[[nodiscard]] absl::Status ParseSizeFlag(absl::string_view flag,
                                         absl::string_view value, size_t* out) {
  ASSIGN_OR_RETURN(*out, ParseSizeValue(flag, value, 0));
  return absl::OkStatus();
}

[[nodiscard]] absl::Status ParseOptionalSize(absl::string_view flag,
                                             absl::string_view value,
                                             std::optional<size_t>* out) {
  size_t size = 0;
  RETURN_IF_ERROR(ParseSizeFlag(flag, value, &size));
  *out = size;
  return absl::OkStatus();
}

// A row of the table below: a setter on the parse state.
using Setter = absl::Status (*)(absl::string_view value, ParseState* state);
struct Row {
  char short_name;         // 0: none
  const char* long_name;   // without "--"
  const char* value_name;  // nullptr: a switch that takes no value
  const char* help;
  Setter set;
};

// The flag table: one row per flag, nccl-tests' letters first.
const Row kRows[] = {
    {'b', "minbytes", "SIZE", "smallest size in bytes, K/M/G suffixes (1M)",
     [](absl::string_view v, ParseState* s) {
       return ParseSizeFlag("-b", v, &s->options.min_bytes);
     }},
    {'e', "maxbytes", "SIZE", "largest size in bytes (64M)",
     [](absl::string_view v, ParseState* s) {
       return ParseSizeFlag("-e", v, &s->options.max_bytes);
     }},
    {'f', "stepfactor", "N", "multiply the size by N each step (2)",
     [](absl::string_view v, ParseState* s) {
       s->factor_set = true;
       return ParseInt("-f", v, 2, &s->options.factor);
     }},
    {'i', "stepbytes", "SIZE", "add SIZE each step instead of -f",
     [](absl::string_view v, ParseState* s) {
       s->increment_set = true;
       RETURN_IF_ERROR(ParseSizeFlag("-i", v, &s->options.increment));
       if (s->options.increment == 0) {
         return absl::InvalidArgumentError("-i wants a size > 0");
       }
       return absl::OkStatus();
     }},
    {'n', "iters", "N", "timed iterations per size (20)",
     [](absl::string_view v, ParseState* s) {
       return ParseInt("-n", v, 1, &s->options.iters);
     }},
    {'w', "warmup_iters", "N", "untimed iterations per size (5)",
     [](absl::string_view v, ParseState* s) {
       return ParseInt("-w", v, 0, &s->options.warmup);
     }},
    {'c', "check", "0|1", "verify every element of the results (1)",
     [](absl::string_view v, ParseState* s) {
       if (v != "0" && v != "1") {
         return absl::InvalidArgumentError(
             absl::StrCat("-c wants 0 or 1, got '", v, "'"));
       }
       s->options.check = v == "1";
       return absl::OkStatus();
     }},
    {'o', "op", "OP", "sum, avg, max or min (sum)",
     [](absl::string_view v, ParseState* s) {
       ASSIGN_OR_RETURN(s->options.op, ParseReduceOp(v));
       return absl::OkStatus();
     }},
    {'d', "datatype", "TYPE",
     "float, double, int32, bfloat16 (bf16) or half (fp16) (float)",
     [](absl::string_view v, ParseState* s) {
       ASSIGN_OR_RETURN(s->options.type, ParseDataType(v));
       return absl::OkStatus();
     }},
    {'r', "root", "RANK", "broadcast root (0)",
     [](absl::string_view v, ParseState* s) {
       return ParseInt("-r", v, 0, &s->options.root);
     }},
    {0, "json", nullptr, "print JSON lines (one per size, then a summary)",
     [](absl::string_view, ParseState* s) {
       s->options.json = true;
       return absl::OkStatus();
     }},
    {0, "plot", "FILE", "also draw busbw against size into FILE (a PNG)",
     [](absl::string_view v, ParseState* s) {
       s->options.plot = std::string(v);
       return absl::OkStatus();
     }},
    {0, "link-gbps", "B",
     "--plot: the links' bandwidth in GB/s, drawn as the ideal busbw",
     [](absl::string_view v, ParseState* s) {
       ASSIGN_OR_RETURN(s->options.link_gbps,
                        ParseDoubleValue("--link-gbps", v, 0));
       return absl::OkStatus();
     }},
    {0, "results-file", "FILE",
     "rank 0 also writes the JSON lines into FILE (--plot sets it)",
     [](absl::string_view v, ParseState* s) {
       s->options.results_file = std::string(v);
       return absl::OkStatus();
     }},
    {0, "ranks", "N", "spawn N local ranks on 127.0.0.1 (2)",
     [](absl::string_view v, ParseState* s) {
       s->ranks_set = true;
       return ParseInt("--ranks", v, 1, &s->options.ranks);
     }},
    {0, "backend", "NAME", "ring (TCP), nccl or ps (ring)",
     [](absl::string_view v, ParseState* s) {
       ASSIGN_OR_RETURN(s->options.backend, ParseBackend(v));
       return absl::OkStatus();
     }},
    {0, "algo", "NAME", "ring backend: auto, ring, hd or hierarchical (auto)",
     [](absl::string_view v, ParseState* s) {
       s->options.algorithm = std::string(v);
       return absl::OkStatus();
     }},
    {0, "host-layout", "N+N+...",
     "ring backend: pretend consecutive ranks live on hosts of N ranks "
     "each (3+1: ranks 0-2 on one, 3 on another)",
     [](absl::string_view v, ParseState* s) {
       s->options.host_layout.clear();
       for (absl::string_view part : absl::StrSplit(v, '+')) {
         int ranks = 0;
         RETURN_IF_ERROR(ParseInt("--host-layout", part, 1, &ranks));
         s->options.host_layout.push_back(ranks);
       }
       return absl::OkStatus();
     }},
    {0, "transport", "NAME",
     "ring, ps: auto (shared memory to ranks on this host), tcp or shm",
     [](absl::string_view v, ParseState* s) {
       s->options.transport = std::string(v);  // checked by the backend
       return absl::OkStatus();
     }},
    {0, "segment-bytes", "SIZE", "ring pipelining segment",
     [](absl::string_view v, ParseState* s) {
       return ParseOptionalSize("--segment-bytes", v,
                                &s->options.segment_bytes);
     }},
    {0, "hd-threshold", "SIZE",
     "auto: halving-doubling up to SIZE (above it the ring, or hierarchical "
     "where the placement allows)",
     [](absl::string_view v, ParseState* s) {
       return ParseOptionalSize("--hd-threshold", v,
                                &s->options.hd_threshold_bytes);
     }},
    {0, "sub-block-bytes", "SIZE", "ring receive/reduce sub-block",
     [](absl::string_view v, ParseState* s) {
       return ParseOptionalSize("--sub-block-bytes", v,
                                &s->options.sub_block_bytes);
     }},
    {0, "socket-buffer", "SIZE",
     "send buffer for sizes over 2M (256K; 0 = kernel's)",
     [](absl::string_view v, ParseState* s) {
       return ParseOptionalSize("--socket-buffer", v,
                                &s->options.socket_buffer_bytes);
     }},
    {0, "small-socket-buffer", "SIZE",
     "send buffer up to 2M, receive buffer (4M; 0 = as above)",
     [](absl::string_view v, ParseState* s) {
       return ParseOptionalSize("--small-socket-buffer", v,
                                &s->options.small_socket_buffer_bytes);
     }},
    {0, "tcp-congestion", "NAME",
     "ring, ps: auto (reno to peers on this host), default, or an "
     "algorithm (--ps-addresses servers keep their own)",
     [](absl::string_view v, ParseState* s) {
       s->options.congestion_control = std::string(v);
       return absl::OkStatus();
     }},
    {0, "spin-polls", "N", "ring: non-blocking polls before a receive blocks",
     [](absl::string_view v, ParseState* s) {
       int polls = 0;
       RETURN_IF_ERROR(ParseInt("--spin-polls", v, 0, &polls));
       s->options.spin_polls = polls;
       return absl::OkStatus();
     }},
    {0, "device", "N", "nccl: CUDA device (rank % device count)",
     [](absl::string_view v, ParseState* s) {
       return ParseInt("--device", v, 0, &s->options.device);
     }},
    {0, "ps-shards", "K", "ps: shards (1, or one per --ps-addresses)",
     [](absl::string_view v, ParseState* s) {
       s->ps_shards_set = true;
       return ParseInt("--ps-shards", v, 1, &s->options.ps_shards);
     }},
    {0, "ps-addresses", "LIST",
     "ps: running gradsync-ps host:port,... (start K)",
     [](absl::string_view v, ParseState* s) {
       s->options.ps_addresses = absl::StrSplit(v, ',');
       return absl::OkStatus();
     }},
    {0, "ps-chunk", "SIZE", "ps: largest push/pull stream message (1M)",
     [](absl::string_view v, ParseState* s) {
       return ParseOptionalSize("--ps-chunk", v, &s->options.ps_chunk_bytes);
     }},
    {0, "ps-partition", "SIZE",
     "ps: pipeline each server's slice in partitions of SIZE (4M; 0: off)",
     [](absl::string_view v, ParseState* s) {
       std::optional<size_t> size;
       RETURN_IF_ERROR(ParseOptionalSize("--ps-partition", v, &size));
       s->options.ps_partition_bytes = size.value_or(0);
       return absl::OkStatus();
     }},
    {0, "ps-transport", "plane|grpc",
     "ps: the tensors over the servers' tensor planes (HMAC-authenticated "
     "plain TCP; plane, the default) or gRPC streams (grpc)",
     [](absl::string_view v, ParseState* s) {
       if (v != "plane" && v != "grpc") {
         return absl::InvalidArgumentError(
             absl::StrCat("--ps-transport is '", v, "'; use plane or grpc"));
       }
       s->options.ps_transport = std::string(v);
       s->ps_transport_set = true;
       return absl::OkStatus();
     }},
    {0, "timeout", "SECONDS", "rendezvous and per-collective deadline (60)",
     [](absl::string_view v, ParseState* s) {
       ASSIGN_OR_RETURN(s->options.timeout, ParseSecondsValue("--timeout", v));
       return absl::OkStatus();
     }},
    {0, "deadline", "SECONDS", "launcher: stop the whole run after (3600)",
     [](absl::string_view v, ParseState* s) {
       ASSIGN_OR_RETURN(s->options.deadline,
                        ParseSecondsValue("--deadline", v));
       return absl::OkStatus();
     }},
    {0, "world", "N", "join a run of N ranks (with --rank, --store)",
     [](absl::string_view v, ParseState* s) {
       s->world_set = true;
       return ParseInt("--world", v, 1, &s->options.world);
     }},
    {0, "rank", "R", "this process's rank in --world",
     [](absl::string_view v, ParseState* s) {
       return ParseInt("--rank", v, 0, &s->options.rank);
     }},
    {0, "store", "HOST:PORT", "rendezvous store (gradsync-store --listen)",
     [](absl::string_view v, ParseState* s) {
       s->options.store = std::string(v);
       return absl::OkStatus();
     }},
    {0, "listen-host", "IP", "address this rank listens on (127.0.0.1)",
     [](absl::string_view v, ParseState* s) {
       s->options.listen_host = std::string(v);
       return absl::OkStatus();
     }},
    {0, "advertise-host", "IP", "address published to peers (listen-host)",
     [](absl::string_view v, ParseState* s) {
       s->options.advertise_host = std::string(v);
       return absl::OkStatus();
     }},
    {0, "job", "ID", "run id; ranks of one run share it (bench)",
     [](absl::string_view v, ParseState* s) {
       if (v.empty()) return absl::InvalidArgumentError("--job is empty");
       s->options.job = std::string(v);
       return absl::OkStatus();
     }},
    {'h', "help", nullptr, "print this help",
     [](absl::string_view, ParseState* s) {
       s->options.help = true;
       return absl::OkStatus();
     }},
};

// The table's rows as the flags library's, setting `state`.
std::vector<FlagSpec> Flags(ParseState* state) {
  std::vector<FlagSpec> flags;
  for (const Row& row : kRows) {
    FlagSpec flag{
        row.long_name, row.value_name == nullptr ? "" : row.value_name,
        row.help,
        [set = row.set, state](absl::string_view v) { return set(v, state); }};
    flag.short_name = row.short_name;
    flags.push_back(std::move(flag));
  }
  return flags;
}

[[nodiscard]] absl::Status Validate(const ParseState& state) {
  const BenchOptions& o = state.options;
  if (o.min_bytes > o.max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("-b ", o.min_bytes, " is larger than -e ", o.max_bytes));
  }
  if (state.factor_set && state.increment_set) {
    return absl::InvalidArgumentError(
        "-f (multiply) and -i (add) both set the step; use one");
  }
  if (o.increment == 0 && o.min_bytes == 0) {
    return absl::InvalidArgumentError(
        "-b 0 never grows with -f; start at 1 or step with -i");
  }
  if (o.member()) {
    if (state.ranks_set) {
      return absl::InvalidArgumentError(
          "--ranks launches local ranks, --rank joins a run; use one");
    }
    if (!state.world_set) {
      return absl::InvalidArgumentError(
          absl::StrCat("--rank ", o.rank, " needs --world N with N > rank"));
    }
    if (o.rank >= o.world && state.rank_from == "--rank" &&
        state.world_from == "--world") {
      return absl::InvalidArgumentError(
          absl::StrCat("--rank ", o.rank, " needs --world N with N > rank"));
    }
    if (o.rank >= o.world) {
      return absl::InvalidArgumentError(
          absl::StrCat("rank ", o.rank, " (", state.rank_from,
                       ") must be below the world size, ", o.world, " (",
                       state.world_from, ")"));
    }
    if (o.store.empty()) {
      return absl::InvalidArgumentError(
          "--rank needs --store HOST:PORT (start one with gradsync-store "
          "--listen 0.0.0.0:29500)");
    }
  } else if (state.world_set) {
    return absl::InvalidArgumentError("--world needs --rank and --store");
  } else if (!o.store.empty()) {
    return absl::InvalidArgumentError(
        "--store joins a run: give --rank and --world, or run under srun, "
        "mpirun or torchrun, whose environment names them");
  }
  const int world = o.member() ? o.world : o.ranks;
  if (o.check && world > kMaxExactRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("-c 1 checks exactly only up to ", kMaxExactRanks,
                     " ranks; run with -c 0"));
  }
  if (HasRoot(o.collective) && o.root >= world) {
    return absl::InvalidArgumentError(
        absl::StrCat("-r ", o.root, " is not a rank of ", world));
  }
  if (!o.host_layout.empty()) {
    int ranks = 0;
    for (int n : o.host_layout) ranks += n;
    if (o.backend != Backend::kRing) {
      return absl::InvalidArgumentError(
          "--host-layout places the ring backend's ranks; use --backend ring");
    }
    if (ranks != world) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--host-layout places ", ranks, " ranks, but the run has ", world,
          "; make its numbers add up to ", world));
    }
  }
  if (o.backend == Backend::kNccl && o.algorithm != "auto") {
    return absl::InvalidArgumentError(
        "--algo chooses the ring backend's algorithm; NCCL picks its own");
  }
  if (o.backend == Backend::kPs) return ValidatePsOptions(o);
  if (state.ps_shards_set || !o.ps_addresses.empty() || o.ps_chunk_bytes ||
      state.ps_transport_set) {
    return absl::InvalidArgumentError(
        "--ps-shards, --ps-addresses, --ps-chunk and --ps-transport need "
        "--backend ps");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Backend> ParseBackend(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "ring" || n == "tcp") return Backend::kRing;
  if (n == "nccl") return Backend::kNccl;
  if (n == "ps") return Backend::kPs;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown backend '", name, "'; use ring, nccl or ps"));
}

absl::string_view BackendName(Backend backend) {
  switch (backend) {
    case Backend::kRing:
      return "ring";
    case Backend::kNccl:
      return "nccl";
    case Backend::kPs:
      return "ps";
  }
  return "invalid";
}

// The launchers whose environment names a process's rank and world size,
// in the order they are asked: the innermost launcher first, as the outer
// ones' variables are inherited. RANK/WORLD_SIZE, set explicitly (by
// torchrun, or by hand), win over the schedulers': torchrun started by srun
// on each node runs children that still carry the node's SLURM_PROCID and
// SLURM_NTASKS. mpirun inside a Slurm allocation likewise inherits the batch
// step's SLURM_PROCID, so Open MPI's pair comes before Slurm's.
struct LauncherVars {
  const char* rank;
  const char* world;
};
constexpr LauncherVars kLaunchers[] = {
    {"RANK", "WORLD_SIZE"},                            // torchrun, by hand
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},  // Open MPI's mpirun
    {"SLURM_PROCID", "SLURM_NTASKS"},                  // Slurm's srun
};

// With --store but no --rank or no --world: the missing ones from the
// first launcher whose two variables are both set.
[[nodiscard]] absl::Status RankFromLauncher(const EnvLookup& env,
                                            ParseState* state) {
  BenchOptions& o = state->options;
  if (o.store.empty() || state->ranks_set || (o.member() && state->world_set)) {
    return absl::OkStatus();
  }
  for (const LauncherVars& vars : kLaunchers) {
    const std::optional<std::string> rank = env(vars.rank);
    const std::optional<std::string> world = env(vars.world);
    if (!rank.has_value() || !world.has_value()) continue;
    if (!o.member()) {
      state->rank_from = absl::StrCat("$", vars.rank);
      RETURN_IF_ERROR(ParseInt(state->rank_from, *rank, 0, &o.rank));
    }
    if (!state->world_set) {
      state->world_from = absl::StrCat("$", vars.world);
      RETURN_IF_ERROR(ParseInt(state->world_from, *world, 1, &o.world));
      state->world_set = true;
    }
    return absl::OkStatus();
  }
  return absl::OkStatus();
}

absl::StatusOr<BenchOptions> ParseBenchArgs(
    const std::vector<std::string>& args, const EnvLookup& env) {
  ParseState state;
  ASSIGN_OR_RETURN(const std::vector<std::string> positional,
                   ParseFlags(args, Flags(&state), /*env=*/nullptr));
  if (state.options.help) return state.options;
  RETURN_IF_ERROR(RankFromLauncher(env, &state));
  if (positional.size() != 1) {
    return absl::InvalidArgumentError(
        positional.empty()
            ? "name a collective: allreduce, reducescatter, allgather or "
              "broadcast"
            : absl::StrCat("unexpected argument '", positional[1], "'"));
  }
  ASSIGN_OR_RETURN(state.options.collective, ParseCollective(positional[0]));
  RETURN_IF_ERROR(Validate(state));
  return state.options;
}

std::vector<FlagSpec> BenchFlagTable() { return Flags(/*state=*/nullptr); }

std::string BenchUsage() {
  std::string usage =
      "usage: gradsync bench allreduce|reducescatter|allgather|broadcast "
      "[flags]\n\n"
      "Measures a collective like nccl-tests: every rank's input is crafted "
      "so the\nexact result is known; each size prints time, algbw, busbw "
      "and #wrong.\nExit status: 0 all results right, 2 wrong elements, 1 "
      "error.\n\n";
  ParseState unused;
  absl::StrAppend(&usage, FlagsHelp(Flags(&unused), TerminalWidth()));
  absl::StrAppend(
      &usage,
      "\nLocal:      gradsync bench allreduce --ranks 4 -b 1M -e 256M\n"
      "Multi-host: gradsync-store --listen 0.0.0.0:29500   (on one host)\n"
      "            gradsync bench allreduce --world N --rank R \\\n"
      "              --store HOST:29500 --listen-host THIS_HOST_IP   (each "
      "rank)\n"
      "            (under srun, mpirun or torchrun, --rank and --world come "
      "from\n"
      "            RANK/WORLD_SIZE, else OMPI_COMM_WORLD_RANK/SIZE, else "
      "SLURM_PROCID/SLURM_NTASKS)\n"
      "PS:         gradsync bench allreduce --backend ps --ps-shards 2 "
      "--ranks 4\n"
      "            (time = one push of S bytes + pull of S bytes per rank; "
      "busbw =\n"
      "            algbw * 2 max(1, N/K), the bytes the busiest link moves "
      "per byte of S)\n");
  return usage;
}

std::vector<std::string> StripFlag(const std::vector<std::string>& args,
                                   absl::string_view name) {
  std::vector<std::string> out;
  const std::string with_value = absl::StrCat(name, "=");
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name) {
      ++i;  // and its value
      continue;
    }
    if (absl::StartsWith(args[i], with_value)) continue;
    out.push_back(args[i]);
  }
  return out;
}

}  // namespace bench
}  // namespace cli
}  // namespace gradsync
