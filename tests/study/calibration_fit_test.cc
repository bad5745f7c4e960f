// The calibration fit and the held-out error table: the solver on a line,
// the fit recovering a calibration from cells the simulator made with it
// (exactly, and within stated tolerances under +-2 % noise), incast found
// when it is there and left off when it is not, parameters the cells
// cannot determine kept and named, and the error table's arithmetic on
// crafted numbers.
#include "study/sim/calibration_fit.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "study/sim/cell_prediction.h"
#include "study/sim/least_squares.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace sim {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

constexpr double k100Mbit = 100e6 / 8;
constexpr double k1Gbit = 1e9 / 8;

// A calibration unlike the defaults, with a tensor-plane CPU cost that
// binds the PS cells at 1 Gbit/s (a server moving 2 x 116 MB/s at one core
// needs 4.3 ns/B at most) and not at 100 Mbit/s.
SimCalibration Truth() {
  SimCalibration c;
  c.alpha_s = 3e-4;
  c.link_efficiency = 0.93;
  c.partition_overhead_s = 2e-4;
  c.plane_cpu_s_per_byte = 6e-9;
  return c;
}

MeasuredCell Cell(SimLayout layout, int n, int k, double mib, double rate) {
  MeasuredCell c;
  c.layout = layout;
  c.workers = n;
  c.servers = IsPsLayout(layout) ? k : 0;
  c.bytes = mib * (1 << 20);
  c.nic_Bps = rate;
  c.partition_bytes = 256 << 10;
  c.label = absl::StrCat(SimLayoutName(layout), " N=", n, " K=", k, " ", mib,
                         "M ", rate == k1Gbit ? "1gbit" : "100mbit");
  return c;
}

// A lab-like calibration grid with N <= 4 at two rates, measured as the
// simulator under `truth` says, each measurement times (1 + noise[i]).
std::vector<MeasuredCell> Cells(const SimCalibration& truth,
                                const std::vector<double>& noise = {}) {
  std::vector<MeasuredCell> cells;
  for (double rate : {k100Mbit, k1Gbit}) {
    for (int n : {2, 4}) {
      for (double mib : {1.0, 4.0}) {
        cells.push_back(Cell(SimLayout::kRing, n, 0, mib, rate));
        for (int k : {1, n}) {
          cells.push_back(Cell(SimLayout::kPsSeparate, n, k, mib, rate));
        }
        cells.push_back(Cell(SimLayout::kPsColocated, n, n, mib, rate));
      }
    }
  }
  for (size_t i = 0; i < cells.size(); ++i) {
    absl::StatusOr<double> t = SimulateCell(cells[i], truth);
    EXPECT_THAT(t, IsOk());
    cells[i].measured_s =
        *t * (1 + (noise.empty() ? 0 : noise[i % noise.size()]));
  }
  return cells;
}

const FittedParameter& Param(const CalibrationFit& fit,
                             const std::string& name) {
  for (const FittedParameter& p : fit.parameters) {
    if (p.name == name) return p;
  }
  static const FittedParameter kNone;
  ADD_FAILURE() << "no parameter " << name;
  return kNone;
}

TEST(LeastSquaresTest, Line_RecoveredExactly) {
  // y = 2 + 3x on x = 0..4: residuals a + b x - y.
  LsqProblem p;
  p.params = {{"a", 1, -10, 10, 0}, {"b", 1, -10, 10, 0}};
  p.residuals = [](const std::vector<double>& x) {
    std::vector<double> r;
    for (int i = 0; i < 5; ++i) r.push_back(x[0] + x[1] * i - (2 + 3.0 * i));
    return absl::StatusOr<std::vector<double>>(r);
  };
  absl::StatusOr<LsqResult> r = SolveLeastSquares(p);
  ASSERT_THAT(r, IsOk());
  EXPECT_NEAR(r->x[0], 2, 1e-9);
  EXPECT_NEAR(r->x[1], 3, 1e-9);
  EXPECT_LT(r->cost, 1e-18);
  EXPECT_TRUE(r->determined[0]);
}

TEST(LeastSquaresTest, Bound_HoldsAndTheRestFitsUnderIt) {
  // y = -1 + x with a >= 0: the best under the bound is a = 0 and b the
  // least-squares slope through the origin, sum(x y) / sum(x^2) = 20/30.
  LsqProblem p;
  p.params = {{"a", 1, 0, 10, 1}, {"b", 1, -10, 10, 0}};
  p.residuals = [](const std::vector<double>& x) {
    std::vector<double> r;
    for (int i = 0; i < 5; ++i) r.push_back(x[0] + x[1] * i - (i - 1.0));
    return absl::StatusOr<std::vector<double>>(r);
  };
  absl::StatusOr<LsqResult> r = SolveLeastSquares(p);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->x[0], 0);
  EXPECT_NEAR(r->x[1], 20.0 / 30, 1e-9);
}

