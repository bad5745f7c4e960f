// Host identity: a string that is equal for two ranks exactly when they run
// on the same machine (the same kernel), published in the rendezvous store
// so that ranks can tell which peers share their host (for the hierarchical
// all-reduce, collectives/algorithms/hierarchical_communicator.h).
//
// The host name alone is not enough (containers and cloned VMs share
// names), so the kernel's boot id (/proc/sys/kernel/random/boot_id, new
// at every boot and distinct between machines) is appended, and the
// network namespace: processes in different ones (containers, `gradsync
// lab`'s emulated hosts) talk through their interfaces, never through
// shared memory, even under one kernel.
//
//   std::string me = LocalHostIdentity();  //
//   "node-3/5c1e...-9f/net:[4026531840]"
//
// Thread-safe; LocalHostIdentity reads /proc on each call.
#ifndef GRADSYNC_COLLECTIVES_HOST_IDENTITY_H_
#define GRADSYNC_COLLECTIVES_HOST_IDENTITY_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "collectives/store.h"

namespace gradsync {

// "<host_name>/<boot id>/<network namespace>"; the boot id part is
// "no-boot-id" and the namespace "no-netns" where /proc has none.
std::string HostIdentity(absl::string_view host_name);

// HostIdentity(HostName()): this machine as the kernel names it.
std::string LocalHostIdentity();

// Publishes `host_id` as rank `rank`'s under "hier/host/<rank>" (a key
// ending in the writer's rank, as the coordinator's store requires) and
// returns all `size` ranks' identities, indexed by rank. Errors:
// DEADLINE_EXCEEDED after `timeout`, naming the ranks that never published
// theirs; CANCELLED soon after *cancelled (may be null) becomes true; the
// store's own errors.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> ExchangeHostIdentities(
    Store* store, int rank, int size, absl::string_view host_id,
    absl::Duration timeout, const std::atomic<bool>* cancelled);

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_HOST_IDENTITY_H_
