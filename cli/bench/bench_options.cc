#include "cli/bench/bench_options.h"

#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/bench/ps_options.h"
#include "cli/bench/verifiable.h"
#include "common/flags.h"
#include "common/status_macros.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {

// `row` with `*given` set whenever its value is parsed (the checks that
// need to know what was given explicitly read it).
FlagSpec Noting(FlagSpec row, bool* given) {
  row.set = [set = std::move(row.set), given](absl::string_view value) {
    *given = true;
    return set(value);
  };
  return row;
}

// `row` shown in the help with `value_name` (RANK for -r, not N).
FlagSpec ShownAs(FlagSpec row, std::string value_name) {
  row.value_name = std::move(value_name);
  return row;
}

// A byte count (common/flags.h's size rule) >= 0 into an optional: unset
// keeps the backend's default.
FlagSpec OptionalSizeFlag(std::string name, std::string help,
                          std::optional<size_t>* out) {
  const std::string flag = absl::StrCat("--", name);
  return FlagSpec{std::move(name), "SIZE", std::move(help),
                  [flag, out](absl::string_view value) -> absl::Status {
                    ASSIGN_OR_RETURN(*out, ParseSizeValue(flag, value, 0));
                    return absl::OkStatus();
                  }};
}

// An integer >= min that fits an int, from a flag or a variable (`what`
// names it in the error).
[[nodiscard]] absl::StatusOr<int> ParseIntOf(absl::string_view what,
                                             absl::string_view value, int min) {
  ASSIGN_OR_RETURN(const int64_t parsed, ParseIntValue(what, value, min));
  if (parsed > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " wants an integer up to ",
                     std::numeric_limits<int>::max(), ", got '", value, "'"));
  }
  return static_cast<int>(parsed);
}

}  // namespace

