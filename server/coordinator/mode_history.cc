#include "server/coordinator/mode_history.h"

#include <iterator>
#include <utility>

namespace gradsync {
namespace {

SyncMode Normalized(SyncMode mode) {
  return mode == SYNC_MODE_UNSPECIFIED ? SYNC_MODE_RING : mode;
}

}  // namespace

ModeHistory::ModeHistory(SyncMode initial) : initial_(Normalized(initial)) {}

void ModeHistory::Record(int64_t step, SyncMode mode, int64_t epoch,
                         double switch_s) {
  auto [it, inserted] = steps_.insert_or_assign(
      step, StepMode{Normalized(mode), epoch, switch_s});
  // Only this step's record and the next step's can change.
  Refresh(it);
  if (auto next = std::next(it); next != steps_.end()) Refresh(next);
}

void ModeHistory::Refresh(Steps::const_iterator it) {
  if (it == steps_.begin() || std::prev(it)->second.mode == it->second.mode) {
    switches_.erase(it->first);
    return;
  }
  SwitchRecord record;
  record.set_step(it->first);
  record.set_from_mode(std::prev(it)->second.mode);
  record.set_to_mode(it->second.mode);
  record.set_epoch(it->second.epoch);
  record.set_move_s(it->second.switch_s);
  switches_[it->first] = std::move(record);
}

SyncMode ModeHistory::current() const {
  return steps_.empty() ? initial_ : steps_.rbegin()->second.mode;
}

std::vector<SwitchRecord> ModeHistory::Switches() const {
  std::vector<SwitchRecord> switches;
  switches.reserve(switches_.size());
  for (const auto& [step, record] : switches_) switches.push_back(record);
  return switches;
}

}  // namespace gradsync
