#include "cli/bench/bench_rank.h"

#include <unistd.h>

#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cli/bench/backend.h"
#include "cli/bench/ps_options.h"
#include "cli/bench/ps_runner.h"
#include "cli/bench/report.h"
#include "cli/bench/runner.h"
#include "collectives/prefix_store.h"
#include "collectives/tcp/tcp_communicator.h"
#include "common/host.h"
#include "common/status_macros.h"
#include "server/store/grpc_store.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {

// Reads every rank's info/<r> ("<pid>\t<host>\t<device>").
[[nodiscard]] absl::StatusOr<std::vector<RankInfo>> GatherRankInfo(
    Store* store, int world, absl::Time deadline) {
  std::vector<RankInfo> infos;
  for (int r = 0; r < world; ++r) {
    ASSIGN_OR_RETURN(const std::string value,
                     store->Get(absl::StrCat("info/", r), deadline));
    std::vector<std::string> fields =
        absl::StrSplit(value, absl::MaxSplits('\t', 2));
    RankInfo info;
    info.rank = r;
    if (fields.size() != 3 || !absl::SimpleAtoi(fields[0], &info.pid)) {
      return absl::InternalError(
          absl::StrCat("rank ", r, " published malformed info '", value, "'"));
    }
    info.host = std::move(fields[1]);
    info.device = std::move(fields[2]);
    infos.push_back(std::move(info));
  }
  return infos;
}

ReportHeader MakeHeader(const BenchOptions& options,
                        const std::vector<size_t>& sizes) {
  ReportHeader header;
  header.collective = options.collective;
  header.backend = std::string(BackendName(options.backend));
  header.algorithm = options.backend == Backend::kRing
                         ? options.algorithm
                         : std::string(BackendName(options.backend));
  if (options.backend == Backend::kRing || options.backend == Backend::kPs) {
    header.tcp_congestion =
        options.congestion_control.value_or(TcpOptions().congestion_control);
    header.transport = options.transport;
  }
  if (options.backend == Backend::kPs) {
    header.ps_shard_addresses = PsShardAddresses(options);
    if (options.ps_transport == "plane") header.transport = "tensor plane";
  }
  header.ranks = options.world;
  header.type = options.type;
  header.op = options.op;
  header.root = options.root;
  header.min_bytes = sizes.front();
  header.max_bytes = options.max_bytes;
  header.factor = options.factor;
  header.increment = options.increment;
  header.warmup = options.warmup;
  header.iters = options.iters;
  header.check = options.check;
  return header;
}

// Measures one size of the sweep on every rank in lockstep.
using SizeRunner = std::function<absl::StatusOr<SizeResult>(size_t bytes)>;

// SweepRunner on the backend's communicator, or for --backend ps a
// PsSweepRunner that uses it as its control channel. The runner lives in
// the returned function; `backend` must outlive it.
[[nodiscard]] absl::StatusOr<SizeRunner> MakeSizeRunner(
    const BenchOptions& options, const std::string& run_id, size_t max_bytes,
    BenchBackend* backend) {
  if (options.backend == Backend::kPs) {
    PsSweepConfig config;
    config.job_id = absl::StrCat("bench/", run_id);
    config.shard_addresses = PsShardAddresses(options);
    config.iters = options.iters;
    config.warmup = options.warmup;
    config.check = options.check;
    config.max_bytes = max_bytes;
    config.timeout = options.timeout;
    config.chunk_bytes = options.ps_chunk_bytes.value_or(0);
    config.partition_bytes = options.ps_partition_bytes;
    config.tensor_plane = options.ps_transport == "plane";
    config.tcp_congestion =
        options.congestion_control.value_or(TcpOptions().congestion_control);
    ASSIGN_OR_RETURN(std::shared_ptr<PsSweepRunner> runner,
                     PsSweepRunner::Create(backend->comm.get(), config));
    return SizeRunner(
        [runner](size_t bytes) { return runner->RunSize(bytes); });
  }
  SweepConfig config;
  config.collective = options.collective;
  config.type = options.type;
  config.op = options.op;
  config.root = options.root;
  config.iters = options.iters;
  config.warmup = options.warmup;
  config.check = options.check;
  config.tolerance = backend->tolerance;
  config.max_bytes = max_bytes;
  ASSIGN_OR_RETURN(
      std::shared_ptr<SweepRunner> runner,
      SweepRunner::Create(backend->comm.get(), backend->memory.get(), config));
  return SizeRunner([runner](size_t bytes) { return runner->RunSize(bytes); });
}

}  // namespace