std::vector<FlagSpec> BenchFlags(BenchParse* parse) {
  BenchOptions* o = &parse->options;
  return {
      SizeFlag("minbytes", "smallest size in bytes, K/M/G suffixes (1M)", 0,
               &o->min_bytes)
          .Short('b'),
      SizeFlag("maxbytes", "largest size in bytes (64M)", 0, &o->max_bytes)
          .Short('e'),
      Noting(IntFlag("stepfactor", "multiply the size by N each step (2)", 2,
                     &o->factor),
             &parse->factor_set)
          .Short('f'),
      Noting(SizeFlag("stepbytes", "add SIZE each step instead of -f", 1,
                      &o->increment),
             &parse->increment_set)
          .Short('i'),
      IntFlag("iters", "timed iterations per size (20)", 1, &o->iters)
          .Short('n'),
      IntFlag("warmup_iters", "untimed iterations per size (5)", 0, &o->warmup)
          .Short('w'),
      FlagSpec{"check", "0|1", "verify every element of the results (1)",
               [o](absl::string_view v) {
                 if (v != "0" && v != "1") {
                   return absl::InvalidArgumentError(
                       absl::StrCat("--check wants 0 or 1, got '", v, "'"));
                 }
                 o->check = v == "1";
                 return absl::OkStatus();
               }}
          .Short('c'),
      FlagSpec{"op", "OP", "sum, avg, max or min (sum)",
               [o](absl::string_view v) -> absl::Status {
                 ASSIGN_OR_RETURN(o->op, ParseReduceOp(v));
                 return absl::OkStatus();
               }}
          .Short('o'),
      FlagSpec{"datatype", "TYPE",
               "float, double, int32, bfloat16 (bf16) or half (fp16) (float)",
               [o](absl::string_view v) -> absl::Status {
                 ASSIGN_OR_RETURN(o->type, ParseDataType(v));
                 return absl::OkStatus();
               }}
          .Short('d'),
      ShownAs(IntFlag("root", "broadcast root (0)", 0, &o->root), "RANK")
          .Short('r'),
      SwitchFlag("json", "print JSON lines (one per size, then a summary)",
                 &o->json),
      StringFlag("plot", "FILE",
                 "also draw busbw against size into FILE (a PNG)", &o->plot),
      DoubleFlag("link-gbps", "B",
                 "--plot: the links' bandwidth in GB/s, drawn as the ideal "
                 "busbw",
                 0, &o->link_gbps),
      StringFlag("results-file", "FILE",
                 "rank 0 also writes the JSON lines into FILE (--plot sets "
                 "it)",
                 &o->results_file),
      Noting(IntFlag("ranks", "spawn N local ranks on 127.0.0.1 (2)", 1,
                     &o->ranks),
             &parse->ranks_set),
      FlagSpec{"backend", "NAME", "ring (TCP), nccl or ps (ring)",
               [o](absl::string_view v) -> absl::Status {
                 ASSIGN_OR_RETURN(o->backend, ParseBackend(v));
                 return absl::OkStatus();
               }},
      StringFlag("algo", "NAME",
                 "ring backend: auto, ring, hd or hierarchical (auto)",
                 &o->algorithm),
      FlagSpec{"host-layout", "N+N+...",
               "ring backend: pretend consecutive ranks live on hosts of N "
               "ranks each (3+1: ranks 0-2 on one, 3 on another)",
               [o](absl::string_view v) -> absl::Status {
                 o->host_layout.clear();
                 for (absl::string_view part : absl::StrSplit(v, '+')) {
                   ASSIGN_OR_RETURN(const int ranks,
                                    ParseIntOf("--host-layout", part, 1));
                   o->host_layout.push_back(ranks);
                 }
                 return absl::OkStatus();
               }},
      // Checked by the backend (CheckBackendAvailable).
      StringFlag("transport", "NAME",
                 "ring, ps: auto (shared memory to ranks on this host), tcp "
                 "or shm",
                 &o->transport),
      OptionalSizeFlag("segment-bytes", "ring pipelining segment",
                       &o->segment_bytes),
      OptionalSizeFlag("hd-threshold",
                       "auto: halving-doubling up to SIZE (above it the ring, "
                       "or hierarchical where the placement allows)",
                       &o->hd_threshold_bytes),
      OptionalSizeFlag("sub-block-bytes", "ring receive/reduce sub-block",
                       &o->sub_block_bytes),
      OptionalSizeFlag("socket-buffer",
                       "send buffer for sizes over 2M (256K; 0 = kernel's)",
                       &o->socket_buffer_bytes),
      OptionalSizeFlag("small-socket-buffer",
                       "send buffer up to 2M, receive buffer (4M; 0 = as "
                       "above)",
                       &o->small_socket_buffer_bytes),
      FlagSpec{"tcp-congestion", "NAME",
               "ring, ps: auto (reno to peers on this host), default, or an "
               "algorithm (--ps-addresses servers keep their own)",
               [o](absl::string_view v) {
                 o->congestion_control = std::string(v);
                 return absl::OkStatus();
               }},
      FlagSpec{
          "spin-polls", "N", "ring: non-blocking polls before a receive blocks",
          [o](absl::string_view v) -> absl::Status {
            ASSIGN_OR_RETURN(o->spin_polls, ParseIntOf("--spin-polls", v, 0));
            return absl::OkStatus();
          }},
      IntFlag("device", "nccl: CUDA device (rank % device count)", 0,
              &o->device),
      Noting(ShownAs(IntFlag("ps-shards",
                             "ps: shards (1, or one per --ps-addresses)", 1,
                             &o->ps_shards),
                     "K"),
             &parse->ps_shards_set),
      FlagSpec{"ps-addresses", "LIST",
               "ps: running gradsync-ps host:port,... (start K)",
               [o](absl::string_view v) {
                 o->ps_addresses = absl::StrSplit(v, ',');
                 return absl::OkStatus();
               }},
      OptionalSizeFlag("ps-chunk", "ps: largest push/pull stream message (1M)",
                       &o->ps_chunk_bytes),
      SizeFlag("ps-partition",
               "ps: pipeline each server's slice in partitions of SIZE (4M; "
               "0: off)",
               0, &o->ps_partition_bytes),
      Noting(FlagSpec{"ps-transport", "plane|grpc",
                      "ps: the tensors over the servers' tensor planes "
                      "(HMAC-authenticated plain TCP; plane, the default) or "
                      "gRPC streams (grpc)",
                      [o](absl::string_view v) {
                        if (v != "plane" && v != "grpc") {
                          return absl::InvalidArgumentError(
                              absl::StrCat("--ps-transport is '", v,
                                           "'; use plane or grpc"));
                        }
                        o->ps_transport = std::string(v);
                        return absl::OkStatus();
                      }},
             &parse->ps_transport_set),
      SecondsFlag("timeout", "rendezvous and per-collective deadline (60)",
                  &o->timeout),
      SecondsFlag("deadline", "launcher: stop the whole run after (3600)",
                  &o->deadline),
      Noting(IntFlag("world", "join a run of N ranks (with --rank, --store)", 1,
                     &o->world),
             &parse->world_set),
      ShownAs(IntFlag("rank", "this process's rank in --world", 0, &o->rank),
              "R"),
      StringFlag("store", "HOST:PORT",
                 "rendezvous store (gradsync-store --listen)", &o->store),
      StringFlag("listen-host", "IP",
                 "address this rank listens on (127.0.0.1)", &o->listen_host),
      StringFlag("advertise-host", "IP",
                 "address published to peers (listen-host)",
                 &o->advertise_host),
      StringFlag("job", "ID", "run id; ranks of one run share it (bench)",
                 &o->job),
  };
}

