#include "worker/model/synthetic.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace gradsync {
namespace {

constexpr uint64_t kModulus = 17;  // values (x mod 17) - 8 lie in [-8, 8]

void WaitUntil(absl::Time deadline, EmulatedWait wait) {
  if (wait == EmulatedWait::kSleep) {
    const absl::Duration left = deadline - absl::Now();
    if (left > absl::ZeroDuration()) absl::SleepFor(left);
    return;
  }
  while (absl::Now() < deadline) {
  }
}

}  // namespace

absl::StatusOr<SyntheticWorkload> SyntheticWorkload::Create(
    const SyntheticConfig& config) {
  if (config.compute_time < absl::ZeroDuration() ||
      config.compute_time == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("synthetic compute_time must be finite and >= 0, got ",
                     absl::FormatDuration(config.compute_time)));
  }
  if (!config.layer_floats.empty()) {
    size_t total = 0;
    for (size_t f : config.layer_floats) total += f;
    if (total != config.num_floats) {
      return absl::InvalidArgumentError(
          absl::StrCat("synthetic layers hold ", total,
                       " floats; the gradient has ", config.num_floats));
    }
    if (!config.layer_cost.empty() &&
        config.layer_cost.size() != config.layer_floats.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(config.layer_cost.size(), " layer costs for ",
                       config.layer_floats.size(), " synthetic layers"));
    }
    for (double c : config.layer_cost) {
      if (!(c >= 0) || !std::isfinite(c)) {
        return absl::InvalidArgumentError(
            absl::StrCat("a synthetic layer cost of ", c, "; costs are >= 0"));
      }
    }
  }
  return SyntheticWorkload(config);
}

size_t SyntheticWorkload::num_chunks() const {
  if (!config_.layer_floats.empty()) return config_.layer_floats.size();
  const size_t n = config_.num_floats;
  const size_t chunk = config_.chunk_floats == 0 ? n : config_.chunk_floats;
  if (n == 0) return 1;  // one empty range, so that callers stay in step
  return n / chunk + (n % chunk != 0 ? 1 : 0);
}

float SyntheticWorkload::Value(uint64_t rank, uint64_t step, size_t index) {
  const uint64_t x = (index % kModulus) + 5 * (rank % kModulus) +
                     3 * (step % kModulus) + (index / kModulus) % 7;
  return static_cast<float>(static_cast<int64_t>(x % kModulus) - 8);
}

float SyntheticWorkload::ExpectedSum(uint64_t num_ranks, uint64_t step,
                                     size_t index) {
  int64_t sum = 0;
  for (uint64_t r = 0; r < num_ranks; ++r) {
    sum += static_cast<int64_t>(Value(r, step, index));
  }
  return static_cast<float>(sum);
}

absl::Status SyntheticWorkload::Backward(uint64_t rank, uint64_t step,
                                         absl::Span<float> grads, GradMode mode,
                                         const GradReadyCallback& ready) const {
  const size_t n = config_.num_floats;
  if (grads.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "synthetic gradient needs ", n, " floats, got ", grads.size()));
  }
  const size_t chunk = config_.chunk_floats == 0 ? n : config_.chunk_floats;
  const absl::Time start = absl::Now();
  if (n == 0) {
    WaitUntil(start + config_.compute_time, config_.wait);
    if (ready) ready(0, 0);
    return absl::OkStatus();
  }
  auto fill = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const float v = Value(rank, step, i);
      grads[i] = mode == GradMode::kAccumulate ? grads[i] + v : v;
    }
  };
  if (!config_.layer_floats.empty()) {
    // Layer by layer from the last, each at its share of the cost.
    double total_cost = 0;
    for (double c : config_.layer_cost) total_cost += c;
    const bool by_cost = total_cost > 0;
    double done_cost = 0;
    size_t end = n;
    for (size_t l = config_.layer_floats.size(); l-- > 0;) {
      const size_t begin = end - config_.layer_floats[l];
      fill(begin, end);
      done_cost += by_cost ? config_.layer_cost[l]
                           : static_cast<double>(config_.layer_floats[l]);
      const double done =
          done_cost / (by_cost ? total_cost : static_cast<double>(n));
      WaitUntil(start + config_.compute_time * done, config_.wait);
      if (ready) ready(begin, end);
      end = begin;
    }
    return absl::OkStatus();
  }
  size_t end = n;
  while (end > 0) {
    const size_t begin = end - std::min(chunk, end);
    fill(begin, end);
    const double done = static_cast<double>(n - begin) / n;
    WaitUntil(start + config_.compute_time * done, config_.wait);
    if (ready) ready(begin, end);
    end = begin;
  }
  return absl::OkStatus();
}

}  // namespace gradsync
