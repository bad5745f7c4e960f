// The communicator and buffers one `gradsync bench` rank measures with:
// the TCP ring (collectives/tcp) on host memory, or NCCL
// (collectives/nccl, built only with GRADSYNC_HAVE_NCCL) on CUDA device
// memory. For --backend ps the TCP communicator only carries the barriers
// and scalars of ps_runner.h; the bytes go through the parameter servers.
//
//   RETURN_IF_ERROR(CheckBackendAvailable(options));   // before spawning
//   RETURN_IF_ERROR(CheckBackendFlags(options));       // or joining
//   ASSIGN_OR_RETURN(BenchBackend backend,
//                    CreateBenchBackend(&store, options, rank, world, job));
//
// Errors: INVALID_ARGUMENT for a bad --algo or --transport; FAILED_PRECONDITION
// when NCCL is asked for but not built in or no GPU is visible; UNAVAILABLE
// naming a
// --ps-addresses server that does not answer; otherwise the
// communicator factory's (DEADLINE_EXCEEDED naming ranks that never came).
#ifndef GRADSYNC_CLI_BENCH_BACKEND_H_
#define GRADSYNC_CLI_BENCH_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/bench/bench_memory.h"
#include "cli/bench/bench_options.h"
#include "collectives/communicator.h"
#include "collectives/store.h"
#include "collectives/tcp/tcp_communicator.h"

namespace gradsync {
namespace cli {
namespace bench {

struct BenchBackend {
  // Declared first so that the communicator, which may still reference the
  // memory's device, is destroyed before it.
  std::unique_ptr<BenchMemory> memory;
  std::unique_ptr<Communicator> comm;
  // VerifySpec::tolerance this backend needs (NCCL's float avg pre-scales).
  double tolerance = 0.0;
};

// INVALID_ARGUMENT for a --transport or --algo the backend does not know;
// what a rank checks before it joins a run.
[[nodiscard]] absl::Status CheckBackendFlags(const BenchOptions& options);

// Fails fast, before any process is started, on what no rank could run:
// CheckBackendFlags, then NCCL, GPUs and --ps-addresses servers.
[[nodiscard]] absl::Status CheckBackendAvailable(const BenchOptions& options);

// The TCP ring's options from the command line.
[[nodiscard]] absl::StatusOr<TcpOptions> MakeTcpOptions(
    const BenchOptions& options, const std::string& job_id);

// Connects rank `rank` of `world` through `store` (already namespaced for
// this run); blocks until every rank joined or options.timeout passes.
[[nodiscard]] absl::StatusOr<BenchBackend> CreateBenchBackend(
    Store* store, const BenchOptions& options, int rank, int world,
    const std::string& job_id);

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_BACKEND_H_