TEST(LeastSquaresTest, UnusedParameter_KeepsItsStartAndIsNotDetermined) {
  LsqProblem p;
  p.params = {{"a", 1, -10, 10, 0}, {"unused", 1, 0, 10, 7}};
  p.residuals = [](const std::vector<double>& x) {
    return absl::StatusOr<std::vector<double>>(
        std::vector<double>{x[0] - 1, x[0] - 3});
  };
  absl::StatusOr<LsqResult> r = SolveLeastSquares(p);
  ASSERT_THAT(r, IsOk());
  EXPECT_NEAR(r->x[0], 2, 1e-9);
  EXPECT_EQ(r->x[1], 7);
  EXPECT_TRUE(r->determined[0]);
  EXPECT_FALSE(r->determined[1]);
}

TEST(LeastSquaresTest, BadProblem_IsRefused) {
  LsqProblem p;
  EXPECT_THAT(SolveLeastSquares(p),
              StatusIs(absl::StatusCode::kInvalidArgument));
  p.params = {{"a", 1, 0, 1, 2}};
  p.residuals = [](const std::vector<double>&) {
    return absl::StatusOr<std::vector<double>>(std::vector<double>{0});
  };
  EXPECT_THAT(SolveLeastSquares(p), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("outside [0, 1]")));
}

TEST(CalibrationFitTest, SimulatedCells_RecoverTheCalibrationExactly) {
  const SimCalibration truth = Truth();
  absl::StatusOr<CalibrationFit> fit = FitCalibration(Cells(truth), {});
  ASSERT_THAT(fit, IsOk());
  const SimCalibration& c = fit->calibration;
  EXPECT_NEAR(c.alpha_s, truth.alpha_s, 1e-6 * truth.alpha_s);
  EXPECT_NEAR(c.link_efficiency, truth.link_efficiency, 1e-6);
  EXPECT_NEAR(c.partition_overhead_s, truth.partition_overhead_s,
              1e-6 * truth.partition_overhead_s);
  EXPECT_NEAR(c.plane_cpu_s_per_byte, truth.plane_cpu_s_per_byte,
              1e-6 * truth.plane_cpu_s_per_byte);
  EXPECT_EQ(c.incast_threshold_flows, 0);  // off, as in the truth
  EXPECT_THAT(Param(*fit, "incastEfficiency").note, HasSubstr("exact"));
  EXPECT_LT(fit->summary.rms_error, 1e-6);
  EXPECT_TRUE(Param(*fit, "planeCpuSPerByte").fitted);
  EXPECT_FALSE(Param(*fit, "grpcCpuSPerByte").fitted);
  EXPECT_THAT(Param(*fit, "grpcCpuSPerByte").note, HasSubstr("no PS cell"));
  EXPECT_FALSE(Param(*fit, "intraAlphaS").fitted);
  EXPECT_EQ(fit->cells.size(), Cells(truth).size());
}

TEST(CalibrationFitTest, GrpcCells_FitTheirOwnCpuCost) {
  SimCalibration truth = Truth();
  truth.grpc_cpu_s_per_byte = 1.2e-8;
  std::vector<MeasuredCell> cells = Cells(Truth());
  std::vector<MeasuredCell> grpc;
  for (MeasuredCell c : cells) {
    if (!IsPsLayout(c.layout) || c.bytes > (1 << 20)) continue;
    c.transport = PsTransport::kGrpc;
    c.measured_s = *SimulateCell(c, truth);
    grpc.push_back(c);
  }
  cells.insert(cells.end(), grpc.begin(), grpc.end());
  absl::StatusOr<CalibrationFit> fit = FitCalibration(cells, {});
  ASSERT_THAT(fit, IsOk());
  EXPECT_NEAR(fit->calibration.grpc_cpu_s_per_byte, truth.grpc_cpu_s_per_byte,
              1e-6 * truth.grpc_cpu_s_per_byte);
  EXPECT_NEAR(fit->calibration.plane_cpu_s_per_byte, truth.plane_cpu_s_per_byte,
              1e-6 * truth.plane_cpu_s_per_byte);
}

