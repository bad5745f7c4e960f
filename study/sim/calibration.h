// The simulator's calibration: the parameters that the link rates and the
// model profile do not give, with documented defaults, and the small JSON
// file that carries a fitted set (what `gradsync lab calibrate` is to
// write, with the machine, the date and the commit it was fitted on).
//
// The defaults are NOT fitted to any measurement. They are round numbers of
// the right order for a TCP data-centre network, chosen so that a
// simulation without --calibration is plausible; docs/simulator.md says
// where each comes from. Until a calibration file is given, treat the
// absolute times as rough and the comparisons between layouts as the
// result.
//
// The file (every member optional; a missing one keeps its default):
//
//   {"alphaS": 2.5e-5, "intraAlphaS": 5e-6, "linkEfficiency": 0.956,
//    "partitionOverheadS": 0, "planeCpuSPerByte": 1e-10,
//    "grpcCpuSPerByte": 3e-10, "incastThresholdFlows": 0,
//    "incastEfficiency": 1, "machine": "lab on vm-3", "date": "2027-01-04",
//    "commit": "abc1234", "fitMaxWorkers": 4, "fitMinLinkBps": 1.25e7,
//    "fitMaxLinkBps": 1.25e7, "fitted": ["alphaS", "linkEfficiency"]}
//
// The fit* members say what the calibration was fitted on, so that `plan`
// can mark the regimes it never saw (plan_uncertainty.h): the largest N
// among the fitted cells, the slowest and fastest line rates (bytes/s),
// and the members the cells determined. 0 or [] (the defaults, or a file
// from before these members): unknown.
//
// Errors: INVALID_ARGUMENT for a malformed file, an unknown member (a
// misspelt parameter would otherwise be silently ignored), a member of the
// wrong type, or a value out of its range (ValidateCalibration); NOT_FOUND
// and the like from reading the file, naming its path.
// Threading: pure functions; thread-safe.
#ifndef GRADSYNC_STUDY_SIM_CALIBRATION_H_
#define GRADSYNC_STUDY_SIM_CALIBRATION_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace gradsync {
namespace sim {

struct SimCalibration {
  // Latency per message on the network (a host's NIC to another's), s:
  // every flow starts this long after it is issued. 25 us: a TCP message
  // through one switch, kernel and software included.
  double alpha_s = 25e-6;
  // Latency per message between two GPUs of one node, s (5 us: a
  // peer-to-peer copy's launch).
  double intra_alpha_s = 5e-6;
  // The share of a link's line rate that carries payload (0, 1]; the
  // simulator's links run at rate * efficiency. 1: the rate is payload
  // already. The lab's TCP over a 1500-byte MTU carries 1448/1514 = 0.956.
  double link_efficiency = 1.0;
  // A parameter server's fixed cost per partition, s: after the last push
  // of a partition arrives and before its pull can start (the request's
  // handling, the optimizer's launch). 0: none.
  double partition_overhead_s = 0;
  // A PS server's CPU per byte it receives or sends, in core-seconds per
  // byte, per transport (the summation and the copies included). The
  // defaults are of the order of docs/performance/ps-transport.md's
  // loopback figures (gRPC about 3 GB/s per core, the plain-TCP plane
  // several times that).
  double plane_cpu_s_per_byte = 1e-10;
  double grpc_cpu_s_per_byte = 3e-10;
  // Incast: when more than `incast_threshold_flows` flows arrive at one
  // receiving NIC at once, that NIC's receive rate is multiplied by
  // `incast_efficiency` (0, 1] (switch-port buffer overflow and
  // retransmissions). Threshold 0 or efficiency 1: no penalty, the flows
  // share the NIC's rate exactly.
  double incast_threshold_flows = 0;
  double incast_efficiency = 1.0;
  // Where the values came from; empty for the defaults.
  std::string machine;
  std::string date;
  std::string commit;
  // What the fit saw (the top); 0 / empty: unknown.
  double fit_max_workers = 0;
  double fit_min_link_Bps = 0;
  double fit_max_link_Bps = 0;
  std::vector<std::string> fitted;  // members' names in the file
};

// Whether `c` says its member `name` ("planeCpuSPerByte") was fitted.
bool WasFitted(const SimCalibration& c, absl::string_view name);

// OK, or INVALID_ARGUMENT naming the first field out of range: negative or
// non-finite latencies, overheads or CPU costs; an efficiency outside
// (0, 1]; a negative threshold or fit range.
[[nodiscard]] absl::Status ValidateCalibration(const SimCalibration& c);

// The calibration in `json` (the format at the top), over the defaults.
[[nodiscard]] absl::StatusOr<SimCalibration> ParseCalibration(
    absl::string_view json);

// ParseCalibration over the file at `path`; errors name the path.
[[nodiscard]] absl::StatusOr<SimCalibration> LoadCalibration(
    const std::string& path);

// `c` in the file's format, one line, every member written.
std::string CalibrationToJson(const SimCalibration& c);

// One numeric member of SimCalibration and its name in the file
// ("alphaS", ...).
struct CalibrationNumber {
  const char* name;
  double SimCalibration::*field;
};

// Every numeric member, in the file's order: what loading, saving and the
// fit's report walk over.
absl::Span<const CalibrationNumber> CalibrationNumbers();

}  // namespace sim
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_SIM_CALIBRATION_H_
