#include "cli/bench/backend.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cli/bench/ps_cluster.h"
#include "cli/bench/verifiable.h"
#include "collectives/tcp/host_aware_communicator.h"
#include "common/status_macros.h"

#if GRADSYNC_HAVE_NCCL
#include "cli/bench/device_memory.h"
#include "collectives/nccl/device_buffer.h"
#include "collectives/nccl/nccl_communicator.h"
#endif

namespace gradsync {
namespace cli {
namespace bench {
namespace {

// Longest wait for a --ps-addresses server to answer the probe.
constexpr absl::Duration kPsProbeTimeout = absl::Seconds(10);

#if GRADSYNC_HAVE_NCCL
[[nodiscard]] absl::StatusOr<int> VisibleGpus() {
  ASSIGN_OR_RETURN(const int gpus, CudaDeviceCount());
  if (gpus == 0) {
    return absl::FailedPreconditionError(
        "--backend nccl needs a CUDA GPU and this host has none visible "
        "(check nvidia-smi and CUDA_VISIBLE_DEVICES); use --backend ring");
  }
  return gpus;
}

[[nodiscard]] absl::StatusOr<BenchBackend> CreateNcclBackend(
    Store* store, const BenchOptions& options, int rank, int world,
    const std::string& job_id) {
  ASSIGN_OR_RETURN(const int gpus, VisibleGpus());
  const int device = options.device >= 0 ? options.device : rank % gpus;
  if (device >= gpus) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--device ", device, " is not one of the ", gpus, " visible GPUs"));
  }
  NcclOptions nccl;
  nccl.job_id = job_id;
  nccl.device = device;
  nccl.connect_timeout = options.timeout;
  nccl.timeout = options.timeout;
  BenchBackend backend;
  backend.memory = MakeDeviceMemory(device);
  ASSIGN_OR_RETURN(backend.comm,
                   CreateNcclCommunicator(store, rank, world, nccl));
  backend.tolerance = PreScaledAvgTolerance(options.type, options.op, world);
  return backend;
}
#endif  // GRADSYNC_HAVE_NCCL

// "bench-host-<h>" for the host h of --host-layout that holds `rank`;
// empty (the real host) without a layout.
std::string PretendHostId(const std::vector<int>& layout, int rank) {
  int first = 0;
  for (size_t h = 0; h < layout.size(); ++h) {
    first += layout[h];
    if (rank < first) return absl::StrCat("bench-host-", h);
  }
  return "";
}

}  // namespace

absl::Status CheckBackendFlags(const BenchOptions& options) {
  if (options.backend != Backend::kNccl) {
    RETURN_IF_ERROR(ParseTransport(options.transport).status());
  }
  if (options.backend == Backend::kRing) {
    RETURN_IF_ERROR(ParseAllReduceAlgorithm(options.algorithm).status());
  }
  return absl::OkStatus();
}

absl::Status CheckBackendAvailable(const BenchOptions& options) {
  RETURN_IF_ERROR(CheckBackendFlags(options));
  if (options.backend == Backend::kRing) return absl::OkStatus();
  if (options.backend == Backend::kPs) {
    // Servers the launcher starts itself need no probe.
    return ProbePsServers(options.ps_addresses,
                          std::min(options.timeout, kPsProbeTimeout));
  }
#if GRADSYNC_HAVE_NCCL
  return VisibleGpus().status();
#else
  return absl::FailedPreconditionError(
      "this gradsync was built without NCCL (CMake found no CUDA/NCCL, so "
      "GRADSYNC_HAVE_NCCL is off); rebuild on a host with CUDA and NCCL, or "
      "use --backend ring");
#endif
}

absl::StatusOr<TcpOptions> MakeTcpOptions(const BenchOptions& options,
                                          const std::string& job_id) {
  TcpOptions tcp;
  tcp.job_id = job_id;
  tcp.listen_host = options.listen_host;
  tcp.advertise_host = options.advertise_host;
  tcp.connect_timeout = options.timeout;
  tcp.timeout = options.timeout;
  ASSIGN_OR_RETURN(tcp.algorithm, ParseAllReduceAlgorithm(options.algorithm));
  ASSIGN_OR_RETURN(tcp.transport, ParseTransport(options.transport));
  if (options.segment_bytes) tcp.segment_bytes = *options.segment_bytes;
  if (options.hd_threshold_bytes) {
    tcp.halving_doubling_max_bytes = *options.hd_threshold_bytes;
  }
  if (options.sub_block_bytes) tcp.sub_block_bytes = *options.sub_block_bytes;
  if (options.spin_polls) tcp.spin_polls = *options.spin_polls;
  if (options.congestion_control) {
    tcp.congestion_control = *options.congestion_control;
  }
  if (options.socket_buffer_bytes) {
    if (*options.socket_buffer_bytes > (1u << 30)) {
      return absl::InvalidArgumentError("--socket-buffer is above 1G");
    }
    tcp.socket_buffer_bytes = static_cast<int>(*options.socket_buffer_bytes);
  }
  if (options.small_socket_buffer_bytes) {
    if (*options.small_socket_buffer_bytes > (1u << 30)) {
      return absl::InvalidArgumentError("--small-socket-buffer is above 1G");
    }
    tcp.small_socket_buffer_bytes =
        static_cast<int>(*options.small_socket_buffer_bytes);
  }
  return tcp;
}

absl::StatusOr<BenchBackend> CreateBenchBackend(Store* store,
                                                const BenchOptions& options,
                                                int rank, int world,
                                                const std::string& job_id) {
  if (options.backend == Backend::kNccl) {
#if GRADSYNC_HAVE_NCCL
    return CreateNcclBackend(store, options, rank, world, job_id);
#else
    return CheckBackendAvailable(options);
#endif
  }
  // The ring, or for ps the control channel of barriers and scalars.
  ASSIGN_OR_RETURN(const TcpOptions tcp, MakeTcpOptions(options, job_id));
  BenchBackend backend;
  backend.memory = MakeHostMemory();
  if (options.backend == Backend::kPs) {
    ASSIGN_OR_RETURN(backend.comm,
                     CreateTcpCommunicator(store, rank, world, tcp));
    return backend;
  }
  // The host-aware factory: flat unless --algo hierarchical, or auto on a
  // placement of several hosts with several ranks on one of them.
  HierarchicalOptions hier;
  hier.tcp = tcp;
  hier.host_id = PretendHostId(options.host_layout, rank);
  hier.min_bytes = tcp.halving_doubling_max_bytes;
  ASSIGN_OR_RETURN(backend.comm,
                   CreateHostAwareCommunicator(store, rank, world, hier));
  return backend;
}

}  // namespace bench
}  // namespace cli
}  // namespace gradsync