TEST(CalibrationFitTest, Incast_FoundWhenTheCellsHaveIt) {
  SimCalibration truth = Truth();
  truth.incast_threshold_flows = 2;
  truth.incast_efficiency = 0.7;
  absl::StatusOr<CalibrationFit> fit = FitCalibration(Cells(truth), {});
  ASSERT_THAT(fit, IsOk());
  EXPECT_EQ(fit->calibration.incast_threshold_flows, 2);
  EXPECT_NEAR(fit->calibration.incast_efficiency, 0.7, 1e-6);
  // Above 4 flows: with N <= 4 only a colocated server's node gets there
  // (3 pushes in from the other nodes and 3 pulls to its own worker).
  truth.incast_threshold_flows = 4;
  fit = FitCalibration(Cells(truth), {});
  ASSERT_THAT(fit, IsOk());
  EXPECT_EQ(fit->calibration.incast_threshold_flows, 4);
  EXPECT_NEAR(fit->calibration.incast_efficiency, 0.7, 1e-6);
  EXPECT_NEAR(fit->calibration.alpha_s, truth.alpha_s, 1e-6 * truth.alpha_s);
  EXPECT_TRUE(Param(*fit, "incastThresholdFlows").fitted);
  EXPECT_TRUE(Param(*fit, "incastEfficiency").fitted);
}

// +-2 % on every measurement, in a fixed pattern (no random seed to
// drift): the fit stays within these tolerances of the truth (it lands
// about 10 % off in alpha and the overhead, 1.3 % in the CPU cost and
// 0.1 % in the efficiency; the bytes terms are what 2 % noise moves least).
TEST(CalibrationFitTest, NoisyCells_RecoverTheCalibrationWithinTolerance) {
  const std::vector<double> noise = {0.02,  -0.02, 0.01,  -0.015, 0.0,
                                     -0.01, 0.02,  0.015, -0.02};
  const SimCalibration truth = Truth();
  absl::StatusOr<CalibrationFit> fit = FitCalibration(Cells(truth, noise), {});
  ASSERT_THAT(fit, IsOk());
  const SimCalibration& c = fit->calibration;
  EXPECT_NEAR(c.link_efficiency, truth.link_efficiency, 0.01);
  EXPECT_NEAR(c.alpha_s, truth.alpha_s, 0.25 * truth.alpha_s);
  EXPECT_NEAR(c.partition_overhead_s, truth.partition_overhead_s,
              0.25 * truth.partition_overhead_s);
  EXPECT_NEAR(c.plane_cpu_s_per_byte, truth.plane_cpu_s_per_byte,
              0.05 * truth.plane_cpu_s_per_byte);
  EXPECT_EQ(c.incast_threshold_flows, 0) << "noise taken for incast";
  EXPECT_LE(fit->summary.mean_abs_error, 0.02);
  EXPECT_EQ(fit->summary.beyond_cell_limit, 0);
}

TEST(CalibrationFitTest, CpuThatBindsNoCell_IsKeptAndNamed) {
  const SimCalibration truth = Truth();
  std::vector<MeasuredCell> slow;
  for (const MeasuredCell& c : Cells(truth)) {
    if (c.nic_Bps == k100Mbit) slow.push_back(c);
  }
  FitOptions options;
  options.fit_incast = false;
  absl::StatusOr<CalibrationFit> fit = FitCalibration(slow, options);
  ASSERT_THAT(fit, IsOk());
  const FittedParameter& cpu = Param(*fit, "planeCpuSPerByte");
  EXPECT_FALSE(cpu.fitted);
  EXPECT_THAT(cpu.note, HasSubstr("bounds no fitted cell"));
  EXPECT_LE(fit->calibration.plane_cpu_s_per_byte,
            options.start.plane_cpu_s_per_byte);
  EXPECT_NEAR(fit->calibration.alpha_s, truth.alpha_s, 1e-6 * truth.alpha_s);
  EXPECT_THAT(Param(*fit, "incastEfficiency").note, HasSubstr("not fitted"));
}

TEST(CalibrationFitTest, RingCellsOnly_HoldThePsParameters) {
  std::vector<MeasuredCell> ring;
  for (const MeasuredCell& c : Cells(Truth())) {
    if (c.layout == SimLayout::kRing) ring.push_back(c);
  }
  FitOptions options;
  options.fit_link_efficiency = false;
  options.start.link_efficiency = Truth().link_efficiency;
  absl::StatusOr<CalibrationFit> fit = FitCalibration(ring, options);
  ASSERT_THAT(fit, IsOk());
  EXPECT_NEAR(fit->calibration.alpha_s, Truth().alpha_s, 1e-6 * 3e-4);
  EXPECT_EQ(fit->calibration.partition_overhead_s, 0);
  EXPECT_THAT(Param(*fit, "partitionOverheadS").note, HasSubstr("no PS cell"));
  EXPECT_THAT(Param(*fit, "linkEfficiency").note, HasSubstr("held"));
  EXPECT_EQ(fit->calibration.incast_threshold_flows, 0);
  EXPECT_THAT(Param(*fit, "incastEfficiency").note,
              HasSubstr("off: no PS cell"));
}

