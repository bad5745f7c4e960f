// The host-aware communicator of the TCP backend: the hierarchical
// all-reduce (collectives/algorithms/hierarchical_communicator.h) over TCP
// communicators (tcp_communicator.h), one per namespace of the job's
// store. Whatever transport CreateTcpCommunicator picks for peers on one
// host carries the intra-host steps.
//
//   HierarchicalOptions options;
//   options.tcp.job_id = "job-7/gen-0";
//   options.tcp.algorithm = AllReduceAlgorithm::kAuto;
//   ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm,
//                    CreateHostAwareCommunicator(&store, rank, size, options));
//
// What it returns, by tcp.algorithm (ChooseAllReduceAlgorithm,
// collectives/all_reduce_algorithm.h):
//   kHierarchical  always the hierarchical communicator;
//   kAuto          hierarchical if there are several hosts and one has at
//                  least two ranks, else the flat TCP communicator; its
//                  all-reduces of at least options.min_bytes then run
//                  hierarchically, smaller ones flat (halving-doubling);
//   kRing, kHalvingDoubling  the flat TCP communicator, nothing else (no
//                  host identity is exchanged).
// The flat communicator uses the store's own "tcp/..." keys, as a plain
// CreateTcpCommunicator would; the inner ones get job_id with a suffix
// naming them ("/hier/intra/<host>", "/hier/slice/<slice>") and
// listen_port 0.
//
// Errors: as CreateTcpCommunicator and CreateHierarchicalCommunicator.
// Threading: thread-safe, as both.
#ifndef GRADSYNC_COLLECTIVES_TCP_HOST_AWARE_COMMUNICATOR_H_
#define GRADSYNC_COLLECTIVES_TCP_HOST_AWARE_COMMUNICATOR_H_

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
  // This rank's host identity; empty: tcp.host_id, or LocalHostIdentity().
  // Ranks with equal identities are on one host: set it to pretend ranks
  // of one machine live on several (tests, benchmarks).
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

#endif  // GRADSYNC_COLLECTIVES_TCP_HOST_AWARE_COMMUNICATOR_H_
