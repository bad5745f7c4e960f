// Command line of `gradsync bench <collective>`: nccl-tests' flags
// (-b -e -f -i -n -w -c -o -d -r, sizes with K/M/G suffixes) plus
// gradsync's process and backend flags, as one table of the flags library
// (common/flags.h). Parsing is a pure function from the arguments (and an
// environment lookup) to BenchOptions, so that it is testable and no flag
// is a global. `gradsync bench` parses with the CLI framework's
// ParseCommand (bench_command.cc): BenchFlags, then FinishBenchArgs.
//
//   ASSIGN_OR_RETURN(BenchOptions options,
//                    ParseBenchArgs({"allreduce", "-b", "1K", "-e", "1M"}));
//
// Errors: INVALID_ARGUMENT with a message naming the flag (by its long
// name, --minbytes for -b) or the variable, and what it accepts.
#ifndef GRADSYNC_CLI_BENCH_BENCH_OPTIONS_H_
#define GRADSYNC_CLI_BENCH_BENCH_OPTIONS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cli/bench/collective.h"
#include "cli/bench/sizes.h"
#include "collectives/types.h"
#include "common/flags.h"

namespace gradsync {
namespace cli {
namespace bench {

// ring: the TCP ring (collectives/tcp); nccl: NCCL on CUDA devices; ps: the
// parameter server (server/ps), one all-reduce being one PsClient::PushPull.
enum class Backend { kRing, kNccl, kPs };
[[nodiscard]] absl::StatusOr<Backend> ParseBackend(absl::string_view name);
absl::string_view BackendName(Backend backend);

struct BenchOptions {
  Collective collective = Collective::kAllReduce;

  // The sweep: sizes from min_bytes to max_bytes, multiplied by factor or,
  // when increment > 0, increased by increment.
  size_t min_bytes = size_t{1} << 20;
  size_t max_bytes = size_t{64} << 20;
  int factor = 2;
  size_t increment = 0;
  int iters = 20;
  int warmup = 5;
  bool check = true;
  ReduceOp op = ReduceOp::kSum;
  DataType type = DataType::kFloat32;
  int root = 0;
  bool json = false;

  Backend backend = Backend::kRing;
  // TCP ring knobs; unset keeps TcpOptions' defaults. `algorithm` is
  // checked by ParseAllReduceAlgorithm when the communicator is made.
  std::string algorithm = "auto";
  // auto, tcp or shm (TcpOptions::transport), checked by ParseTransport.
  std::string transport = "auto";
  std::optional<size_t> segment_bytes;
  std::optional<size_t> hd_threshold_bytes;
  std::optional<size_t> sub_block_bytes;
  std::optional<size_t> socket_buffer_bytes;
  std::optional<size_t> small_socket_buffer_bytes;
  std::optional<int> spin_polls;
  std::optional<std::string> congestion_control;
  std::string listen_host = "127.0.0.1";
  std::string advertise_host;
  // --host-layout 3+1: ranks pretend to live on hosts of these many
  // consecutive ranks (host identities "bench-host-<h>"), so that the
  // hierarchical all-reduce can run on one machine. Empty: the real host.
  std::vector<int> host_layout;
  // NCCL: CUDA device of this rank; -1 picks rank % device count.
  int device = -1;
  // PS: shards K (0: one per ps_addresses entry, or 1 when the launcher
  // starts the servers; see PsShardCount), the gradsync-ps servers to use
  // (empty: the launcher starts K in its own process; shard k goes to
  // ps_addresses[k % size]), the push/pull streams' largest message.
  int ps_shards = 0;
  std::vector<std::string> ps_addresses;
  std::optional<size_t> ps_chunk_bytes;
  // --ps-partition: each server's slice in partitions of this size, pushed
  // one at a time so that pulls overlap pushes (ps_client.h); 0: none.
  size_t ps_partition_bytes = 4 << 20;
  // --ps-transport: the steps' tensors over the servers' tensor planes
  // ("plane", the default: plain TCP after an HMAC handshake) or gRPC
  // streams ("grpc"); the launcher's own servers serve a plane.
  std::string ps_transport = "plane";

  // Deadline of rendezvous and of each collective.
  absl::Duration timeout = absl::Seconds(60);
  // Launcher: how long it waits for the whole run before stopping it.
  absl::Duration deadline = absl::Hours(1);

  // Launcher mode: spawn this many local ranks (the default).
  int ranks = 2;
  // Member mode (set by the launcher, or by hand across hosts): this
  // process is rank `rank` of `world`, rendezvousing through `store`.
  int rank = -1;
  int world = 0;
  std::string store;
  std::string job = "bench";
  // --plot FILE.png: the launcher draws busbw against size into it (with
  // the ideal line at link_gbps when > 0), from the JSON rows rank 0
  // writes into results_file.
  std::string plot;
  double link_gbps = 0;
  std::string results_file;

  // Set by the local launcher in its ranks' environment
  // (kLaunchedVariable): a run that ends with wrong elements exits
  // kExitLaunchedRankWrongResults (bench_rank.h) so that the launcher
  // tells it from a failing rank.
  bool launched = false;

  bool help = false;  // ParseBenchArgs only (ParseCommand has its own)

  bool member() const { return rank >= 0; }
};

// What the command line gave, as BenchFlags' setters record it.
struct BenchParse {
  BenchOptions options;
  // Set explicitly, for the checks that need it.
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

// The flag table, one row per flag, nccl-tests' letters first; without
// -h/--help (ParseCommand and ParseBenchArgs add it). Its setters write
// into `parse`, which must outlive the parse.
std::vector<FlagSpec> BenchFlags(BenchParse* parse);

// The variable the local launcher sets to "1" in its ranks' environment.
inline constexpr char kLaunchedVariable[] = "GRADSYNC_BENCH_LAUNCHED";

// The rest of the parse once the table has run: the collective, the only
// positional argument; --rank and --world from the launcher's environment
// where --store asks for it (see ParseBenchArgs); the flags checked
// together.
[[nodiscard]] absl::StatusOr<BenchOptions> FinishBenchArgs(
    BenchParse parse, const std::vector<std::string>& positional,
    const EnvLookup& env);

// Parses "<collective> [flags]" (and -h/--help). Flags take their value
// as the next argument, after '=' ("--iters=5"), or glued to a one-letter
// flag ("-n5"). With --store but without --rank or --world, the missing
// ones come from the launcher's environment `env`, as nccl-tests and
// torchrun users expect. Flags win over the environment; in it, the
// explicit RANK/WORLD_SIZE (torchrun, or set by hand) over the schedulers'
// OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE (mpirun), then
// SLURM_PROCID/SLURM_NTASKS (srun); a pair half set is skipped. A value
// that is not a number, or a rank not below the world size, is
// INVALID_ARGUMENT naming the variable. Without --store, or without `env`,
// the environment is not read (a local launch inside an allocation stays
// local).
[[nodiscard]] absl::StatusOr<BenchOptions> ParseBenchArgs(
    const std::vector<std::string>& args, const EnvLookup& env = nullptr);

// The usage text above the flags: the synopsis, the exit statuses and
// examples (ParseCommand appends "flags:" and the table).
std::string BenchUsage();

// Removes every occurrence of flag `name` and its value ("--ranks 3" or
// "--ranks=3") from `args`: the launcher passes its own arguments on to
// the ranks without it.
std::vector<std::string> StripFlag(const std::vector<std::string>& args,
                                   absl::string_view name);

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_BENCH_OPTIONS_H_
