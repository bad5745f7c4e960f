// JobRunner's rank communicators: the TCP (host-aware) one each rank
// builds at rendezvous, and the NCCL factory for device rings. Part of
// job_runner.h's class, apart to keep job_runner.cc about the job's life.
#include <sched.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "collectives/host_identity.h"
#include "collectives/prefix_store.h"
#include "collectives/tcp/host_aware_communicator.h"
#include "collectives/tcp/tcp_communicator.h"
#include "worker/daemon/job_runner.h"
#if GRADSYNC_HAVE_NCCL
#include "collectives/nccl/nccl_communicator.h"
#endif
#include "common/host.h"
#include "common/status_macros.h"

namespace gradsync {
namespace {

// Cores this process may run on (its affinity mask); 0 if unknown.
int UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

}  // namespace

// Rendezvous through the coordinator's store; a cancelled job interrupts
// it (options.cancelled, and the store's Cancel for a blocked Get).
absl::StatusOr<std::unique_ptr<Communicator>> JobRunner::Rendezvous(
    int rank, AllReduceAlgorithm algorithm) {
  TcpOptions options;
  options.job_id =
      absl::StrCat(assignment_.job_id(), "/", assignment_.generation());
  options.job_secret = assignment_.job_secret();
  options.on_rejected = [this, rank](absl::string_view why) {
    Log(absl::StrCat("rank ", rank,
                     ": refused a connection at rendezvous: ", why));
  };
  options.listen_host = config_.listen_host;
  options.connect_timeout = config_.rendezvous_timeout;
  options.timeout = config_.collective_timeout;
  options.congestion_control = config_.tcp_congestion_control;
  ASSIGN_OR_RETURN(options.transport, ParseTransport(config_.transport));
  auto shm_peers = std::make_shared<std::vector<int>>();
  options.on_transport = [shm_peers](int peer, absl::string_view t) {
    if (t == "shm") shm_peers->push_back(peer);
  };
  options.cancelled = &cancelled_;
  const int cores = UsableCores();
  if (config_.spin_polls.has_value()) {
    options.spin_polls = *config_.spin_polls;
  } else {
    options.spin_polls = SpinPollsForHost(options.spin_polls,
                                          assignment_.ranks_on_host(), cores);
  }
  if (options.spin_polls == 0 && !config_.spin_polls.has_value()) {
    Log(absl::StrCat("rank ", rank, ": ", assignment_.ranks_on_host(),
                     " ranks of the job on this host, ", cores,
                     " cores: collectives wait without spinning"));
  }
  // Host-aware: on several hosts with several of the job's ranks on one,
  // large all-reduces run hierarchically (collectives/tcp/
  // host_aware_communicator.h); otherwise this is the flat TCP
  // communicator. JobSpec.ring_algorithm may force either (kHierarchical
  // applies on any placement, degenerate ones included). Hosts are told
  // apart by the name the worker registered with plus the kernel's boot
  // id, so that `gradsync lab`'s emulated hosts (one kernel, a host name
  // each) count as hosts: for the hierarchy, and for shared memory, which
  // must not carry bytes between emulated hosts past their shaped links.
  options.host_id =
      HostIdentity(config_.host.empty() ? HostName() : config_.host);
  options.algorithm = algorithm;
  if (!MayChooseHierarchical(algorithm)) {  // then no on_placement
    Log(absl::StrCat("rank ", rank, ": ", AllReduceAlgorithmName(algorithm),
                     " all-reduce (forced)"));
  }
  HierarchicalOptions hier;
  hier.tcp = options;
  hier.on_placement = [this, rank](absl::string_view line) {
    Log(absl::StrCat("rank ", rank, ": ", line));
  };
  auto comm = CreateHostAwareCommunicator(store_.get(), rank,
                                          assignment_.world_size(), hier);
  if (comm.ok() && !shm_peers->empty()) {
    Log(absl::StrCat("rank ", rank, ": shared memory to rank(s) ",
                     absl::StrJoin(*shm_peers, ", "), " (same host)"));
  }
  return comm;
}

DeviceCommFactory JobRunner::DeviceComms(int rank,
                                         const TrainerConfig& config) {
#if GRADSYNC_HAVE_NCCL
  if (config.ring_backend != RingBackend::kNccl || config.cuda_device < 0) {
    return nullptr;
  }
  // Each rank thread initialises its own communicator on its own device
  // (non-blocking init, polled against the deadline): NCCL needs
  // ncclGroupStart/End only when one thread initialises several devices.
  return [this, rank, device = config.cuda_device](int64_t step,
                                                   absl::Time deadline)
             -> absl::StatusOr<std::unique_ptr<Communicator>> {
    // A fresh namespace per ring start: a unique id is good for one
    // communicator, and every rank starts the ring before the same step.
    PrefixStore store(store_.get(), absl::StrCat("nccl-ring/", step, "/"));
    NcclOptions options;
    options.job_id = absl::StrCat(assignment_.job_id(), "/",
                                  assignment_.generation(), "/step-", step);
    options.device = device;
    options.connect_timeout =
        std::max(deadline - absl::Now(), absl::Milliseconds(1));
    options.timeout = config_.collective_timeout;
    return CreateNcclCommunicator(&store, rank, assignment_.world_size(),
                                  options);
  };
#else
  return nullptr;
#endif
}

}  // namespace gradsync
