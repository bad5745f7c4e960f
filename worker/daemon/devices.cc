#include "worker/daemon/devices.h"

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gradsync {
namespace {

[[nodiscard]] absl::Status Bad(absl::string_view spec, absl::string_view item,
                               absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("--devices '", spec, "': item '", item, "' ", problem,
                   "; use e.g. cpu, cpu:4 or cuda:0,1"));
}

}  // namespace

absl::StatusOr<std::vector<Device>> ParseDevices(absl::string_view spec) {
  std::vector<Device> devices;
  std::set<std::pair<std::string, int>> seen;
  std::string kind;  // of the previous item, for bare indices
  int next_cpu = 0;
  auto add = [&](const std::string& k, int index) -> bool {
    if (!seen.insert({k, index}).second) return false;
    Device d;
    d.set_kind(k);
    d.set_index(index);
    devices.push_back(std::move(d));
    return true;
  };
  for (absl::string_view raw : absl::StrSplit(spec, ',')) {
    const absl::string_view item = absl::StripAsciiWhitespace(raw);
    if (item.empty()) return Bad(spec, item, "is empty");
    std::string name(item);
    absl::string_view number;
    const size_t colon = item.find(':');
    if (colon != absl::string_view::npos) {
      name = std::string(item.substr(0, colon));
      number = item.substr(colon + 1);
    } else if (absl::ascii_isdigit(static_cast<unsigned char>(item[0]))) {
      if (kind != "cuda") {
        return Bad(spec, item, "is a bare index not following cuda:<index>");
      }
      name = kind;
      number = item;
    }
    int value = -1;
    if (!number.empty() && !absl::SimpleAtoi(number, &value)) {
      return Bad(spec, item, "has a count/index that is not a number");
    }
    if (name == "cpu") {
      const int count = number.empty() ? 1 : value;
      if (count < 1 || next_cpu + count > kMaxCpuRanks) {
        return Bad(spec, item,
                   absl::StrCat("asks for ", count, " CPU ranks; allowed 1..",
                                kMaxCpuRanks, " in all"));
      }
      for (int i = 0; i < count; ++i) add("cpu", next_cpu++);
    } else if (name == "cuda") {
      const int index = number.empty() ? 0 : value;
      if (index < 0) return Bad(spec, item, "has a negative index");
      if (!add("cuda", index)) return Bad(spec, item, "repeats a device");
    } else {
      return Bad(spec, item, "has an unknown kind (cpu or cuda)");
    }
    kind = name;
  }
  if (devices.empty()) return Bad(spec, spec, "lists no device");
  return devices;
}

std::string FormatDevices(const std::vector<Device>& devices) {
  return absl::StrJoin(devices, ",", [](std::string* out, const Device& d) {
    absl::StrAppend(out, d.kind(), ":", d.index());
  });
}

int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  int64_t bytes =
      pages > 0 && page_size > 0 ? static_cast<int64_t>(pages) * page_size : 0;
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");
  std::string limit;
  int64_t cgroup_bytes = 0;
  if (cgroup >> limit && absl::SimpleAtoi(limit, &cgroup_bytes) &&
      cgroup_bytes > 0 && (bytes == 0 || cgroup_bytes < bytes)) {
    bytes = cgroup_bytes;  // "max" (no limit) does not parse
  }
  return bytes;
}

}  // namespace gradsync