namespace {

[[nodiscard]] absl::Status Validate(const BenchParse& state) {
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

namespace {

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
                                            BenchParse* state) {
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
      ASSIGN_OR_RETURN(o.rank, ParseIntOf(state->rank_from, *rank, 0));
    }
    if (!state->world_set) {
      state->world_from = absl::StrCat("$", vars.world);
      ASSIGN_OR_RETURN(o.world, ParseIntOf(state->world_from, *world, 1));
      state->world_set = true;
    }
    return absl::OkStatus();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BenchOptions> FinishBenchArgs(
    BenchParse parse, const std::vector<std::string>& positional,
    const EnvLookup& env) {
  if (env && !parse.options.store.empty()) {
    RETURN_IF_ERROR(RankFromLauncher(env, &parse));
    parse.options.launched = env(kLaunchedVariable) == "1";
  }
  if (positional.size() != 1) {
    return absl::InvalidArgumentError(
        positional.empty()
            ? "name a collective: allreduce, reducescatter, allgather or "
              "broadcast"
            : absl::StrCat("unexpected argument '", positional[1], "'"));
  }
  ASSIGN_OR_RETURN(parse.options.collective, ParseCollective(positional[0]));
  RETURN_IF_ERROR(Validate(parse));
  return std::move(parse.options);
}

absl::StatusOr<BenchOptions> ParseBenchArgs(
    const std::vector<std::string>& args, const EnvLookup& env) {
  BenchParse parse;
  std::vector<FlagSpec> flags = BenchFlags(&parse);
  flags.push_back(HelpFlag(&parse.options.help));
  ASSIGN_OR_RETURN(const std::vector<std::string> positional,
                   ParseFlags(args, flags, /*env=*/nullptr));
  if (parse.options.help) return parse.options;
  return FinishBenchArgs(std::move(parse), positional, env);
}

std::string BenchUsage() {
  return "usage: gradsync bench allreduce|reducescatter|allgather|broadcast "
         "[flags]\n\n"
         "Measures a collective like nccl-tests: every rank's input is "
         "crafted so the\nexact result is known; each size prints time, "
         "algbw, busbw and #wrong.\nExit status: 0 every element right, 1 "
         "wrong elements or an error, 2 a bad\nflag or value.\n\n"
         "Local:      gradsync bench allreduce --ranks 4 -b 1M -e 256M\n"
         "Multi-host: gradsync-store --listen 0.0.0.0:29500   (on one host)\n"
         "            gradsync bench allreduce --world N --rank R \\\n"
         "              --store HOST:29500 --listen-host THIS_HOST_IP   (each "
         "rank)\n"
         "            (under srun, mpirun or torchrun, --rank and --world "
         "come from\n"
         "            RANK/WORLD_SIZE, else OMPI_COMM_WORLD_RANK/SIZE, else "
         "SLURM_PROCID/SLURM_NTASKS)\n"
         "PS:         gradsync bench allreduce --backend ps --ps-shards 2 "
         "--ranks 4\n"
         "            (time = one push of S bytes + pull of S bytes per "
         "rank; busbw =\n"
         "            algbw * 2 max(1, N/K), the bytes the busiest link "
         "moves per byte of S)\n";
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
