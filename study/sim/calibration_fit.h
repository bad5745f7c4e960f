// Fitting the simulator's calibration (calibration.h) to measured cells
// (cell_prediction.h): what `gradsync lab calibrate` runs on the cells of
// a lab sweep with N <= 4, before predicting the held-out ones.
//
//   FitOptions options;
//   options.start.link_efficiency = 0.956;
//   ASSIGN_OR_RETURN(CalibrationFit fit, FitCalibration(cells, options));
//   WriteFile(path, CalibrationToJson(fit.calibration));
//
// The objective, as study/alpha_beta/sync_model.cc's FitAlphaBeta: the sum over
// the cells of the squared relative error, (simulated / measured - 1)^2, so
// that a 10 ms cell counts as much as a 1 s one. Each cell is simulated
// under the candidate calibration (SimulateCell: no compute, one bucket),
// and the fit is a bounded Levenberg-Marquardt (least_squares.h) over the
// parameters the cells can determine:
//
//   alphaS              always (every message pays it);
//   linkEfficiency      unless held (fit_link_efficiency = false): the
//                       bytes term, as FitAlphaBeta's 1/B;
//   partitionOverheadS  when there is a PS cell;
//   planeCpuSPerByte,   when there is a PS cell on that transport. The
//   grpcCpuSPerByte     CPU is a resource like a link: it changes the time
//                       only where it binds, so the fit starts from
//                       several values (none, the start's, and values
//                       where the CPU alone would take a share of the
//                       measured cells' time), screens them, and refines
//                       the best;
//   incast              when fit_incast and a PS cell has more than one
//                       flow into a NIC: for each threshold T from 1 to
//                       the most flows into one NIC less one (a colocated
//                       server's node receives N - 1 pushes and K - 1
//                       pulls at once), the fit
//                       again with incastEfficiency free; the best T is
//                       kept only if it lowers the cost by at least
//                       incast_min_gain of the fit without incast (an
//                       extra factor always fits noise a little better).
//
// Parameters the cells cannot determine keep their start values (intra-
// node alpha always: no lab cell has two workers' traffic in one host),
// and the result says so per parameter. A CPU cost that binds no cell is
// only bounded above; it keeps the smaller of its start and fitted values.
//
// Errors: INVALID_ARGUMENT for no cells, a measurement that is not
// positive, a cell the simulator refuses (naming it) or a start
// calibration out of range; the simulator's errors otherwise.
// Threading: pure function of its arguments; thread-safe.
#ifndef GRADSYNC_STUDY_SIM_CALIBRATION_FIT_H_
#define GRADSYNC_STUDY_SIM_CALIBRATION_FIT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "study/sim/calibration.h"
#include "study/sim/cell_prediction.h"

namespace gradsync {
namespace sim {

struct FitOptions {
  // Where the fit starts; what it does not fit keeps these values
  // (machine, date and commit included).
  SimCalibration start;
  bool fit_link_efficiency = true;
  bool fit_incast = true;
  double incast_min_gain = 0.2;
  int max_iterations = 100;  // per Levenberg-Marquardt run
};

// One member of the calibration file after the fit.
struct FittedParameter {
  std::string name;  // the file's member name ("alphaS")
  double value = 0;
  bool fitted = false;  // the cells determined it
  std::string note;     // how it was found, or why it was not
};

struct CalibrationFit {
  SimCalibration calibration;
  std::vector<FittedParameter> parameters;  // every numeric member
  std::vector<CellError> cells;             // the fitted cells, in order
  ErrorSummary summary;                     // of `cells`, ErrorTargets()
  int simulations = 0;                      // cells simulated in all
};

[[nodiscard]] absl::StatusOr<CalibrationFit> FitCalibration(
    const std::vector<MeasuredCell>& cells, const FitOptions& options);

}  // namespace sim
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_SIM_CALIBRATION_FIT_H_
