// Checks of a job's step metrics (as GetMetrics returns them, one per rank
// and step): every rank reported every step once, and after every step all
// ranks held bitwise-identical parameters (equal param_hash,
// docs/architecture.md invariant 1), the same global-batch loss and the same
// sync mode.
#ifndef GRADSYNC_TESTS_INTEGRATION_LOCKSTEP_H_
#define GRADSYNC_TESTS_INTEGRATION_LOCKSTEP_H_

#include <cstdint>
#include <map>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "proto/coordinator.pb.h"

namespace gradsync {
namespace testing {

// One value per step, as every rank reported it.
struct Trajectory {
  std::vector<double> loss;
  std::vector<uint64_t> param_hash;
  std::vector<SyncMode> mode;
};

// Success when `metrics` hold exactly one entry per rank 0..world-1 for
// each step 0..steps-1, and at each step every rank reported the same
// param_hash and loss; fills `out` (when not null) with those values.
inline ::testing::AssertionResult InLockstep(
    const std::vector<StepMetrics>& metrics, int world, int64_t steps,
    Trajectory* out) {
  // step -> rank -> metrics
  std::map<int64_t, std::map<int, const StepMetrics*>> by_step;
  for (const StepMetrics& m : metrics) {
    if (m.step() < 0 || m.step() >= steps || m.rank() < 0 ||
        m.rank() >= world) {
      return ::testing::AssertionFailure() << absl::StrFormat(
                 "metrics of rank %d step %d are outside ranks 0..%d, steps "
                 "0..%d",
                 m.rank(), m.step(), world - 1, steps - 1);
    }
    if (!by_step[m.step()].emplace(m.rank(), &m).second) {
      return ::testing::AssertionFailure() << absl::StrFormat(
                 "rank %d reported step %d twice", m.rank(), m.step());
    }
  }
  Trajectory trajectory;
  for (int64_t step = 0; step < steps; ++step) {
    const std::map<int, const StepMetrics*>& ranks = by_step[step];
    if (static_cast<int>(ranks.size()) != world) {
      return ::testing::AssertionFailure()
             << absl::StrFormat("step %d has metrics from %d of %d ranks", step,
                                ranks.size(), world);
    }
    const StepMetrics& first = *ranks.begin()->second;
    for (const auto& [rank, m] : ranks) {
      if (m->param_hash() != first.param_hash()) {
        return ::testing::AssertionFailure() << absl::StrFormat(
                   "after step %d rank %d holds parameters with hash %016x "
                   "but rank 0 holds %016x: the replicas diverged",
                   step, rank, m->param_hash(), first.param_hash());
      }
      if (m->mode() != first.mode()) {
        return ::testing::AssertionFailure() << absl::StrFormat(
                   "step %d ran in mode %s on rank %d but %s on rank 0", step,
                   SyncMode_Name(m->mode()), rank, SyncMode_Name(first.mode()));
      }
      if (m->loss() != first.loss()) {
        return ::testing::AssertionFailure() << absl::StrFormat(
                   "at step %d rank %d reports loss %.9g but rank 0 %.9g", step,
                   rank, m->loss(), first.loss());
      }
    }
    trajectory.loss.push_back(first.loss());
    trajectory.param_hash.push_back(first.param_hash());
    trajectory.mode.push_back(first.mode());
  }
  if (out != nullptr) *out = std::move(trajectory);
  return ::testing::AssertionSuccess();
}

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_INTEGRATION_LOCKSTEP_H_
