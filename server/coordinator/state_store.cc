#include "server/coordinator/state_store.h"

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"

namespace gradsync {
namespace {

class MemoryStateStore : public StateStore {
 public:
  [[nodiscard]] absl::StatusOr<SavedState> Load() override {
    absl::MutexLock lock(&mu_);
    SavedState state;
    state.meta = meta_;
    for (const auto& [number, worker] : workers_) {
      state.workers.push_back(worker);
    }
    for (const auto& [number, server] : servers_) {
      state.servers.push_back(server);
    }
    for (const auto& [number, job] : jobs_) {
      state.jobs.push_back(job);
      auto it = metrics_.find(job.id());
      if (it == metrics_.end()) continue;
      std::vector<StepMetrics>& steps = state.metrics[job.id()];
      for (const auto& [index, step] : it->second) steps.push_back(step);
    }
    state.keys.assign(keys_.begin(), keys_.end());
    return state;
  }

  [[nodiscard]] absl::Status Apply(const StateChange& change) override {
    absl::MutexLock lock(&mu_);
    if (change.meta.has_value()) meta_ = *change.meta;
    for (const SavedWorker& w : change.workers) workers_[w.number()] = w;
    for (const SavedServer& s : change.servers) servers_[s.number()] = s;
    for (const SavedJob& j : change.jobs) jobs_[j.number()] = j;
    for (const std::string& id : change.dropped_jobs) {
      for (auto it = jobs_.begin(); it != jobs_.end();) {
        it = it->second.id() == id ? jobs_.erase(it) : std::next(it);
      }
      metrics_.erase(id);
    }
    for (const StateChange::Metrics& m : change.metrics) {
      std::map<int64_t, StepMetrics>& steps = metrics_[m.job_id];
      for (size_t i = 0; i < m.steps.size(); ++i) {
        steps[m.first_index + static_cast<int64_t>(i)] = m.steps[i];
      }
    }
    for (const std::string& prefix : change.erased_key_prefixes) {
      for (auto it = keys_.lower_bound(prefix);
           it != keys_.end() && absl::StartsWith(it->first, prefix);) {
        it = keys_.erase(it);
      }
    }
    for (const auto& [key, value] : change.set_keys) keys_[key] = value;
    return absl::OkStatus();
  }

  std::string Describe() const override { return "state kept in memory"; }

 private:
  absl::Mutex mu_;
  SavedMeta meta_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, SavedWorker> workers_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, SavedServer> servers_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, SavedJob> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::map<int64_t, StepMetrics>> metrics_
      ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> keys_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::shared_ptr<StateStore> NewMemoryStateStore() {
  return std::make_shared<MemoryStateStore>();
}

}  // namespace gradsync
