#include "study/sim/least_squares.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace gradsync {
namespace sim {
namespace {

// Forward-difference step, in units of the parameter's scale (relative to
// its value when that is larger): small enough to stay on one linear
// piece of a piecewise-linear residual, large enough above rounding.
constexpr double kDifferenceStep = 1e-7;
// A Jacobian column below this share of the largest is taken as zero.
constexpr double kUndeterminedShare = 1e-20;
// Stop when a step improves the cost by less than this share of it, or
// the cost is below kNegligibleCost (the residuals are relative errors:
// 1e-28 is an rms error of about 1e-14 per cell).
constexpr double kMinImprovement = 1e-13;
constexpr double kNegligibleCost = 1e-28;
constexpr double kStartDamping = 1e-3;
constexpr double kMaxDamping = 1e12;

using Matrix = std::vector<std::vector<double>>;

// Solves a * x = b by Gaussian elimination with partial pivoting; false
// when a is singular.
bool SolveLinear(Matrix a, std::vector<double> b, std::vector<double>* x) {
  const size_t n = b.size();
  for (size_t col = 0; col < n; ++col) {
    size_t pivot = col;
    for (size_t row = col + 1; row < n; ++row) {
      if (std::abs(a[row][col]) > std::abs(a[pivot][col])) pivot = row;
    }
    if (!(std::abs(a[pivot][col]) > 0)) return false;
    std::swap(a[col], a[pivot]);
    std::swap(b[col], b[pivot]);
    for (size_t row = col + 1; row < n; ++row) {
      const double f = a[row][col] / a[col][col];
      for (size_t k = col; k < n; ++k) a[row][k] -= f * a[col][k];
      b[row] -= f * b[col];
    }
  }
  x->assign(n, 0);
  for (size_t i = n; i-- > 0;) {
    double sum = b[i];
    for (size_t k = i + 1; k < n; ++k) sum -= a[i][k] * (*x)[k];
    (*x)[i] = sum / a[i][i];
  }
  return true;
}

[[nodiscard]] absl::Status CheckProblem(const LsqProblem& p) {
  if (p.params.empty()) {
    return absl::InvalidArgumentError("a least-squares fit of no parameters");
  }
  if (!p.residuals) {
    return absl::InvalidArgumentError("a least-squares fit with no residuals");
  }
  for (const LsqParam& q : p.params) {
    if (!(q.scale > 0) || !std::isfinite(q.scale)) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter ", q.name, " has scale ", q.scale,
                       "; it must be > 0 and finite"));
    }
    if (!(q.lower <= q.start && q.start <= q.upper)) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter ", q.name, " starts at ", q.start,
                       ", outside [", q.lower, ", ", q.upper, "]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

double SumOfSquares(const std::vector<double>& r) {
  double sum = 0;
  for (double v : r) sum += v * v;
  return sum;
}

absl::StatusOr<LsqResult> SolveLeastSquares(const LsqProblem& problem) {
  RETURN_IF_ERROR(CheckProblem(problem));
  const std::vector<LsqParam>& params = problem.params;
  const size_t n = params.size();
  LsqResult result;
  auto evaluate =
      [&](const std::vector<double>& x) -> absl::StatusOr<std::vector<double>> {
    ++result.evaluations;
    ASSIGN_OR_RETURN(std::vector<double> r, problem.residuals(x));
    if (!result.residuals.empty() && r.size() != result.residuals.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the residuals changed count from ",
                       result.residuals.size(), " to ", r.size()));
    }
    return r;
  };
  for (const LsqParam& q : params) result.x.push_back(q.start);
  ASSIGN_OR_RETURN(result.residuals, evaluate(result.x));
  result.cost = SumOfSquares(result.residuals);
  result.determined.assign(n, false);
  const size_t m = result.residuals.size();
  double damping = kStartDamping;
  std::vector<double>& x = result.x;
  std::vector<double>& r = result.residuals;
  for (; result.iterations < problem.max_iterations; ++result.iterations) {
    // The Jacobian in scaled units: J[i][j] = d r_i / d (x_j / scale_j).
    Matrix jac(m, std::vector<double>(n, 0));
    for (size_t j = 0; j < n; ++j) {
      const LsqParam& q = params[j];
      double step =
          kDifferenceStep * std::max(std::abs(x[j]) / q.scale, 1.0) * q.scale;
      if (x[j] + step > q.upper) step = -step;
      std::vector<double> xp = x;
      xp[j] += step;
      ASSIGN_OR_RETURN(const std::vector<double> rp, evaluate(xp));
      for (size_t i = 0; i < m; ++i) {
        jac[i][j] = (rp[i] - r[i]) / (step / q.scale);
      }
    }
    std::vector<double> gradient(n, 0);
    Matrix normal(n, std::vector<double>(n, 0));
    for (size_t i = 0; i < m; ++i) {
      for (size_t j = 0; j < n; ++j) {
        gradient[j] += jac[i][j] * r[i];
        for (size_t k = 0; k < n; ++k) normal[j][k] += jac[i][j] * jac[i][k];
      }
    }
    double largest = 0;
    for (size_t j = 0; j < n; ++j) largest = std::max(largest, normal[j][j]);
    // The parameters this step moves: those the residuals depend on, less
    // those the gradient holds against a bound.
    std::vector<size_t> free;
    for (size_t j = 0; j < n; ++j) {
      result.determined[j] =
          normal[j][j] > kUndeterminedShare * largest && normal[j][j] > 0;
      const bool held = (x[j] <= params[j].lower && gradient[j] > 0) ||
                        (x[j] >= params[j].upper && gradient[j] < 0);
      if (result.determined[j] && !held) free.push_back(j);
    }
    if (free.empty() || result.cost <= kNegligibleCost) break;
    bool improved = false;
    double improvement = 0;
    while (!improved && damping <= kMaxDamping) {
      Matrix a(free.size(), std::vector<double>(free.size(), 0));
      std::vector<double> b(free.size(), 0);
      for (size_t p = 0; p < free.size(); ++p) {
        for (size_t q = 0; q < free.size(); ++q) {
          a[p][q] = normal[free[p]][free[q]];
        }
        a[p][p] += damping * normal[free[p]][free[p]];
        b[p] = -gradient[free[p]];
      }
      std::vector<double> step;
      if (!SolveLinear(a, b, &step)) {
        damping *= 4;
        continue;
      }
      std::vector<double> next = x;
      for (size_t p = 0; p < free.size(); ++p) {
        const LsqParam& q = params[free[p]];
        next[free[p]] =
            std::clamp(x[free[p]] + step[p] * q.scale, q.lower, q.upper);
      }
      ASSIGN_OR_RETURN(std::vector<double> rn, evaluate(next));
      const double cost = SumOfSquares(rn);
      if (cost < result.cost) {
        improvement = result.cost - cost;
        x = std::move(next);
        r = std::move(rn);
        result.cost = cost;
        damping = std::max(damping / 3, 1e-12);
        improved = true;
      } else {
        damping *= 4;
      }
    }
    if (!improved) break;
    if (improvement <= kMinImprovement * (result.cost + improvement)) {
      ++result.iterations;
      break;
    }
  }
  return result;
}

}  // namespace sim
}  // namespace gradsync
