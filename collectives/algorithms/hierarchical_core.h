// Internals of the hierarchical communicator
// (collectives/algorithms/hierarchical_communicator.h), apart so that the
// algorithm's
// file stays short: the state shared by the communicator and its Work
// handles (collectives/progress_work.h). Not for use elsewhere.
//
// Threading: HierarchicalCore and ProgressWork are thread-safe; the
// inner communicators are set before the first collective and not changed
// after.
#ifndef GRADSYNC_COLLECTIVES_ALGORITHMS_HIERARCHICAL_CORE_H_
#define GRADSYNC_COLLECTIVES_ALGORITHMS_HIERARCHICAL_CORE_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "collectives/algorithms/hierarchical_communicator.h"
#include "collectives/all_reduce_algorithm.h"
#include "collectives/communicator.h"
#include "collectives/host_placement.h"
#include "collectives/progress_work.h"

namespace gradsync {

// How long past an inner collective's own timeout its caller waits, so that
// the inner backend names the late peer itself (as Communicator does).
inline constexpr absl::Duration kInnerWaitGrace = absl::Seconds(5);

// The inner communicators and the first failure, shared with outstanding
// Work handles so that a handle can abort them after the communicator is
// gone.
//
// Locking: mu_ guards error_ only; it is never held while calling into an
// inner communicator.
class HierarchicalCore {
 public:
  HierarchicalCore(int rank, int size, HostPlacement placement,
                   const HierarchicalSettings& settings)
      : rank_(rank),
        size_(size),
        placement_(std::move(placement)),
        settings_(settings) {}

  int rank() const { return rank_; }
  int size() const { return size_; }
  const HostPlacement& placement() const { return placement_; }
  const HierarchicalSettings& settings() const { return settings_; }

  // The algorithm of an all-reduce of `bytes` on this placement
  // (ChooseAllReduceAlgorithm).
  AllReduceAlgorithm Choose(size_t bytes) const {
    AllReduceChoice choice;
    choice.configured = settings_.algorithm;
    choice.bytes = bytes;
    choice.hosts = placement_.hosts();
    choice.largest_host = placement_.largest_host();
    choice.halving_doubling_max_bytes = settings_.halving_doubling_max_bytes;
    choice.hierarchical_min_bytes = settings_.min_bytes;
    return ChooseAllReduceAlgorithm(choice);
  }

  // Set once by CreateHostAwareCommunicator, before any collective.
  std::unique_ptr<Communicator> flat;
  std::unique_ptr<Communicator> intra;  // null when alone on the host
  // The cross-host communicator of each slice this rank owns, in slice
  // order; empty on a single host.
  std::vector<std::unique_ptr<Communicator>> slice_comms;

  // First failure wins; every inner communicator is aborted, which
  // unblocks the peers that wait on this rank in any of them.
  void Abort(const absl::Status& reason) {
    {
      absl::MutexLock lock(&mu_);
      if (!error_.ok()) return;
      error_ = reason;
    }
    aborted_.store(true);
    if (flat) flat->Abort(reason);
    if (intra) intra->Abort(reason);
    for (auto& c : slice_comms) c->Abort(reason);
  }

  [[nodiscard]] absl::Status CheckUsable() {
    if (!aborted_.load()) return absl::OkStatus();
    absl::MutexLock lock(&mu_);
    return absl::AbortedError(absl::StrCat(
        "rank ", rank_,
        ": the hierarchical communicator failed earlier and cannot be used "
        "any more (create a new one); first error: ",
        error_.message()));
  }

 private:
  const int rank_;
  const int size_;
  const HostPlacement placement_;
  const HierarchicalSettings settings_;
  std::atomic<bool> aborted_{false};
  absl::Mutex mu_;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

// Waits for an inner collective with the same grace as the synchronous
// forms of Communicator.
[[nodiscard]] inline absl::Status WaitInner(Communicator& comm,
                                            std::unique_ptr<Work> work) {
  return work->Wait(absl::Now() + comm.timeout() + kInnerWaitGrace);
}

}  // namespace gradsync

#endif  // GRADSYNC_COLLECTIVES_ALGORITHMS_HIERARCHICAL_CORE_H_
