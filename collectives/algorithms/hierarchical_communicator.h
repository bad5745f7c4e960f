// Hierarchical (host-aware) Communicator for jobs whose ranks span several
// hosts with several ranks each: an all-reduce reduce-scatters inside each
// host, all-reduces each slice across hosts (one rank per host per slice,
// so all of a host's ranks use its link at once), then all-gathers inside
// each host, as NCCL's and Horovod's hierarchical all-reduce do. The
// algorithm is described step by step in hierarchical_communicator.cc.
//
// It is a composition of communicators, each made by the caller's
// InnerCommunicatorFactory over its own namespace of the job's store: a
// flat one over all ranks (used for ReduceScatter, AllGather, Broadcast,
// Barrier and small all-reduces), one inside this rank's host, and one per
// slice this rank owns across hosts. It sees them only through the
// Communicator interface: the TCP backend's factory
// (collectives/tcp/host_aware_communicator.h) is the one in use, and any
// backend's would do.
//
//   HierarchicalSettings settings;
//   settings.algorithm = AllReduceAlgorithm::kAuto;
//   settings.host_id = LocalHostIdentity();
//   ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm,
//                    CreateHierarchicalCommunicator(&store, rank, size,
//                                                   settings, make_inner));
//
// Rendezvous: every rank publishes its host identity under
// "hier/host/<rank>" (collectives/host_identity.h), reads everybody's, and
// from the placement ChooseAllReduceAlgorithm (collectives/
// all_reduce_algorithm.h) decides, for the largest all-reduce: the
// hierarchy, or the flat communicator alone (kAuto on one host, or with
// one rank per host). With the hierarchy, each all-reduce asks it again
// for its own size: the hierarchy (kAuto: from settings.min_bytes) or the
// flat communicator. The flat communicator is made under the store as
// given (name ""); the others under "hier/intra/<host>/" and
// "hier/slice/<slice>/", with keys ending in the writer's global rank
// (collectives/subgroup_store.h).
//
// Errors: the factory's, naming which inner communicator failed;
// DEADLINE_EXCEEDED naming the ranks whose host identity never appeared;
// CANCELLED when settings.cancelled became true. The collectives' errors
// are those of communicator.h; a failure in any inner communicator aborts
// all of them, so that no peer waits on a rank that gave up.
//
// Threading: thread-safe; collectives run in issue order on one progress
// thread, which drives the inner communicators.
#ifndef GRADSYNC_COLLECTIVES_ALGORITHMS_HIERARCHICAL_COMMUNICATOR_H_
#define GRADSYNC_COLLECTIVES_ALGORITHMS_HIERARCHICAL_COMMUNICATOR_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "collectives/all_reduce_algorithm.h"
#include "collectives/communicator.h"
#include "collectives/store.h"

namespace gradsync {

struct HierarchicalSettings {
  // What the job asked for (ChooseAllReduceAlgorithm's `configured`).
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::kAuto;
  // kAuto: all-reduces of fewer bytes run flat.
  size_t min_bytes = 2 << 20;
  // The flat communicator's threshold, for the choice (its own).
  size_t halving_doubling_max_bytes = 2 << 20;
  // This rank's host identity (not empty): ranks with equal identities
  // are on one host.
  std::string host_id;
  // Deadline and cancel flag of the host identity exchange.
  absl::Duration connect_timeout = absl::Seconds(60);
  const std::atomic<bool>* cancelled = nullptr;
  // Called once the placement is known, with one line saying what it is
  // and what was chosen, for logs: "2 hosts of 2+2 ranks: hierarchical
  // all-reduce from 2097152 bytes". May be empty.
  std::function<void(absl::string_view)> on_placement;
};

// Makes one inner communicator over `store` (already namespaced for it) as
// rank `rank` of `size`. `name` is "" for the flat communicator over all
// ranks, else "hier/intra/<host>" or "hier/slice/<slice>" (for job ids).
using InnerCommunicatorFactory =
    std::function<absl::StatusOr<std::unique_ptr<Communicator>>(
        Store* store, int rank, int size, absl::string_view name)>;

// Publishes this rank's host identity, learns the placement and returns the
// hierarchical communicator, or the flat one alone where the choice never
// picks the hierarchy. Blocks until every inner communicator is made.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Communicator>>
CreateHierarchicalCommunicator(Store* store, int rank, int size,
                               const HierarchicalSettings& settings,
                               const InnerCommunicatorFactory& make);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_ALGORITHMS_HIERARCHICAL_COMMUNICATOR_H_
