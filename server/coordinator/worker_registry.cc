#include "server/coordinator/worker_registry.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "common/wire_version.h"
#include "security/secret.h"

namespace gradsync {
namespace {

constexpr absl::string_view kWorkerIdPrefix = "w-";

[[nodiscard]] absl::Status InvalidRegistration(
    const RegisterWorkerRequest& request, absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("cannot register worker (host '", request.host(), "', pid ",
                   request.pid(), "): ", problem));
}

}  // namespace

double UnixTimeSeconds(absl::Time t) {
  return absl::ToDoubleSeconds(t - absl::UnixEpoch());
}

int WorkerRecord::FreeDevices(absl::string_view kind) const {
  if (lost) return 0;
  int free = 0;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].kind() == kind && device_jobs[i].empty()) ++free;
  }
  return free;
}

std::vector<std::string> WorkerRecord::JobIds() const {
  std::vector<std::string> ids;
  for (const std::string& job : device_jobs) {
    if (!job.empty() && std::find(ids.begin(), ids.end(), job) == ids.end()) {
      ids.push_back(job);
    }
  }
  return ids;
}

absl::StatusOr<const WorkerRecord*> WorkerRegistry::Register(
    const RegisterWorkerRequest& request, absl::Time now) {
  RETURN_IF_ERROR(CheckWireVersion(
      request.wire_version(), absl::StrCat("worker (host '", request.host(),
                                           "', pid ", request.pid(), ")")));
  if (request.host().empty()) {
    return InvalidRegistration(request,
                               "host is empty; pass the machine's host name");
  }
  if (request.address().empty()) {
    return InvalidRegistration(
        request,
        "address is empty; pass the IP that other workers reach "
        "this one on for the ring");
  }
  if (request.devices().empty()) {
    return InvalidRegistration(
        request,
        "no devices listed; a worker offers at least one cpu or "
        "cuda device");
  }
  absl::flat_hash_set<std::pair<std::string, int>> seen;
  for (const Device& device : request.devices()) {
    if (device.kind() != "cpu" && device.kind() != "cuda") {
      return InvalidRegistration(
          request, absl::StrCat("device kind '", device.kind(),
                                "' is unknown; use \"cpu\" or \"cuda\""));
    }
    if (device.index() < 0) {
      return InvalidRegistration(
          request, absl::StrCat("device ", device.kind(), ":", device.index(),
                                " has a negative index"));
    }
    if (!seen.insert({device.kind(), device.index()}).second) {
      return InvalidRegistration(
          request, absl::StrCat("device ", device.kind(), ":", device.index(),
                                " is listed twice"));
    }
  }
  const int64_t number = next_number_++;
  WorkerRecord& worker = workers_[number];
  worker.id = absl::StrCat(kWorkerIdPrefix, number);
  worker.number = number;
  worker.host = request.host();
  worker.address = request.address();
  worker.pid = request.pid();
  worker.devices.assign(request.devices().begin(), request.devices().end());
  worker.device_jobs.assign(worker.devices.size(), "");
  worker.job_memory_bytes = std::max<int64_t>(request.job_memory_bytes(), 0);
  worker.last_heartbeat = now;
  worker.credential = RandomSecret();
  return &worker;
}

absl::Status CheckCredential(const WorkerRecord& worker,
                             absl::string_view credential) {
  return CheckDaemonCredential("worker", worker.id, worker.credential,
                               credential);
}

absl::Status WorkerRegistry::Authenticate(absl::string_view id,
                                          absl::string_view credential) const {
  const WorkerRecord* worker = Find(id);
  if (worker == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat("no worker '", id, "' is registered; register first"));
  }
  return CheckCredential(*worker, credential);
}

WorkerRecord* WorkerRegistry::Find(absl::string_view id) {
  absl::string_view digits = id;
  int64_t number = 0;
  if (!absl::ConsumePrefix(&digits, kWorkerIdPrefix) ||
      !absl::SimpleAtoi(digits, &number)) {
    return nullptr;
  }
  auto it = workers_.find(number);
  // SimpleAtoi also accepts "+1" or "01": only the exact id matches.
  if (it == workers_.end() || it->second.id != id) return nullptr;
  return &it->second;
}

const WorkerRecord* WorkerRegistry::Find(absl::string_view id) const {
  return const_cast<WorkerRegistry*>(this)->Find(id);
}

void WorkerRegistry::Renew(WorkerRecord& worker, absl::Time now) {
  worker.last_heartbeat = std::max(worker.last_heartbeat, now);
}

std::vector<std::string> WorkerRegistry::Expired(absl::Time now,
                                                 absl::Duration lease) const {
  std::vector<std::string> expired;
  for (const auto& [number, worker] : workers_) {
    if (!worker.lost &&
        now - std::max(worker.last_heartbeat, worker.lease_from) > lease) {
      expired.push_back(worker.id);
    }
  }
  return expired;
}

