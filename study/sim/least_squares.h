// A small bounded nonlinear least-squares solver (Levenberg-Marquardt with
// a forward-difference Jacobian), for fitting the simulator's calibration
// to measured cells (calibration_fit.h). The residuals come from a black
// box (a simulation per cell), are smooth or piecewise linear in the
// parameters, and there are a handful of parameters: a dense solver of a
// few dozen lines is enough, and no library is needed.
//
//   LsqProblem problem;
//   problem.params = {{"alpha", 1e-4, 0, 1, 25e-6}, ...};
//   problem.residuals = [&](const std::vector<double>& x)
//       -> absl::StatusOr<std::vector<double>> { ... };
//   ASSIGN_OR_RETURN(LsqResult r, SolveLeastSquares(problem));
//
// The method: minimise the sum of squared residuals over the box
// [lower, upper] of every parameter. Each iteration computes the Jacobian
// by forward differences (a backward one at an upper bound), in units of
// each parameter's scale, and solves the damped normal equations
//   (J'J + lambda diag(J'J)) d = -J'r
// for the parameters that are not held at a bound by the gradient; the
// step is clipped into the box and kept when it lowers the cost (lambda
// shrinks), refused otherwise (lambda grows). It stops when the cost or
// its relative improvement is negligible, the damping has grown past any
// use, or after max_iterations.
//
// A parameter whose Jacobian column is zero at the end does not move the
// residuals there (the servers' CPU bounded no cell, say): its value is
// whatever it started at, and LsqResult says so (`determined`).
//
// Errors: INVALID_ARGUMENT for no parameters, a start outside its box, a
// non-positive scale, or residuals whose count changes; the residual
// function's own errors as it returned them.
// Threading: pure function of its arguments (it calls `residuals` on the
// calling thread only).
#ifndef GRADSYNC_STUDY_SIM_LEAST_SQUARES_H_
#define GRADSYNC_STUDY_SIM_LEAST_SQUARES_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gradsync {
namespace sim {

struct LsqParam {
  std::string name;
  double scale = 1;  // its typical size: steps and differences are in it
  double lower = 0;
  double upper = 1;
  double start = 0;
};

struct LsqProblem {
  std::vector<LsqParam> params;
  std::function<absl::StatusOr<std::vector<double>>(
      const std::vector<double>& x)>
      residuals;
  int max_iterations = 100;
};

struct LsqResult {
  std::vector<double> x;
  std::vector<double> residuals;
  double cost = 0;  // sum of squared residuals at x
  // Per parameter: whether the residuals depend on it at x (a non-zero
  // Jacobian column).
  std::vector<bool> determined;
  int iterations = 0;
  int evaluations = 0;  // calls of `residuals`
};

[[nodiscard]] absl::StatusOr<LsqResult> SolveLeastSquares(
    const LsqProblem& problem);

// The sum of the squares of `r`.
double SumOfSquares(const std::vector<double>& r);

}  // namespace sim
}  // namespace gradsync

#endif  // GRADSYNC_STUDY_SIM_LEAST_SQUARES_H_
