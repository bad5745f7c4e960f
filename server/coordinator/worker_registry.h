// WorkerRegistry: the worker daemons the coordinator knows, their devices,
// which job holds each device, their leases and their mailboxes (news a
// worker collects with its next heartbeat).
//
// Lifecycle of a worker:
//
//   Register ──► live (IDLE: no device held / BUSY: some device held)
//                  │   a device stays held after its job ends until a
//                  │   heartbeat no longer lists the job (FreeEnded)
//                  │ no heartbeat for the lease time (CheckLeases)
//                  ▼
//                LOST (kept for ListWorkers; its id is never reused; the
//                      daemon must register again under a new id)
//
// Device allocation takes free devices in (host, worker number, device
// index) order, so that the ranks of one host are adjacent in the ring and
// only the ring's host-to-host hops cross the network.
//
// Not thread-safe: CoordinatorService owns one and guards it with its
// mutex.
#ifndef GRADSYNC_SERVER_COORDINATOR_WORKER_REGISTRY_H_
#define GRADSYNC_SERVER_COORDINATOR_WORKER_REGISTRY_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/coordinator.pb.h"
#include "server/coordinator/device_inventory.h"

namespace gradsync {

// News for a worker, handed over (and emptied) by its next heartbeat.
struct Mailbox {
  std::vector<Assignment> assignments;
  std::vector<std::string> cancel_job_ids;
  std::vector<std::string> cancel_reasons;  // one per cancelled job
  // Runtime switch requests: at most one per job, the newest epoch.
  std::vector<SwitchNotice> switches;

  bool empty() const {
    return assignments.empty() && cancel_job_ids.empty() && switches.empty();
  }
};

struct WorkerRecord {
  std::string id;      // "w-<number>"
  int64_t number = 0;  // registration order, from 1
  std::string host;
  std::string address;
  int32_t pid = 0;
  std::vector<Device> devices;
  // The job holding devices[i]; empty when free. Cleared when lost.
  std::vector<std::string> device_jobs;
  // RegisterWorkerRequest.job_memory_bytes; 0: no limit.
  int64_t job_memory_bytes = 0;
  absl::Time last_heartbeat;
  // A restored worker's lease runs from here when that is later than its
  // last heartbeat (the restart grace), without faking a heartbeat.
  absl::Time lease_from = absl::InfinitePast();
  bool lost = false;
  absl::Time lost_time;
  Mailbox mailbox;
  // Handed to the daemon at registration (RegisterWorkerResponse); every
  // later call for this worker must carry it (CheckCredential).
  std::string credential;

  int FreeDevices(absl::string_view kind) const;
  // Distinct jobs holding devices, in device order.
  std::vector<std::string> JobIds() const;
};

// OK when `credential` is the one `worker` was given at registration;
// otherwise PERMISSION_DENIED naming the worker: only the daemon that
// registered as it may heartbeat, report, use the store or deregister.
[[nodiscard]] absl::Status CheckCredential(const WorkerRecord& worker,
                                           absl::string_view credential);

class WorkerRegistry {
 public:
  WorkerRegistry() = default;
  WorkerRegistry(const WorkerRegistry&) = delete;
  WorkerRegistry& operator=(const WorkerRegistry&) = delete;

  // Adds a live worker with a new id, its lease starting at `now`.
  // INVALID_ARGUMENT (nothing added) when the host or address is empty,
  // there are no devices, a device kind is not "cpu"/"cuda", an index is
  // negative or a device is listed twice.
  [[nodiscard]] absl::StatusOr<const WorkerRecord*> Register(
      const RegisterWorkerRequest& request, absl::Time now);

  // The worker with `id`, live or lost; null when unknown.
  WorkerRecord* Find(absl::string_view id);
  const WorkerRecord* Find(absl::string_view id) const;

  // OK when worker `id` is known and `credential` is its own;
  // PERMISSION_DENIED otherwise (CheckCredential).
  [[nodiscard]] absl::Status Authenticate(absl::string_view id,
                                          absl::string_view credential) const;

  // Moves the lease of live worker `worker` to `now` (never backwards).
  static void Renew(WorkerRecord& worker, absl::Time now);

  // Ids of live workers whose last heartbeat is more than `lease` before
  // `now`.
  std::vector<std::string> Expired(absl::Time now, absl::Duration lease) const;

  // Marks `worker` lost at `now`: its devices are no longer offered (the
  // caller ends the jobs that held them) and its mailbox is dropped.
  static void MarkLost(WorkerRecord& worker, absl::Time now);

  // Devices of `kind` on live workers: all of them, or the free ones.
  int TotalDevices(absl::string_view kind) const;
  int FreeDevices(absl::string_view kind) const;

  // Takes `count` free devices of `kind` for `job_id`, in placement order
  // (device_inventory.h): slot i is where rank i runs. nullopt (and
  // nothing taken) when fewer are free.
  std::optional<std::vector<DeviceSlot>> Allocate(absl::string_view job_id,
                                                  absl::string_view kind,
                                                  int count);
  // Gives `job_id` the devices of `slots`, which must be free (a plan made
  // on Inventory()).
  void Assign(absl::string_view job_id, const std::vector<DeviceSlot>& slots);

  // The live workers' devices and which are free, as a value to plan on;
  // with `rank_bytes_of` (a job's estimate per rank), also the memory the
  // ranks on each worker use.
  DeviceInventory Inventory() const;
  DeviceInventory Inventory(
      absl::FunctionRef<int64_t(absl::string_view job_id)> rank_bytes_of) const;

  // Frees every device that `job_id` holds.
  void Release(absl::string_view job_id);
  // Frees the devices that `job_id` holds on `worker` only.
  static void ReleaseOn(WorkerRecord& worker, absl::string_view job_id);
  // Frees the devices of `worker` whose job has ended (`ended` says so)
  // and is not in `held`, the jobs its daemon still holds by its latest
  // heartbeat. A cancelled job's devices stay busy until then: its ranks
  // may still be stopping. Returns the jobs whose devices were freed.
  static std::vector<std::string> FreeEnded(
      WorkerRecord& worker, const absl::flat_hash_set<std::string>& held,
      absl::FunctionRef<bool(absl::string_view job_id)> ended);

  // "w-1 on host a: 1 of 2 cpu free, w-3 on host b: 0 of 1 cpu free" over
  // live workers, for error messages; "no live workers" when none.
  std::string DescribeDevices(absl::string_view kind) const;

  // Every worker, live and lost, in registration order.
  std::vector<const WorkerRecord*> All() const;
  std::vector<WorkerRecord*> AllMutable();

  // ---- persistence (state_saver.h) ----

  // The number of the next id.
  int64_t next_number() const { return next_number_; }
  // Adds a record read back from the state store under its own number and
  // id, and keeps next_number() above it.
  void Restore(WorkerRecord record) {
    const int64_t number = record.number;
    next_number_ = std::max(next_number_, number + 1);
    workers_[number] = std::move(record);
  }
  // Raises next_number() to `number` (never lowers it).
  void RaiseNextNumber(int64_t number) {
    next_number_ = std::max(next_number_, number);
  }

  // The public view of `worker`.
  static WorkerInfo Info(const WorkerRecord& worker);

 private:
  int64_t next_number_ = 1;
  std::map<int64_t, WorkerRecord> workers_;  // by number
};

// Seconds since the Unix epoch, as JobStatus and WorkerInfo report times.
double UnixTimeSeconds(absl::Time t);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_WORKER_REGISTRY_H_