void WorkerRegistry::MarkLost(WorkerRecord& worker, absl::Time now) {
  worker.lost = true;
  worker.lost_time = now;
  worker.device_jobs.assign(worker.devices.size(), "");
  worker.mailbox = Mailbox();
}

int WorkerRegistry::TotalDevices(absl::string_view kind) const {
  return Inventory().Total(kind);
}

int WorkerRegistry::FreeDevices(absl::string_view kind) const {
  return Inventory().Free(kind);
}

std::optional<std::vector<DeviceSlot>> WorkerRegistry::Allocate(
    absl::string_view job_id, absl::string_view kind, int count) {
  DeviceInventory inventory = Inventory();
  std::optional<std::vector<DeviceSlot>> slots = inventory.Take(kind, count);
  if (slots.has_value()) Assign(job_id, *slots);
  return slots;
}

void WorkerRegistry::Assign(absl::string_view job_id,
                            const std::vector<DeviceSlot>& slots) {
  for (const DeviceSlot& slot : slots) {
    WorkerRecord* worker = Find(slot.worker_id);
    if (worker == nullptr) continue;
    for (size_t i = 0; i < worker->devices.size(); ++i) {
      if (worker->devices[i].kind() == slot.device.kind() &&
          worker->devices[i].index() == slot.device.index()) {
        worker->device_jobs[i] = std::string(job_id);
      }
    }
  }
}

DeviceInventory WorkerRegistry::Inventory() const {
  return Inventory([](absl::string_view) -> int64_t { return 0; });
}

DeviceInventory WorkerRegistry::Inventory(
    absl::FunctionRef<int64_t(absl::string_view job_id)> rank_bytes_of) const {
  std::vector<DeviceInventory::Worker> live;
  for (const auto& [number, worker] : workers_) {
    if (worker.lost) continue;
    DeviceInventory::Worker w;
    w.id = worker.id;
    w.host = worker.host;
    w.number = worker.number;
    w.devices = worker.devices;
    w.job_memory_bytes = worker.job_memory_bytes;
    for (const std::string& job : worker.device_jobs) {
      w.free.push_back(job.empty());
      if (!job.empty()) w.memory_in_use += rank_bytes_of(job);
    }
    live.push_back(std::move(w));
  }
  return DeviceInventory(std::move(live));
}

void WorkerRegistry::Release(absl::string_view job_id) {
  for (auto& [number, worker] : workers_) {
    for (std::string& job : worker.device_jobs) {
      if (job == job_id) job.clear();
    }
  }
}

void WorkerRegistry::ReleaseOn(WorkerRecord& worker, absl::string_view job_id) {
  for (std::string& job : worker.device_jobs) {
    if (job == job_id) job.clear();
  }
}

std::vector<std::string> WorkerRegistry::FreeEnded(
    WorkerRecord& worker, const absl::flat_hash_set<std::string>& held,
    absl::FunctionRef<bool(absl::string_view job_id)> ended) {
  std::vector<std::string> freed;
  for (const std::string& job : worker.JobIds()) {
    if (held.contains(job) || !ended(job)) continue;
    ReleaseOn(worker, job);
    freed.push_back(job);
  }
  return freed;
}

std::string WorkerRegistry::DescribeDevices(absl::string_view kind) const {
  return Inventory().Describe(kind);
}

std::vector<const WorkerRecord*> WorkerRegistry::All() const {
  std::vector<const WorkerRecord*> all;
  all.reserve(workers_.size());
  for (const auto& [number, worker] : workers_) all.push_back(&worker);
  return all;
}

std::vector<WorkerRecord*> WorkerRegistry::AllMutable() {
  std::vector<WorkerRecord*> all;
  all.reserve(workers_.size());
  for (auto& [number, worker] : workers_) all.push_back(&worker);
  return all;
}

WorkerInfo WorkerRegistry::Info(const WorkerRecord& worker) {
  WorkerInfo info;
  info.set_worker_id(worker.id);
  info.set_host(worker.host);
  info.set_address(worker.address);
  for (const Device& device : worker.devices) *info.add_devices() = device;
  const std::vector<std::string> jobs = worker.JobIds();
  for (const std::string& job : jobs) info.add_job_ids(job);
  if (worker.lost) {
    info.set_state(WORKER_STATE_LOST);
  } else {
    info.set_state(jobs.empty() ? WORKER_STATE_IDLE : WORKER_STATE_BUSY);
  }
  info.set_last_heartbeat(UnixTimeSeconds(worker.last_heartbeat));
  int free = 0;
  for (size_t i = 0; i < worker.devices.size(); ++i) {
    if (!worker.lost && worker.device_jobs[i].empty()) ++free;
  }
  info.set_free_devices(free);
  info.set_job_memory_bytes(worker.job_memory_bytes);
  return info;
}

}  // namespace gradsync
