#include "server/coordinator/state_saver.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"

namespace gradsync {

namespace {

// Appends to `changed` the saved form of each record whose bytes differ
// from those in `saved_bytes`, and to `new_bytes` what they become.
template <typename Record, typename SaveFn, typename Saved>
void DiffDaemons(
    const std::vector<const Record*>& records, SaveFn save,
    const absl::flat_hash_map<std::string, std::string>& saved_bytes,
    std::vector<Saved>* changed,
    std::vector<std::pair<std::string, std::string>>* new_bytes) {
  for (const Record* record : records) {
    Saved saved = save(*record);
    std::string bytes = saved.SerializeAsString();
    auto it = saved_bytes.find(record->id);
    if (it != saved_bytes.end() && it->second == bytes) continue;
    changed->push_back(std::move(saved));
    new_bytes->emplace_back(record->id, std::move(bytes));
  }
}

}  // namespace

void StateSaver::SetKey(std::string key, std::string value) {
  if (!enabled()) return;
  keys_.set_keys.emplace_back(std::move(key), std::move(value));
}

void StateSaver::ErasePrefix(std::string prefix) {
  if (!enabled()) return;
  // Keys set before the erase would survive it (StateChange erases first).
  auto& sets = keys_.set_keys;
  sets.erase(std::remove_if(sets.begin(), sets.end(),
                            [&](const auto& kv) {
                              return absl::StartsWith(kv.first, prefix);
                            }),
             sets.end());
  keys_.erased_key_prefixes.push_back(std::move(prefix));
}

absl::Status StateSaver::SaveChanges(const SavedMeta& meta,
                                     const WorkerRegistry& workers,
                                     const PsRegistry& servers,
                                     const JobTable& jobs) {
  if (!enabled()) return absl::OkStatus();
  StateChange change;
  change.erased_key_prefixes = keys_.erased_key_prefixes;
  change.set_keys = keys_.set_keys;
  // What becomes "saved" once the change is applied.
  std::string new_meta = meta.SerializeAsString();
  std::vector<std::pair<std::string, std::string>> new_workers, new_servers,
      new_jobs;
  std::vector<std::pair<std::string, int64_t>> new_metrics;

  if (new_meta != meta_) change.meta = meta;
  DiffDaemons(workers.All(), SaveWorker, workers_, &change.workers,
              &new_workers);
  DiffDaemons(servers.All(), SaveServer, servers_, &change.servers,
              &new_servers);
  const absl::flat_hash_set<std::string> pending(jobs.pending().begin(),
                                                 jobs.pending().end());
  const absl::flat_hash_set<std::string> ended(jobs.ended().begin(),
                                               jobs.ended().end());
  absl::flat_hash_set<std::string> present;
  for (const Job* job : jobs.All()) {
    present.insert(job->id());
    SavedJob saved =
        job->Save(jobs.NumberOf(job->id()), pending.contains(job->id()),
                  ended.contains(job->id()));
    std::string bytes = saved.SerializeAsString();
    auto it = jobs_.find(job->id());
    if (it == jobs_.end() || it->second != bytes) {
      change.jobs.push_back(std::move(saved));
      new_jobs.emplace_back(job->id(), std::move(bytes));
    }
    const int64_t total = static_cast<int64_t>(job->metrics().size());
    auto m = metrics_saved_.find(job->id());
    const int64_t done = m == metrics_saved_.end() ? 0 : m->second;
    if (total > done) {
      StateChange::Metrics metrics;
      metrics.job_id = job->id();
      metrics.first_index = done;
      metrics.steps.assign(job->metrics().begin() + done, job->metrics().end());
      change.metrics.push_back(std::move(metrics));
      new_metrics.emplace_back(job->id(), total);
    }
  }
  for (const auto& [id, bytes] : jobs_) {
    if (!present.contains(id)) change.dropped_jobs.push_back(id);
  }
  if (change.empty()) return absl::OkStatus();
  if (absl::Status status = store_->Apply(change); !status.ok()) {
    return status;
  }
  keys_ = StateChange();
  meta_ = std::move(new_meta);
  for (auto& [id, bytes] : new_workers) workers_[id] = std::move(bytes);
  for (auto& [id, bytes] : new_servers) servers_[id] = std::move(bytes);
  for (auto& [id, bytes] : new_jobs) jobs_[id] = std::move(bytes);
  for (const auto& [id, count] : new_metrics) metrics_saved_[id] = count;
  for (const std::string& id : change.dropped_jobs) {
    jobs_.erase(id);
    metrics_saved_.erase(id);
  }
  return absl::OkStatus();
}

void StateSaver::Remember(const SavedState& state) {
  meta_ = state.meta.SerializeAsString();
  for (const SavedWorker& w : state.workers) {
    workers_[w.id()] = w.SerializeAsString();
  }
  for (const SavedServer& s : state.servers) {
    servers_[s.id()] = s.SerializeAsString();
  }
  for (const SavedJob& j : state.jobs) {
    jobs_[j.id()] = j.SerializeAsString();
    auto it = state.metrics.find(j.id());
    metrics_saved_[j.id()] =
        it == state.metrics.end() ? 0 : static_cast<int64_t>(it->second.size());
  }
}

SavedWorker SaveWorker(const WorkerRecord& worker) {
  SavedWorker saved;
  saved.set_id(worker.id);
  saved.set_number(worker.number);
  saved.set_host(worker.host);
  saved.set_address(worker.address);
  saved.set_pid(worker.pid);
  for (const Device& d : worker.devices) *saved.add_devices() = d;
  for (const std::string& job : worker.device_jobs) saved.add_device_jobs(job);
  saved.set_lost(worker.lost);
  saved.set_lost_time_us(absl::ToUnixMicros(worker.lost_time));
  SavedMailbox* mailbox = saved.mutable_mailbox();
  for (const Assignment& a : worker.mailbox.assignments) {
    *mailbox->add_assignments() = a;
  }
  for (const std::string& id : worker.mailbox.cancel_job_ids) {
    mailbox->add_cancel_job_ids(id);
  }
  for (const std::string& why : worker.mailbox.cancel_reasons) {
    mailbox->add_cancel_reasons(why);
  }
  for (const SwitchNotice& n : worker.mailbox.switches) {
    *mailbox->add_switches() = n;
  }
  saved.set_credential(worker.credential);
  saved.set_job_memory_bytes(worker.job_memory_bytes);
  return saved;
}

WorkerRecord RestoreWorker(const SavedWorker& saved, absl::Time now) {
  WorkerRecord worker;
  worker.id = saved.id();
  worker.number = saved.number();
  worker.host = saved.host();
  worker.address = saved.address();
  worker.pid = saved.pid();
  worker.devices.assign(saved.devices().begin(), saved.devices().end());
  worker.device_jobs.assign(saved.device_jobs().begin(),
                            saved.device_jobs().end());
  worker.device_jobs.resize(worker.devices.size());
  worker.job_memory_bytes = saved.job_memory_bytes();
  worker.last_heartbeat = now;
  worker.lost = saved.lost();
  worker.lost_time = absl::FromUnixMicros(saved.lost_time_us());
  const SavedMailbox& mailbox = saved.mailbox();
  worker.mailbox.assignments.assign(mailbox.assignments().begin(),
                                    mailbox.assignments().end());
  worker.mailbox.cancel_job_ids.assign(mailbox.cancel_job_ids().begin(),
                                       mailbox.cancel_job_ids().end());
  worker.mailbox.cancel_reasons.assign(mailbox.cancel_reasons().begin(),
                                       mailbox.cancel_reasons().end());
  worker.mailbox.switches.assign(mailbox.switches().begin(),
                                 mailbox.switches().end());
  worker.credential = saved.credential();
  return worker;
}

SavedServer SaveServer(const PsRecord& server) {
  SavedServer saved;
  saved.set_id(server.id);
  saved.set_number(server.number);
  saved.set_host(server.host);
  saved.set_address(server.address);
  saved.set_pid(server.pid);
  saved.set_tensor_port(server.tensor_port);
  saved.set_lost(server.lost);
  saved.set_lost_time_us(absl::ToUnixMicros(server.lost_time));
  saved.set_credential(server.credential);
  return saved;
}

PsRecord RestoreServer(const SavedServer& saved, absl::Time now) {
  PsRecord server;
  server.id = saved.id();
  server.number = saved.number();
  server.host = saved.host();
  server.address = saved.address();
  server.pid = saved.pid();
  server.tensor_port = saved.tensor_port();
  server.last_heartbeat = now;
  server.lost = saved.lost();
  server.lost_time = absl::FromUnixMicros(saved.lost_time_us());
  server.credential = saved.credential();
  return server;
}

}  // namespace gradsync
