#include "server/coordinator/auto_mode.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/median.h"
#include "jobspec/sync_mode_name.h"

namespace gradsync {
namespace {

SyncMode Other(SyncMode mode) {
  return mode == SYNC_MODE_PS ? SYNC_MODE_RING : SYNC_MODE_PS;
}

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
  const SyncMode faster =
      model.ring_s <= model.ps_s ? SYNC_MODE_RING : SYNC_MODE_PS;
  const double ratio = std::max(model.ring_s, model.ps_s) /
                       std::max(1e-12, std::min(model.ring_s, model.ps_s));
  std::string text = absl::StrFormat(
      "the alpha-beta model predicts ring %s and ps%s %s of sync, %s faster "
      "by x%.2f",
      Ms(model.ring_s), TransportText(transport), Ms(model.ps_s),
      SyncModeName(faster), ratio);
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

void AutoStepCollector::Add(const StepMetrics& metrics) {
  Partial& p = partial_[metrics.step()];
  ++p.ranks;
  p.step.step = metrics.step();
  p.step.step_s = std::max(p.step.step_s, metrics.step_s());
  p.step.sync_s = std::max(p.step.sync_s, metrics.sync_busy_s());
  p.step.sync_bytes = std::max(p.step.sync_bytes, metrics.sync_bytes());
  if (metrics.rank() == 0) p.step.mode = metrics.mode();
  if (!metrics.ps_transport().empty()) {
    std::string& transport = p.step.ps_transport;
    transport = transport.empty() || transport == metrics.ps_transport()
                    ? metrics.ps_transport()
                    : "mixed";
  }
}

std::vector<AutoStep> AutoStepCollector::TakeFinished() {
  std::vector<AutoStep> finished;
  for (auto it = partial_.begin(); it != partial_.end();) {
    if (it->second.ranks >= world_size_) {
      finished.push_back(it->second.step);
      it = partial_.erase(it);
    } else {
      ++it;
    }
  }
  return finished;
}

AutoModePolicy::AutoModePolicy(AutoModeConfig config) : config_(config) {}

bool AutoModePolicy::Settled(const AutoStep& step) {
  if (step.mode != mode_) {
    mode_ = step.mode;
    mode_since_ = 0;
  }
  ++mode_since_;
  return mode_since_ > config_.settle_steps;
}

void AutoModePolicy::Record(int64_t step, SyncMode chosen, std::string reason,
                            const AutoModelView& model) {
  ModeDecision d;
  d.set_step(step);
  d.set_chosen(chosen);
  d.set_reason(std::move(reason));
  const std::vector<double>& ring =
      first_ == SYNC_MODE_RING ? first_times_ : second_times_;
  const std::vector<double>& ps =
      first_ == SYNC_MODE_PS ? first_times_ : second_times_;
  d.set_ring_step_s(Median(ring));
  d.set_ps_step_s(Median(ps));
  if (model.known) {
    d.set_ring_model_s(model.ring_s);
    d.set_ps_model_s(model.ps_s);
  }
  decisions_.push_back(std::move(d));
}

std::optional<AutoSwitch> AutoModePolicy::Decide(const AutoStep& step,
                                                 const AutoModelView& model) {
  const SyncMode second = Other(first_);
  const double t_first = Median(first_times_);
  const double t_second = Median(second_times_);
  const SyncMode best = t_second < t_first ? second : first_;
  const double ratio = std::max(t_first, t_second) /
                       std::max(1e-12, std::min(t_first, t_second));
  std::string reason = absl::StrFormat(
      "auto: measured %s %s and %s %s per step (median of %d steps each); "
      "%s is faster by x%.2f; %s",
      SyncModeName(first_), Ms(t_first), SyncModeName(second), Ms(t_second),
      config_.probe_steps, SyncModeName(best), ratio,
      ModelText(model, ps_transport_, Median(ps_sync_times_)));
  settled_ = best;
  baseline_s_ = best == first_ ? t_first : t_second;
  settled_at_ = step.step;
  window_.clear();
  const bool move = best != step.mode;
  absl::StrAppend(
      &reason, move ? absl::StrCat("; switching back to ", SyncModeName(best))
                    : absl::StrCat("; staying on ", SyncModeName(best)));
  Record(step.step, best, reason, model);
  decisions_.back().set_switch_requested(move);
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
  const SyncMode other = Other(step.mode);
  std::string reason = absl::StrCat("auto: re-measuring: ", why, "; trying ",
                                    SyncModeName(other));
  ModeDecision d;
  d.set_step(step.step);
  d.set_chosen(other);
  d.set_reason(reason);
  d.set_switch_requested(true);
  decisions_.push_back(std::move(d));
  return AutoSwitch{other, std::move(reason)};
}

std::optional<AutoSwitch> AutoModePolicy::Observe(const AutoStep& step,
                                                  const AutoModelView& model) {
  if (step.step <= last_step_) return std::nullopt;
  last_step_ = step.step;
  const SyncMode mode =
      step.mode == SYNC_MODE_PS ? SYNC_MODE_PS : SYNC_MODE_RING;
  AutoStep s = step;
  s.mode = mode;
  if (mode == SYNC_MODE_PS && !step.ps_transport.empty()) {
    ps_transport_ = step.ps_transport;
  }
  const bool counted = Settled(s);
  if (counted && mode == SYNC_MODE_PS) {
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
        const SyncMode other = Other(mode);
        std::string reason = absl::StrFormat(
            "auto: measured %s %s per step (median of %d steps); trying %s",
            SyncModeName(mode), Ms(Median(first_times_)), config_.probe_steps,
            SyncModeName(other));
        ModeDecision d;
        d.set_step(s.step);
        d.set_chosen(other);
        d.set_reason(reason);
        d.set_switch_requested(true);
        if (first_ == SYNC_MODE_RING) {
          d.set_ring_step_s(Median(first_times_));
        } else {
          d.set_ps_step_s(Median(first_times_));
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
                               SyncModeName(mode), Ms(baseline_s_), Ms(now),
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
