// Hierarchical (host-aware) Communicator for jobs whose ranks span several
// hosts with several ranks each: an all-reduce reduce-scatters inside each
// host, all-reduces each slice across hosts (one rank per host per slice,
// so all of a host's ranks use its link at once), then all-gathers inside
// each host, as NCCL's and Horovod's hierarchical all-reduce do. The
// algorithm is described step by step in hierarchical_communicator.cc.
//
// It is a composition of communicators, each made by CreateTcpCommunicator
// over its own namespace of the job's store: a flat one over all ranks
// (used for ReduceScatter, AllGather, Broadcast, Barrier and small
// all-reduces), one inside this rank's host, and one per slice this rank
// owns across hosts. Whatever transport CreateTcpCommunicator picks for
// peers on one host carries the intra-host steps.
//
//   HierarchicalOptions options;
//   options.tcp.job_id = "job-7/gen-0";
//   options.tcp.algorithm = AllReduceAlgorithm::kAuto;
//   ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm,
//                    CreateHostAwareCommunicator(&store, rank, size, options));
//
// Rendezvous: every rank publishes its host identity under
// "hier/host/<rank>" (collectives/host_identity.h, or options.host_id),
// reads everybody's, and from the placement decides (tcp.algorithm):
//   kHierarchical  always the hierarchical communicator;
//   kAuto          hierarchical if there are several hosts and one has at
//                  least two ranks, else the flat TCP communicator; its
//                  all-reduces of at least options.min_bytes then run
//                  hierarchically, smaller ones flat (halving-doubling);
//   kRing, kHalvingDoubling  the flat TCP communicator, nothing else.
// The flat communicator uses the store's own "tcp/..." keys, as a plain
// CreateTcpCommunicator would; the others live under "hier/intra/<host>/"
// and "hier/slice/<slice>/" with keys ending in the writer's global rank
// (collectives/subgroup_store.h).
//
// Errors: as CreateTcpCommunicator; DEADLINE_EXCEEDED naming the ranks
// whose host identity never appeared; CANCELLED when tcp.cancelled became
// true. The collectives' errors are those of communicator.h; a failure in
// any inner communicator aborts all of them, so that no peer waits on a
// rank that gave up.
//
// Threading: thread-safe; collectives run in issue order on one progress
// thread, which drives the inner communicators.
#ifndef GRADSYNC_COLLECTIVES_HIERARCHICAL_COMMUNICATOR_H_
#define GRADSYNC_COLLECTIVES_HIERARCHICAL_COMMUNICATOR_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "collectives/communicator.h"
#include "collectives/store.h"
#include "collectives/tcp/tcp_communicator.h"

namespace gradsync {

struct HierarchicalOptions {
  // Options of every inner communicator (each gets job_id with a suffix
  // naming it, and listen_port 0 except the flat one). tcp.algorithm picks
  // the communicator as described above.
  TcpOptions tcp;
  // This rank's host identity; empty: LocalHostIdentity(). Ranks with equal
  // identities are on one host: set it to pretend ranks of one machine live
  // on several (tests, benchmarks).
  std::string host_id;
  // kAuto: all-reduces of fewer bytes run flat. By default the point where
  // the flat communicator leaves halving-doubling for the ring; not
  // measured across real hosts yet (docs/collectives.md).
  size_t min_bytes = 2 << 20;
  // Called once the placement is known (not for kRing/kHalvingDoubling),
  // with one line saying what it is and what was chosen, for logs:
  // "2 hosts of 2+2 ranks: hierarchical all-reduce from 2097152 bytes".
  // May be empty.
  std::function<void(absl::string_view)> on_placement;
};

// Publishes this rank's host identity, learns the placement and returns the
// communicator chosen as above. Blocks until every inner communicator is
// connected (each within tcp.connect_timeout).
[[nodiscard]] absl::StatusOr<std::unique_ptr<Communicator>>
CreateHostAwareCommunicator(Store* store, int rank, int size,
                            const HierarchicalOptions& options);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_HIERARCHICAL_COMMUNICATOR_H_
