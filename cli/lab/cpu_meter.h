// How busy this machine's CPUs were between two moments, from /proc/stat:
// the lab's test of whether a measurement was limited by its links or by
// the CPUs that emulate them (all emulated hosts share this machine).
//
//   CpuSample before = ReadCpuSample();
//   ... run the cell ...
//   double busy = CpuBusyShare(before, ReadCpuSample());  // 0..1
#ifndef GRADSYNC_CLI_LAB_CPU_METER_H_
#define GRADSYNC_CLI_LAB_CPU_METER_H_

#include <cstdint>

namespace gradsync {
namespace lab {

struct CpuSample {
  uint64_t busy = 0;   // jiffies not idle or waiting for I/O, all CPUs
  uint64_t total = 0;  // all jiffies, all CPUs
};

// The "cpu" line of /proc/stat; zeros if it cannot be read.
CpuSample ReadCpuSample();

// busy / total between the samples, in [0, 1]; 0 when no time passed.
double CpuBusyShare(const CpuSample& before, const CpuSample& after);

}  // namespace lab
}  // namespace gradsync

#endif  // GRADSYNC_CLI_LAB_CPU_METER_H_
