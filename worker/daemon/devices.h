// The --devices syntax of gradsync-worker: which ranks this worker can host.
//
//   "cpu"            one CPU rank
//   "cpu:4"          four CPU ranks (for local study on one host)
//   "cuda:0,1"       CUDA devices 0 and 1 (an index after a comma continues
//                    the previous kind's list)
//   "cpu:2,cuda:0"   items combine
// CPU devices are numbered 0.. in order; a device may not repeat.
//
// Errors: INVALID_ARGUMENT naming the bad item (an unknown kind, a count
// or index that is not a number, a zero count, a repeated device, an
// empty list). Pure functions; thread-safe.
#ifndef GRADSYNC_WORKER_DAEMON_DEVICES_H_
#define GRADSYNC_WORKER_DAEMON_DEVICES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/coordinator.pb.h"

namespace gradsync {

// Most CPU ranks one worker may host.
inline constexpr int kMaxCpuRanks = 1024;

[[nodiscard]] absl::StatusOr<std::vector<Device>> ParseDevices(
    absl::string_view spec);

// "cpu:0,cpu:1,cuda:0": for logs.
std::string FormatDevices(const std::vector<Device>& devices);

// The memory this daemon may use: the host's physical memory, or the
// cgroup's memory.max (v2) when that is lower, as in a container with a
// limit. The default of --max-job-memory.
int64_t PhysicalMemoryBytes();

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_DAEMON_DEVICES_H_
