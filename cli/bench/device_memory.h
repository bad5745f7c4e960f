// BenchMemory on a CUDA device, for `gradsync bench --backend nccl`: each
// buffer is a DeviceBuffer plus a host copy of the same size where inputs
// are filled and results checked. Built only with GRADSYNC_HAVE_NCCL.
//
// Copies are synchronous (DeviceBuffer's), so HostToData before a call and
// DataToHost after its Wait returned see consistent data.
#ifndef GRADSYNC_CLI_BENCH_DEVICE_MEMORY_H_
#define GRADSYNC_CLI_BENCH_DEVICE_MEMORY_H_

#include <memory>

#include "cli/bench/bench_memory.h"

namespace gradsync {
namespace cli {
namespace bench {

// Memory on CUDA device `device` (which must exist; Allocate reports the
// CUDA error otherwise).
std::unique_ptr<BenchMemory> MakeDeviceMemory(int device);

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_DEVICE_MEMORY_H_
