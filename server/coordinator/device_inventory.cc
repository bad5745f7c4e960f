#include "server/coordinator/device_inventory.h"

#include <algorithm>
#include <functional>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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

std::optional<std::vector<DeviceSlot>> DeviceInventory::Take(
    absl::string_view kind, int count) {
  struct Candidate {
    Worker* worker;
    size_t device;
  };
  std::vector<Candidate> candidates;
  for (Worker& worker : workers_) {
    for (size_t i = 0; i < worker.devices.size(); ++i) {
      if (worker.devices[i].kind() == kind && worker.free[i]) {
        candidates.push_back({&worker, i});
      }
    }
  }
  if (count < 0 || static_cast<int>(candidates.size()) < count) {
    return std::nullopt;
  }
  auto order = [](const Candidate& c) {
    return std::make_tuple(std::cref(c.worker->host), c.worker->number,
                           c.worker->devices[c.device].index());
  };
  std::sort(candidates.begin(), candidates.end(),
            [&](const Candidate& a, const Candidate& b) {
              return order(a) < order(b);
            });
  std::vector<DeviceSlot> slots;
  slots.reserve(count);
  for (int rank = 0; rank < count; ++rank) {
    const Candidate& c = candidates[rank];
    c.worker->free[c.device] = false;
    slots.push_back(
        {c.worker->id, c.worker->host, c.worker->devices[c.device]});
  }
  return slots;
}

}  // namespace gradsync