TEST(CalibrationFitTest, BadInput_IsRefused) {
  EXPECT_THAT(
      FitCalibration({}, {}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no cells")));
  MeasuredCell c = Cell(SimLayout::kRing, 2, 0, 1, k1Gbit);
  c.measured_s = 0;
  EXPECT_THAT(FitCalibration({c}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ring N=2 K=0 1M 1gbit measured 0")));
  c.measured_s = 1;
  c.workers = 0;
  EXPECT_THAT(FitCalibration({c}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ring N=2 K=0 1M 1gbit")));
}

TEST(CellPredictionTest, Ring_IsTheAlphaBetaFormula) {
  SimCalibration cal;
  cal.alpha_s = 1e-3;
  cal.link_efficiency = 0.5;
  MeasuredCell c = Cell(SimLayout::kRing, 4, 0, 4, k100Mbit);
  // 2(N-1) (alpha + S / (N B e)).
  const double expected = 6 * (1e-3 + 4.0 * (1 << 20) / (4 * k100Mbit * 0.5));
  absl::StatusOr<double> t = SimulateCell(c, cal);
  ASSERT_THAT(t, IsOk());
  EXPECT_NEAR(*t, expected, 1e-9 * expected);
}

TEST(CellPredictionTest, ErrorTable_OnCraftedNumbers) {
  std::vector<CellError> rows;
  auto row = [&](const char* label, double measured, double simulated) {
    MeasuredCell c;
    c.label = label;
    c.measured_s = measured;
    c.note = label[0] == 'c' ? "CPU-bound" : "";
    rows.push_back(MakeCellError(c, simulated));
  };
  row("a", 0.100, 0.105);  // +5 %
  row("b", 0.200, 0.180);  // -10 %
  row("c", 0.400, 0.500);  // +25 %: beyond 20 %
  row("d", 0.050, 0.050);  // 0
  EXPECT_NEAR(rows[0].error, 0.05, 1e-12);
  EXPECT_NEAR(rows[1].error, -0.10, 1e-12);
  EXPECT_EQ(rows[2].note, "CPU-bound");
  const ErrorSummary s = SummariseErrors(rows, ErrorTargets());
  EXPECT_EQ(s.cells, 4);
  EXPECT_NEAR(s.mean_abs_error, 0.40 / 4, 1e-12);
  EXPECT_NEAR(s.mean_error, 0.20 / 4, 1e-12);
  EXPECT_NEAR(s.rms_error, std::sqrt((0.0025 + 0.01 + 0.0625) / 4), 1e-12);
  EXPECT_NEAR(s.worst_error, 0.25, 1e-12);
  EXPECT_EQ(s.worst_label, "c");
  EXPECT_EQ(s.beyond_cell_limit, 1);
  EXPECT_FALSE(s.meets_target);
  EXPECT_TRUE(BeyondLimit(rows[2], ErrorTargets()));
  EXPECT_FALSE(BeyondLimit(rows[1], ErrorTargets()));

  rows.erase(rows.begin() + 2);  // 5, 10, 0: mean 5 %, none beyond
  const ErrorSummary ok = SummariseErrors(rows, ErrorTargets());
  EXPECT_NEAR(ok.mean_abs_error, 0.05, 1e-12);
  EXPECT_EQ(ok.worst_label, "b");
  EXPECT_TRUE(ok.meets_target);
  ErrorTargets strict;
  strict.max_mean_abs_error = 0.04;
  EXPECT_FALSE(SummariseErrors(rows, strict).meets_target);
  EXPECT_FALSE(SummariseErrors({}, ErrorTargets()).meets_target);
}

TEST(CellPredictionTest, PredictCells_RefusesAMeasurementOfZero) {
  MeasuredCell c = Cell(SimLayout::kRing, 2, 0, 1, k1Gbit);
  EXPECT_THAT(
      PredictCells({c}, SimCalibration()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be > 0")));
}

}  // namespace
}  // namespace sim
}  // namespace gradsync
