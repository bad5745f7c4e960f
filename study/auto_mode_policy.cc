#include "study/auto_mode_policy.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/median.h"

namespace gradsync {
namespace {

std::string Ms(double seconds) {
  return absl::StrFormat("%.1f ms", 1e3 * seconds);
}

// " over the tensor plane", " over gRPC streams", ...; "" when unknown.
std::string TransportText(absl::string_view transport) {
  if (transport == "plane") return " over the tensor plane";
  if (transport == "grpc") return " over gRPC streams";
  if (transport == "mixed") return " over the tensor plane and gRPC streams";
  return "";
}

// `ps_sync_s`: the PS's measured sync time (0: not measured).
std::string ModelText(const AutoModelView& model, absl::string_view transport,
                      double ps_sync_s) {
  if (!model.known) {
    return "the model has no link facts (start the coordinator with "
           "--link-gbps)";
  }
  const SyncPath faster =
      model.ring_s <= model.ps_s ? SyncPath::kRing : SyncPath::kPs;
  const double ratio = std::max(model.ring_s, model.ps_s) /
                       std::max(1e-12, std::min(model.ring_s, model.ps_s));
  std::string text = absl::StrFormat(
      "the alpha-beta model predicts ring %s and ps%s %s of sync, %s faster "
      "by x%.2f",
      Ms(model.ring_s), TransportText(transport), Ms(model.ps_s),
      SyncPathName(faster), ratio);
  if (transport != "plane" && !transport.empty() &&
      ps_sync_s > 1.5 * model.ps_s) {
    absl::StrAppend(
        &text,
        absl::StrFormat(
            "; the PS measured %s, above the links' time: gRPC streams "
            "spend CPU per message (and on TLS) that the model leaves out, "
            "and the tensor plane (--ps-transport plane) comes closer to it",
            Ms(ps_sync_s)));
  }
  return text;
}

}  // namespace

AutoModePolicy::AutoModePolicy(AutoModeConfig config) : config_(config) {}

bool AutoModePolicy::Settled(const AutoStep& step) {
  if (step.mode != mode_) {
    mode_ = step.mode;
    mode_since_ = 0;
  }
  ++mode_since_;
  return mode_since_ > config_.settle_steps;
}

void AutoModePolicy::Record(int64_t step, SyncPath chosen, std::string reason,
                            const AutoModelView& model) {
  AutoDecision d;
  d.step = step;
  d.chosen = chosen;
  d.reason = std::move(reason);
  const std::vector<double>& ring =
      first_ == SyncPath::kRing ? first_times_ : second_times_;
  const std::vector<double>& ps =
      first_ == SyncPath::kPs ? first_times_ : second_times_;
  d.ring_step_s = Median(ring);
  d.ps_step_s = Median(ps);
  if (model.known) {
    d.ring_model_s = model.ring_s;
    d.ps_model_s = model.ps_s;
  }
  decisions_.push_back(std::move(d));
}

std::optional<AutoSwitch> AutoModePolicy::Decide(const AutoStep& step,
                                                 const AutoModelView& model) {
  const SyncPath second = OtherSyncPath(first_);
  const double t_first = Median(first_times_);
  const double t_second = Median(second_times_);
  const SyncPath best = t_second < t_first ? second : first_;
  const double ratio = std::max(t_first, t_second) /
                       std::max(1e-12, std::min(t_first, t_second));
  std::string reason = absl::StrFormat(
      "auto: measured %s %s and %s %s per step (median of %d steps each); "
      "%s is faster by x%.2f; %s",
      SyncPathName(first_), Ms(t_first), SyncPathName(second), Ms(t_second),
      config_.probe_steps, SyncPathName(best), ratio,
      ModelText(model, ps_transport_, Median(ps_sync_times_)));
  settled_ = best;
  baseline_s_ = best == first_ ? t_first : t_second;
  settled_at_ = step.step;
  window_.clear();
  const bool move = best != step.mode;
  absl::StrAppend(
      &reason, move ? absl::StrCat("; switching back to ", SyncPathName(best))
                    : absl::StrCat("; staying on ", SyncPathName(best)));
  Record(step.step, best, reason, model);
  decisions_.back().switch_requested = move;
  if (!move) {
    phase_ = Phase::kSettled;
    return std::nullopt;
  }
  phase_ = Phase::kAwaitingChoice;
  return AutoSwitch{best, std::move(reason)};
}

std::optional<AutoSwitch> AutoModePolicy::Remeasure(const AutoStep& step,
                                                    std::string why) {
  // The settled mode's fresh window is the first measurement.
  first_ = step.mode;
  first_times_ = window_;
  second_times_.clear();
  window_.clear();
  phase_ = Phase::kAwaitingSecond;
  const SyncPath other = OtherSyncPath(step.mode);
  std::string reason = absl::StrCat("auto: re-measuring: ", why, "; trying ",
                                    SyncPathName(other));
  AutoDecision d;
  d.step = step.step;
  d.chosen = other;
  d.reason = reason;
  d.switch_requested = true;
  decisions_.push_back(std::move(d));
  return AutoSwitch{other, std::move(reason)};
}

std::optional<AutoSwitch> AutoModePolicy::Observe(const AutoStep& step,
                                                  const AutoModelView& model) {
  if (step.step <= last_step_) return std::nullopt;
  last_step_ = step.step;
  const SyncPath mode = step.mode;
  const AutoStep& s = step;
  if (mode == SyncPath::kPs && !step.ps_transport.empty()) {
    ps_transport_ = step.ps_transport;
  }
  const bool counted = Settled(s);
  if (counted && mode == SyncPath::kPs) {
    ps_sync_times_.push_back(step.sync_s);
    const size_t keep = static_cast<size_t>(std::max(1, config_.probe_steps));
    if (ps_sync_times_.size() > keep)
      ps_sync_times_.erase(ps_sync_times_.begin());
  }
  switch (phase_) {
    case Phase::kMeasuringFirst:
      if (mode != first_) {
        first_ = mode;
        first_times_.clear();
      }
      if (!counted) return std::nullopt;
      first_times_.push_back(s.step_s);
      if (static_cast<int>(first_times_.size()) < config_.probe_steps) {
        return std::nullopt;
      } else {
        const SyncPath other = OtherSyncPath(mode);
        std::string reason = absl::StrFormat(
            "auto: measured %s %s per step (median of %d steps); trying %s",
            SyncPathName(mode), Ms(Median(first_times_)), config_.probe_steps,
            SyncPathName(other));
        AutoDecision d;
        d.step = s.step;
        d.chosen = other;
        d.reason = reason;
        d.switch_requested = true;
        if (first_ == SyncPath::kRing) {
          d.ring_step_s = Median(first_times_);
        } else {
          d.ps_step_s = Median(first_times_);
        }
        decisions_.push_back(std::move(d));
        phase_ = Phase::kAwaitingSecond;
        return AutoSwitch{other, std::move(reason)};
      }
    case Phase::kAwaitingSecond:
      if (mode == first_) return std::nullopt;
      phase_ = Phase::kMeasuringSecond;
      [[fallthrough]];
    case Phase::kMeasuringSecond:
      if (!counted || mode == first_) return std::nullopt;
      second_times_.push_back(s.step_s);
      if (static_cast<int>(second_times_.size()) < config_.probe_steps) {
        return std::nullopt;
      }
      return Decide(s, model);
    case Phase::kAwaitingChoice:
      if (mode != settled_) return std::nullopt;
      phase_ = Phase::kSettled;
      return std::nullopt;
    case Phase::kSettled: {
      if (mode != settled_) {
        // Switched by someone else (gradsync switch): measure afresh,
        // starting with where the job is now.
        phase_ = Phase::kMeasuringFirst;
        first_ = mode;
        first_times_.clear();
        second_times_.clear();
        return std::nullopt;
      }
      if (!counted) return std::nullopt;
      window_.push_back(s.step_s);
      if (static_cast<int>(window_.size()) > config_.probe_steps) {
        window_.erase(window_.begin());
      }
      if (static_cast<int>(window_.size()) < config_.probe_steps) {
        return std::nullopt;
      }
      const double now = Median(window_);
      const double change = (now - baseline_s_) / baseline_s_;
      if (std::abs(change) > config_.change_threshold) {
        return Remeasure(
            s, absl::StrFormat("the %s step time moved from %s to %s (%+.0f%%)",
                               SyncPathName(mode), Ms(baseline_s_), Ms(now),
                               100 * change));
      }
      if (config_.recheck_every > 0 &&
          s.step - settled_at_ >= config_.recheck_every) {
        return Remeasure(s, absl::StrCat(s.step - settled_at_,
                                         " steps since the last decision"));
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace gradsync
