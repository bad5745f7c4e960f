// Command line of `gradsync bench <collective>`: nccl-tests' flags
// (-b -e -f -i -n -w -c -o -d -r, sizes with K/M/G suffixes) plus
// gradsync's process and backend flags. Parsing is a pure function from
// the arguments to BenchOptions, so that it is testable and no flag is a
// global.
//
//   ASSIGN_OR_RETURN(BenchOptions options,
//                    ParseBenchArgs({"allreduce", "-b", "1K", "-e", "1M"}));
//
// Errors: INVALID_ARGUMENT with a message naming the flag and what it
// accepts.
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

  bool help = false;

  bool member() const { return rank >= 0; }
};

// Parses "<collective> [flags]". Flags take their value as the next
// argument, after '=' ("--iters=5"), or glued to a one-letter flag
// ("-n5"). With --store but without --rank or --world, the missing ones
// come from the launcher's environment, as nccl-tests and torchrun users
// expect. Flags win over the environment; in it, the explicit
// RANK/WORLD_SIZE (torchrun, or set by hand) over the schedulers'
// OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE (mpirun), then
// SLURM_PROCID/SLURM_NTASKS (srun); a pair half set is skipped. A value
// that is not a number, or a rank not below the world size, is
// INVALID_ARGUMENT naming the variable.
// Without --store the environment is not read (a local launch inside an
// allocation stays local).
[[nodiscard]] absl::StatusOr<BenchOptions> ParseBenchArgs(
    const std::vector<std::string>& args, const EnvLookup& env = ProcessEnv);

// The usage text listing every flag.
std::string BenchUsage();

// The flag table ParseBenchArgs parses with, for shell completion: read
// its rows, never call their set.
std::vector<FlagSpec> BenchFlagTable();

// Removes every occurrence of flag `name` and its value ("--ranks 3" or
// "--ranks=3") from `args`: the launcher passes its own arguments on to
// the ranks without it.
std::vector<std::string> StripFlag(const std::vector<std::string>& args,
                                   absl::string_view name);

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_BENCH_OPTIONS_H_