absl::StatusOr<int64_t> RunBenchRank(Store* store, const BenchOptions& options,
                                     std::ostream& out) {
  const int rank = options.rank;
  const int world = options.world;
  const std::vector<size_t> sizes = SweepSizes(
      options.min_bytes, options.max_bytes, options.factor, options.increment);
  if (sizes.empty()) {
    return absl::InvalidArgumentError("the size sweep is empty; check -b -e");
  }

  PrefixStore job_store(store, absl::StrCat("bench/", options.job));
  ASSIGN_OR_RETURN(const int64_t joined, job_store.Add("joined", 1));
  const int64_t generation = (joined - 1) / world;
  const std::string run_id = absl::StrCat(options.job, "/gen-", generation);
  PrefixStore run_store(&job_store, absl::StrCat("gen-", generation));

  ASSIGN_OR_RETURN(
      BenchBackend backend,
      CreateBenchBackend(&run_store, options, rank, world, run_id));
  RETURN_IF_ERROR(run_store.Set(absl::StrCat("info/", rank),
                                absl::StrCat(getpid(), "\t", HostName(), "\t",
                                             backend.memory->Describe())));

  ASSIGN_OR_RETURN(const SizeRunner run_size,
                   MakeSizeRunner(options, run_id, sizes.back(), &backend));
  ReportHeader header = MakeHeader(options, sizes);
  const bool printer = rank == 0;
  if (printer) {
    ASSIGN_OR_RETURN(
        header.rank_info,
        GatherRankInfo(&run_store, world, absl::Now() + options.timeout));
    if (!options.json) out << FormatTextHeader(header) << std::flush;
  }

  // --results-file (the launcher's --plot): the JSON rows there too.
  std::ofstream results_file;
  if (printer && !options.results_file.empty()) {
    results_file.open(options.results_file);
    if (!results_file) {
      return absl::InternalError(
          absl::StrCat("cannot write --results-file ", options.results_file));
    }
  }
  std::vector<SizeResult> results;
  for (const size_t bytes : sizes) {
    ASSIGN_OR_RETURN(SizeResult result, run_size(bytes));
    if (printer) {
      out << (options.json ? FormatJsonRow(header, result)
                           : FormatTextRow(header, result))
          << std::flush;
      if (results_file.is_open()) {
        results_file << FormatJsonRow(header, result) << std::flush;
      }
    }
    results.push_back(result);
  }
  const Summary summary = Summarize(results);
  if (printer) {
    out << (options.json ? FormatJsonSummary(header, summary)
                         : FormatTextFooter(summary))
        << std::flush;
  }
  return summary.wrong;
}

int RankExitStatus(const absl::StatusOr<int64_t>& wrong, bool launched) {
  if (!wrong.ok()) return kExitFailure;
  if (*wrong == 0) return kExitOk;
  return launched ? kExitLaunchedRankWrongResults : kExitFailure;
}

int BenchRankMain(const BenchOptions& options, const CommandEnv& env) {
  absl::StatusOr<std::unique_ptr<Store>> store =
      ConnectGrpcStore(options.store, options.timeout);
  absl::StatusOr<int64_t> wrong =
      store.ok() ? RunBenchRank(store->get(), options, *env.out)
                 : absl::StatusOr<int64_t>(store.status());
  if (!wrong.ok()) {
    *env.err << "gradsync bench: rank " << options.rank << " of "
             << options.world << ": " << wrong.status() << "\n";
  } else if (*wrong > 0 && options.rank == 0) {
    *env.err << "gradsync bench: " << *wrong
             << " wrong elements (see #wrong)\n";
  }
  return RankExitStatus(wrong, options.launched);
}

}  // namespace bench
}  // namespace cli
}  // namespace gradsync
