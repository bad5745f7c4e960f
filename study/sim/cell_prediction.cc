#include "study/sim/cell_prediction.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "study/sim/step_simulator.h"
#include "study/sim/workload.h"

namespace gradsync {
namespace sim {

SimConfig CellConfig(const MeasuredCell& cell,
                     const SimCalibration& calibration) {
  SimConfig config;
  config.layout = cell.layout;
  config.topology.workers = cell.workers;
  config.topology.gpus_per_node = cell.gpus_per_node;
  config.topology.nic_Bps = cell.nic_Bps;
  config.topology.intra_Bps = cell.intra_Bps;
  config.grad_bytes_per_element = 4;
  // One bucket: the whole gradient in one collective, as the lab's cells
  // run it.
  config.bucket_bytes = std::max(cell.bytes, 4.0);
  config.first_bucket_bytes = 0;
  config.servers = IsPsLayout(cell.layout) ? cell.servers : 1;
  config.partition_bytes = cell.partition_bytes;
  config.ps_pipelined = cell.ps_pipelined;
  config.transport = cell.transport;
  config.server_cores = cell.server_cores;
  config.calibration = calibration;
  config.record_timeline = false;
  return config;
}

absl::StatusOr<double> SimulateCell(const MeasuredCell& cell,
                                    const SimCalibration& calibration) {
  if (!(cell.bytes >= 4) || !std::isfinite(cell.bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cell ", cell.label, ": ", cell.bytes,
                     " bytes of gradient; it needs at least one element"));
  }
  SimWorkload work;
  work.layers.push_back(
      {"gradient", static_cast<int64_t>(std::llround(cell.bytes / 4)), 0});
  const absl::StatusOr<SimResult> result =
      SimulateStep(CellConfig(cell, calibration), work);
  if (!result.ok()) {
    return Annotate(result.status(), absl::StrCat("cell ", cell.label));
  }
  return result->step_s;
}

CellError MakeCellError(const MeasuredCell& cell, double simulated_s) {
  CellError row;
  row.label = cell.label;
  row.measured_s = cell.measured_s;
  row.simulated_s = simulated_s;
  row.error = (simulated_s - cell.measured_s) / cell.measured_s;
  row.note = cell.note;
  return row;
}

absl::StatusOr<std::vector<CellError>> PredictCells(
    const std::vector<MeasuredCell>& cells, const SimCalibration& calibration) {
  std::vector<CellError> rows;
  rows.reserve(cells.size());
  for (const MeasuredCell& cell : cells) {
    if (!(cell.measured_s > 0) || !std::isfinite(cell.measured_s)) {
      return absl::InvalidArgumentError(
          absl::StrCat("cell ", cell.label, " measured ", cell.measured_s,
                       " s; a measurement must be > 0"));
    }
    ASSIGN_OR_RETURN(const double simulated, SimulateCell(cell, calibration));
    rows.push_back(MakeCellError(cell, simulated));
  }
  return rows;
}

bool BeyondLimit(const CellError& row, const ErrorTargets& targets) {
  return std::abs(row.error) > targets.max_cell_abs_error;
}

ErrorSummary SummariseErrors(const std::vector<CellError>& rows,
                             const ErrorTargets& targets) {
  ErrorSummary s;
  s.cells = static_cast<int>(rows.size());
  if (rows.empty()) return s;
  double abs_sum = 0, square_sum = 0, sum = 0;
  for (const CellError& row : rows) {
    abs_sum += std::abs(row.error);
    square_sum += row.error * row.error;
    sum += row.error;
    if (s.worst_label.empty() ||
        std::abs(row.error) > std::abs(s.worst_error)) {
      s.worst_error = row.error;
      s.worst_label = row.label;
    }
    if (BeyondLimit(row, targets)) ++s.beyond_cell_limit;
  }
  s.mean_abs_error = abs_sum / s.cells;
  s.rms_error = std::sqrt(square_sum / s.cells);
  s.mean_error = sum / s.cells;
  s.meets_target = s.mean_abs_error <= targets.max_mean_abs_error &&
                   s.beyond_cell_limit == 0;
  return s;
}

}  // namespace sim
}  // namespace gradsync
