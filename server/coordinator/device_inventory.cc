#include "server/coordinator/device_inventory.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/units.h"

namespace gradsync {

int DeviceInventory::Total(absl::string_view kind) const {
  int total = 0;
  for (const Worker& worker : workers_) {
    for (const Device& device : worker.devices) {
      if (device.kind() == kind) ++total;
    }
  }
  return total;
}

int DeviceInventory::Free(absl::string_view kind) const {
  int free = 0;
  for (const Worker& worker : workers_) {
    for (size_t i = 0; i < worker.devices.size(); ++i) {
      if (worker.devices[i].kind() == kind && worker.free[i]) ++free;
    }
  }
  return free;
}

std::string DeviceInventory::Describe(absl::string_view kind) const {
  std::vector<std::string> parts;
  for (const Worker& worker : workers_) {
    int total = 0, free = 0;
    for (size_t i = 0; i < worker.devices.size(); ++i) {
      if (worker.devices[i].kind() != kind) continue;
      ++total;
      if (worker.free[i]) ++free;
    }
    parts.push_back(absl::StrCat(worker.id, " on host ", worker.host, ": ",
                                 free, " of ", total, " ", kind, " free"));
  }
  if (parts.empty()) return "no live workers";
  return absl::StrJoin(parts, ", ");
}

int64_t DeviceInventory::Worker::RankRoom(int64_t rank_bytes,
                                          bool all_free) const {
  if (job_memory_bytes <= 0 || rank_bytes <= 0) {
    return std::numeric_limits<int64_t>::max();
  }
  const int64_t left = job_memory_bytes - (all_free ? 0 : memory_in_use);
  return std::max<int64_t>(left, 0) / rank_bytes;
}

int DeviceInventory::Capacity(absl::string_view kind,
                              int64_t rank_bytes) const {
  int64_t capacity = 0;
  for (const Worker& worker : workers_) {
    int64_t devices = 0;
    for (const Device& device : worker.devices) {
      if (device.kind() == kind) ++devices;
    }
    capacity += std::min(devices, worker.RankRoom(rank_bytes, true));
  }
  return static_cast<int>(capacity);
}

std::string DeviceInventory::DescribeMemory() const {
  std::vector<std::string> parts;
  for (const Worker& worker : workers_) {
    std::string limit =
        worker.job_memory_bytes > 0
            ? FormatBytes(static_cast<double>(worker.job_memory_bytes))
            : std::string("no limit");
    if (worker.memory_in_use > 0) {
      limit =
          absl::StrCat(FormatBytes(static_cast<double>(worker.memory_in_use)),
                       " of ", limit, " in use");
    }
    parts.push_back(
        absl::StrCat(worker.id, " on host ", worker.host, ": ", limit));
  }
  if (parts.empty()) return "no live workers";
  return absl::StrJoin(parts, ", ");
}

std::optional<std::vector<DeviceSlot>> DeviceInventory::Take(
    absl::string_view kind, int count, int64_t rank_bytes, bool one_per_host) {
  struct Candidate {
    Worker* worker;
    size_t device;
  };
  std::vector<Candidate> candidates;
  for (Worker& worker : workers_) {
    const int64_t room = worker.RankRoom(rank_bytes, false);
    int64_t offered = 0;
    for (size_t i = 0; i < worker.devices.size() && offered < room; ++i) {
      if (worker.devices[i].kind() == kind && worker.free[i]) {
        candidates.push_back({&worker, i});
        ++offered;
      }
    }
  }
  auto order = [](const Candidate& c) {
    return std::make_tuple(std::cref(c.worker->host), c.worker->number,
                           c.worker->devices[c.device].index());
  };
  std::sort(candidates.begin(), candidates.end(),
            [&](const Candidate& a, const Candidate& b) {
              return order(a) < order(b);
            });
  if (one_per_host) {  // each host's first device in placement order
    candidates.erase(std::unique(candidates.begin(), candidates.end(),
                                 [](const Candidate& a, const Candidate& b) {
                                   return a.worker->host == b.worker->host;
                                 }),
                     candidates.end());
  }
  if (count < 0 || static_cast<int>(candidates.size()) < count) {
    return std::nullopt;
  }
  std::vector<DeviceSlot> slots;
  slots.reserve(count);
  for (int rank = 0; rank < count; ++rank) {
    const Candidate& c = candidates[rank];
    c.worker->free[c.device] = false;
    c.worker->memory_in_use += rank_bytes;
    slots.push_back(
        {c.worker->id, c.worker->host, c.worker->devices[c.device]});
  }
  return slots;
}

}  // namespace gradsync
