#include "cli/lab/cpu_meter.h"

#include <fstream>
#include <sstream>
#include <string>

namespace gradsync {
namespace lab {

CpuSample ReadCpuSample() {
  CpuSample sample;
  std::ifstream in("/proc/stat");
  std::string line;
  if (!std::getline(in, line) || line.compare(0, 4, "cpu ") != 0) {
    return sample;
  }
  std::istringstream fields(line.substr(4));
  // user nice system idle iowait irq softirq steal (guest counted in user)
  uint64_t value = 0;
  for (int i = 0; i < 8 && fields >> value; ++i) {
    sample.total += value;
    if (i != 3 && i != 4) sample.busy += value;
  }
  return sample;
}

double CpuBusyShare(const CpuSample& before, const CpuSample& after) {
  if (after.total <= before.total) return 0;
  const double busy = static_cast<double>(after.busy - before.busy);
  const double total = static_cast<double>(after.total - before.total);
  const double share = busy / total;
  return share < 0 ? 0 : share > 1 ? 1 : share;
}

}  // namespace lab
}  // namespace gradsync
