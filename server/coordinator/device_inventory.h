// DeviceInventory: the devices of the live workers and which are free, as
// a value: a snapshot of the WorkerRegistry that placement can take devices
// from without touching the registry (JobScheduler plans on one), and the
// one place where the order ranks take devices in is written down.
//
// Rank placement: a job's ranks take free devices of its kind in (host,
// worker number, device index) order, so that the ranks of one host are
// neighbours in the ring.
//
// Pure value; thread-compatible.
#ifndef GRADSYNC_SERVER_COORDINATOR_DEVICE_INVENTORY_H_
#define GRADSYNC_SERVER_COORDINATOR_DEVICE_INVENTORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "proto/coordinator.pb.h"

namespace gradsync {

// Where one rank runs.
struct DeviceSlot {
  std::string worker_id;
  std::string host;
  Device device;
};

class DeviceInventory {
 public:
  // One live worker's devices.
  struct Worker {
    std::string id;
    std::string host;
    int64_t number = 0;  // registration order
    std::vector<Device> devices;
    std::vector<bool> free;  // one per device
    // The memory the jobs' ranks here may need together (the daemon's
    // --max-job-memory); 0: no limit. memory_in_use: the estimates of the
    // ranks holding devices here now.
    int64_t job_memory_bytes = 0;
    int64_t memory_in_use = 0;

    // How many more ranks of `rank_bytes` each fit in job_memory_bytes:
    // beside the ranks here now, or (`all_free`) with every device free.
    int64_t RankRoom(int64_t rank_bytes, bool all_free) const;
  };

  DeviceInventory() = default;
  // Live workers, in registration order.
  explicit DeviceInventory(std::vector<Worker> workers)
      : workers_(std::move(workers)) {}

  // Devices of `kind`: all of them, or the free ones.
  int Total(absl::string_view kind) const;
  int Free(absl::string_view kind) const;
  // "w-1 on host a: 1 of 2 cpu free, w-3 on host b: 0 of 1 cpu free", for
  // messages; "no live workers" when none.
  std::string Describe(absl::string_view kind) const;

  // How many ranks of `rank_bytes` each (jobspec/job_memory.h) the
  // workers could hold with every device free: per worker, its devices of
  // `kind`, or fewer where its job memory runs out first.
  int Capacity(absl::string_view kind, int64_t rank_bytes) const;
  // "w-1 on host a: 2.00 GiB, w-2 on host b: 48.0 MiB of 64.0 MiB in
  // use", each worker's job memory, for messages.
  std::string DescribeMemory() const;

  // Takes `count` free devices of `kind` in placement order: slot i is
  // where rank i runs. A worker gets no more ranks of `rank_bytes` each
  // than its job memory holds beside its ranks now (0: no estimate).
  // `one_per_host` (a link probe): each rank on another host. nullopt (and
  // nothing taken) when fewer are free.
  std::optional<std::vector<DeviceSlot>> Take(absl::string_view kind, int count,
                                              int64_t rank_bytes = 0,
                                              bool one_per_host = false);

 private:
  std::vector<Worker> workers_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_DEVICE_INVENTORY_H_
