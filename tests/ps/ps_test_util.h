// Helpers shared by the parameter-server tests: shard configs and shards,
// one-call pushes, and a state snapshot to compare "nothing changed".
#ifndef GRADSYNC_TESTS_PS_PS_TEST_UTIL_H_
#define GRADSYNC_TESTS_PS_PS_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/shard/ps_shard.h"
#include "server/ps/transport/tensor_codec.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {

inline constexpr absl::Duration kWait = absl::Seconds(10);

inline absl::Time Soon(absl::Duration d = kWait) { return absl::Now() + d; }

// Waits (up to kWait) until `done` holds; whether it did.
template <typename Done>
bool Eventually(Done done) {
  const absl::Time deadline = Soon();
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return done();
}

// A shard config over [begin, end) with SGD at learning rate `lr`.
inline PsShardConfig ShardConfig(int num_workers, size_t begin, size_t end,
                                 UpdateMode mode = UpdateMode::kSync,
                                 double lr = 1.0) {
  PsShardConfig config;
  config.job_id = "job";
  config.shard = 0;
  config.begin = begin;
  config.end = end;
  config.num_workers = num_workers;
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.lr = lr;
  config.mode = mode;
  return config;
}

// A shard over `params`; null (and a test failure) if Create refuses.
inline std::shared_ptr<PsShard> MakeShard(const PsShardConfig& config,
                                          std::vector<float> params) {
  absl::StatusOr<std::shared_ptr<PsShard>> shard =
      PsShard::Create(config, std::move(params));
  EXPECT_THAT(shard, IsOk());
  return shard.ok() ? *shard : nullptr;
}

// BeginPush + Append (in chunks of `chunk` floats) + Commit.
[[nodiscard]] inline absl::Status PushGradient(PsShard& shard, int rank,
                                               int64_t step,
                                               absl::Span<const float> grads,
                                               size_t chunk = 7,
                                               absl::Time deadline = Soon()) {
  absl::StatusOr<PsShard::Push> push = shard.BeginPush(rank, step, deadline);
  if (!push.ok()) return push.status();
  for (size_t i = 0; i < grads.size(); i += chunk) {
    const size_t n = std::min(chunk, grads.size() - i);
    absl::Status status = push->Append(AsBytes(grads.subspan(i, n)));
    if (!status.ok()) return status;
  }
  return shard.Commit(std::move(*push), deadline);
}

// The parameters Pull returns for `step`, copied.
[[nodiscard]] inline absl::StatusOr<std::vector<float>> PullParams(
    PsShard& shard, int rank, int64_t step, absl::Time deadline = Soon()) {
  absl::StatusOr<ShardViewRef> view = shard.Pull(rank, step, deadline);
  if (!view.ok()) return view.status();
  return std::vector<float>((*view)->params.begin(), (*view)->params.end());
}

// Everything observable about a shard that a failed call must not change.
struct ShardSnapshot {
  ParameterState state;
  std::vector<int64_t> rank_steps;
  uint64_t pushes = 0;
  uint64_t updates = 0;
  int queue_depth = 0;
  bool operator==(const ShardSnapshot& o) const {
    return state.step == o.state.step && state.params == o.state.params &&
           state.optimizer.step == o.state.optimizer.step &&
           state.optimizer.buffers == o.state.optimizer.buffers &&
           rank_steps == o.rank_steps && pushes == o.pushes &&
           updates == o.updates && queue_depth == o.queue_depth;
  }
};

// The counters only: for a shard in the middle of a step, whose state
// cannot be exported then (PsShard::ExportState).
inline ShardSnapshot StatsSnapshot(PsShard& shard) {
  ShardSnapshot snapshot;
  const PsShardStats stats = shard.Stats();
  snapshot.rank_steps = stats.rank_steps;
  snapshot.pushes = stats.pushes;
  snapshot.updates = stats.updates;
  snapshot.queue_depth = stats.queue_depth;
  return snapshot;
}

// The state and the counters. A snapshot that cannot read the state would
// compare equal to any other such snapshot and hide a change, so that is a
// test failure (use StatsSnapshot in the middle of a step).
inline ShardSnapshot Snapshot(PsShard& shard) {
  ShardSnapshot snapshot = StatsSnapshot(shard);
  absl::StatusOr<ParameterState> state = shard.ExportState(Soon());
  if (state.ok()) {
    snapshot.state = *std::move(state);
  } else {
    ADD_FAILURE() << "Snapshot could not export the shard's state: "
                  << state.status();
  }
  return snapshot;
}

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_PS_PS_TEST_UTIL_H_
