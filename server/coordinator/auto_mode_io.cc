#include "server/coordinator/auto_mode_io.h"

#include <algorithm>
#include <string>

#include "jobspec/sync_mode_name.h"

namespace gradsync {

void AutoStepCollector::Add(const StepMetrics& metrics) {
  Partial& p = partial_[metrics.step()];
  ++p.ranks;
  p.step.step = metrics.step();
  p.step.step_s = std::max(p.step.step_s, metrics.step_s());
  p.step.sync_s = std::max(p.step.sync_s, metrics.sync_busy_s());
  p.step.sync_bytes = std::max(p.step.sync_bytes, metrics.sync_bytes());
  if (metrics.rank() == 0) p.step.mode = SyncPathOf(metrics.mode());
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

ModeDecision ModeDecisionOf(const AutoDecision& decision) {
  ModeDecision d;
  d.set_step(decision.step);
  d.set_chosen(SyncModeOf(decision.chosen));
  d.set_reason(decision.reason);
  d.set_ring_step_s(decision.ring_step_s);
  d.set_ps_step_s(decision.ps_step_s);
  d.set_ring_model_s(decision.ring_model_s);
  d.set_ps_model_s(decision.ps_model_s);
  d.set_switch_requested(decision.switch_requested);
  return d;
}

}  // namespace gradsync
