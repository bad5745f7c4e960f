#include "study/sim/plan_uncertainty.h"

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"

namespace gradsync {
namespace sim {
namespace {

// "100 Gbit/s", "12.5 Mbit/s" from bytes/s.
std::string Rate(double bytes_per_s) {
  const double bits = 8 * bytes_per_s;
  if (bits >= 1e9) return absl::StrFormat("%g Gbit/s", bits / 1e9);
  return absl::StrFormat("%g Mbit/s", bits / 1e6);
}

}  // namespace

std::vector<Uncertainty> UncertainRegimes(const SimConfig& config,
                                          const std::string& bottleneck) {
  std::vector<Uncertainty> out;
  const SimCalibration& c = config.calibration;
  const SimTopology& t = config.topology;
  if (c.fit_max_workers > 0 && t.workers > 2 * c.fit_max_workers) {
    out.push_back(
        {'N', absl::StrFormat("N beyond twice the largest calibrated N (%g): "
                              "the calibration was validated up to 2x only",
                              c.fit_max_workers)});
  }
  if (c.fit_min_link_Bps > 0 && c.fit_max_link_Bps > 0 &&
      (t.nic_Bps < c.fit_min_link_Bps / 2 ||
       t.nic_Bps > 2 * c.fit_max_link_Bps)) {
    out.push_back(
        {'L', absl::StrFormat("links of %s were never measured: the "
                              "calibration saw %s to %s",
                              Rate(t.nic_Bps), Rate(c.fit_min_link_Bps),
                              Rate(c.fit_max_link_Bps))});
  }
  if (IsPsLayout(config.layout)) {
    const char* member = config.transport == PsTransport::kGrpc
                             ? "grpcCpuSPerByte"
                             : "planeCpuSPerByte";
    if (absl::StrContains(bottleneck, "CPU") && !WasFitted(c, member)) {
      out.push_back(
          {'C', absl::StrFormat(
                    "a server's CPU bounds the step, and the "
                    "calibration never identified %s (%s)",
                    member, c.fitted.empty() ? "a default" : "not fitted")});
    }
    const bool colocated = config.layout == SimLayout::kPsColocated;
    const int fan_in = colocated ? t.workers - t.gpus_per_node : t.workers;
    if (fan_in >= kIncastMinFanIn && 4 * config.servers <= t.workers &&
        config.partition_bytes > 0 &&
        config.partition_bytes <= kIncastMaxPartitionBytes) {
      out.push_back(
          {'I', absl::StrFormat(
                    "incast: %d flows into each server's NIC at once, %g "
                    "workers per server, partitions of %.0f KiB; an earlier "
                    "lab validation missed N = 8, K = 2 with small "
                    "partitions by -25%% (issue 41)",
                    fan_in, static_cast<double>(t.workers) / config.servers,
                    config.partition_bytes / 1024)});
    }
  }
  return out;
}

std::string Markers(const std::vector<Uncertainty>& reasons) {
  std::string out;
  for (const Uncertainty& u : reasons) out.push_back(u.marker);
  return out;
}

std::string CalibrationCaveat(const SimCalibration& c) {
  if (c.fit_max_workers > 0 && c.fit_max_link_Bps > 0) return "";
  if (c.machine.empty() && c.date.empty() && c.fitted.empty()) {
    return "calibration: the defaults, fitted to nothing: absolute times "
           "are rough, and N and L cannot be marked";
  }
  return "the calibration does not say which N and link rates it was "
         "fitted on (no fitMaxWorkers or fitMaxLinkBps), so N and L cannot "
         "be marked";
}

}  // namespace sim
}  // namespace gradsync
