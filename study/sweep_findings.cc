#include "study/sweep_findings.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace gradsync {
namespace study {
namespace {

std::string Mib(int64_t bytes) {
  return absl::StrFormat("%g MiB", bytes / 1048576.0);
}

std::string Ms(double seconds) {
  return absl::StrFormat("%.1f", 1e3 * seconds);
}

// The cells of one (bytes, rate) group.
using Group = std::vector<const SweepPoint*>;
std::map<std::pair<int64_t, int64_t>, Group> Groups(
    const std::vector<SweepPoint>& cells) {
  std::map<std::pair<int64_t, int64_t>, Group> groups;
  for (const SweepPoint& c : cells) {
    groups[{c.bytes, c.rate_bps}].push_back(&c);
  }
  return groups;
}

const SweepPoint* Find(const Group& group, absl::string_view layout, int n,
                       int k) {
  for (const SweepPoint* c : group) {
    if (c->layout == layout && c->workers == n && c->shards == k) {
      return c;
    }
  }
  return nullptr;
}

std::string GroupName(const std::pair<int64_t, int64_t>& key) {
  return absl::StrCat("S=", Mib(key.first), " at ",
                      absl::StrFormat("%g Mbit/s", key.second / 1e6));
}

// (a): PS with K = 1 against N, linear.
void FindingA(const std::pair<int64_t, int64_t>& key, const Group& group,
              const LinkModel& model, const SweepOptions& options,
              std::vector<std::string>* out) {
  std::vector<const SweepPoint*> ps;
  for (const SweepPoint* c : group) {
    if (c->layout == "ps" && c->shards == 1) ps.push_back(c);
  }
  std::sort(ps.begin(), ps.end(), [](const SweepPoint* a, const SweepPoint* b) {
    return a->workers < b->workers;
  });
  if (ps.size() < 3) return;
  // Least squares t = a + b N, and R^2.
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double m = static_cast<double>(ps.size());
  for (const SweepPoint* c : ps) {
    sx += c->workers;
    sy += c->sync_s;
    sxx += static_cast<double>(c->workers) * c->workers;
    sxy += c->workers * c->sync_s;
  }
  const double slope = (m * sxy - sx * sy) / (m * sxx - sx * sx);
  const double intercept = (sy - slope * sx) / m;
  double ss_res = 0, ss_tot = 0;
  for (const SweepPoint* c : ps) {
    const double fit = intercept + slope * c->workers;
    ss_res += (c->sync_s - fit) * (c->sync_s - fit);
    ss_tot += (c->sync_s - sy / m) * (c->sync_s - sy / m);
  }
  const double r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 0;
  const double measured = ps.back()->sync_s / ps.front()->sync_s;
  const double predicted = ps.back()->predicted_s / ps.front()->predicted_s;
  const bool pass =
      slope > 0 && r2 >= 0.95 &&
      std::abs(measured / predicted - 1) <= options.max_cell_error;
  std::vector<std::string> times;
  for (const SweepPoint* c : ps) times.push_back(Ms(c->sync_s));
  out->push_back(absl::StrFormat(
      "%s (a) %s: PS with one shard grows linearly with N: %s ms for N = "
      "%d..%d (R^2 %.3f; x%.2f from the first N to the last, model x%.2f)",
      pass ? "PASS" : "MISS", GroupName(key), absl::StrJoin(times, ", "),
      ps.front()->workers, ps.back()->workers, r2, measured, predicted));
  (void)model;
}

// (b): the ring against N.
void FindingB(const std::pair<int64_t, int64_t>& key, const Group& group,
              const SweepOptions& options, std::vector<std::string>* out) {
  std::vector<const SweepPoint*> ring, ps1;
  for (const SweepPoint* c : group) {
    if (c->layout == "ring") ring.push_back(c);
    if (c->layout == "ps" && c->shards == 1) ps1.push_back(c);
  }
  auto by_n = [](const SweepPoint* a, const SweepPoint* b) {
    return a->workers < b->workers;
  };
  std::sort(ring.begin(), ring.end(), by_n);
  std::sort(ps1.begin(), ps1.end(), by_n);
  if (ring.size() < 2) return;
  const double measured = ring.back()->sync_s / ring.front()->sync_s;
  const double predicted = ring.back()->predicted_s / ring.front()->predicted_s;
  const bool pass =
      measured < 2 * (1 + options.max_cell_error) &&
      std::abs(measured / predicted - 1) <= options.max_cell_error;
  std::vector<std::string> times;
  for (const SweepPoint* c : ring) times.push_back(Ms(c->sync_s));
  std::string versus;
  if (ps1.size() >= 2 && ps1.front()->workers == ring.front()->workers &&
      ps1.back()->workers == ring.back()->workers) {
    versus = absl::StrFormat(", against x%.2f for PS with one shard",
                             ps1.back()->sync_s / ps1.front()->sync_s);
  }
  out->push_back(absl::StrFormat(
      "%s (b) %s: the ring stays nearly flat in N: %s ms for N = %d..%d "
      "(x%.2f; model x%.2f, bounded by 2(N-1)/N < 2%s)",
      pass ? "PASS" : "MISS", GroupName(key), absl::StrJoin(times, ", "),
      ring.front()->workers, ring.back()->workers, measured, predicted,
      versus));
}

// (c): PS with K = N server hosts against the ring, per N.
void FindingC(const std::pair<int64_t, int64_t>& key, const Group& group,
              const SweepOptions& options, std::vector<std::string>* out) {
  std::vector<std::string> parts;
  bool pass = true;
  for (const SweepPoint* ring : group) {
    if (ring->layout != "ring" || ring->workers < 2) continue;
    const int n = ring->workers;
    const SweepPoint* ps = Find(group, "ps", n, n);
    if (ps == nullptr) continue;
    const double measured = ring->sync_s / ps->sync_s;
    const double predicted = ring->predicted_s / ps->predicted_s;
    pass = pass && std::abs(measured / predicted - 1) <= options.max_cell_error;
    parts.push_back(absl::StrFormat("N=%d ring/PS x%.2f (model x%.2f)", n,
                                    measured, predicted));
  }
  if (parts.empty()) return;
  out->push_back(absl::StrFormat(
      "%s (c) %s: PS with K = N server hosts against the ring: %s; the "
      "alpha-beta ratio is 2(N-1)/N when push and pull overlap, (N-1)/N "
      "when the pull waits for every push",
      pass ? "PASS" : "MISS", GroupName(key), absl::StrJoin(parts, ", ")));
}

// Where t(K) of PS with K separate servers meets `target`, K continuous;
// -1 if it does not within [k_lo, k_hi].
double Crossing(const std::function<double(double)>& t, double target,
                double k_lo, double k_hi) {
  double lo = k_lo, hi = k_hi;
  if ((t(lo) - target) * (t(hi) - target) > 0) return -1;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    if ((t(lo) - target) * (t(mid) - target) <= 0) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return (lo + hi) / 2;
}

// (d): the crossover shard count, per N with enough K measured.
void FindingD(const std::pair<int64_t, int64_t>& key, const Group& group,
              const LinkModel& model, const SweepOptions& options,
              std::vector<std::string>* out) {
  for (const SweepPoint* ring : group) {
    if (ring->layout != "ring" || ring->workers < 2) continue;
    const int n = ring->workers;
    std::vector<const SweepPoint*> ps;
    for (const SweepPoint* c : group) {
      if (c->layout == "ps" && c->workers == n) ps.push_back(c);
    }
    std::sort(ps.begin(), ps.end(),
              [](const SweepPoint* a, const SweepPoint* b) {
                return a->shards < b->shards;
              });
    if (ps.size() < 3) continue;
    // The model's t(K), K continuous, as ModelCost has it: with P =
    // ceil(S/(K q)) partitions per server, (P + 1) alpha + max(S, N S/K)
    // (1 + 1/P) / B pipelined; unpipelined 2 alpha and 2 for 1 + 1/P.
    const double s_bytes = static_cast<double>(ring->bytes);
    const double q = static_cast<double>(ps.front()->partition_bytes);
    auto predicted_t = [&](double k) {
      double fill = 1, latency_terms = 2;
      if (options.pipelined_ps && q > 0) {
        const double partitions = std::ceil(s_bytes / k / q);
        fill = 1 / partitions;
        latency_terms = partitions + 1;
      } else if (options.pipelined_ps) {
        fill = 0;
      }
      return latency_terms * model.alpha_s +
             std::max(1.0, n / k) * s_bytes * (1 + fill) / model.bandwidth_Bps;
    };
    const double k_model = Crossing(
        predicted_t,
        PredictSeconds(
            SyncCase{SyncLayout::kRing, n, 0, static_cast<double>(ring->bytes)},
            model),
        1, n);
    // Observed: between the measured K where PS goes below the ring,
    // interpolating t = a + b/K.
    double k_seen = -1;
    for (size_t i = 0; i + 1 < ps.size(); ++i) {
      const double t0 = ps[i]->sync_s, t1 = ps[i + 1]->sync_s;
      const double k0 = ps[i]->shards, k1 = ps[i + 1]->shards;
      const double r = ring->sync_s;
      if ((t0 - r) * (t1 - r) > 0) continue;
      const double b = (t0 - t1) / (1 / k0 - 1 / k1);
      const double a = t0 - b / k0;
      k_seen = b / (r - a);
      break;
    }
    const double k_closed = CrossoverShards(n, options.pipelined_ps);
    std::string line;
    if (k_seen < 0 && k_model < 0) {
      line = absl::StrFormat(
          "PASS (d) %s, N=%d: PS with K <= %d never reaches the ring, as "
          "the model says (K* = %.2f > N)",
          GroupName(key), n, ps.back()->shards, k_closed);
    } else if (k_seen < 0 || k_model < 0) {
      line = absl::StrFormat(
          "MISS (d) %s, N=%d: crossover K* observed %s, model %s "
          "(closed form %.2f)",
          GroupName(key), n,
          k_seen < 0 ? "none" : absl::StrFormat("%.2f", k_seen),
          k_model < 0 ? "none" : absl::StrFormat("%.2f", k_model), k_closed);
    } else {
      const bool pass = std::abs(k_seen - k_model) <= 1;
      line = absl::StrFormat(
          "%s (d) %s, N=%d: crossover K* observed %.2f, model %.2f (closed "
          "form N^2/(%s(N-1)) = %.2f)",
          pass ? "PASS" : "MISS", GroupName(key), n, k_seen, k_model,
          options.pipelined_ps ? "2" : "", k_closed);
    }
    out->push_back(line);
  }
}

}  // namespace

std::vector<std::string> SweepFindings(const std::vector<SweepPoint>& trusted,
                                       const LinkModel& model,
                                       double reference_bps,
                                       const SweepOptions& options) {
  std::vector<std::string> lines;
  for (const auto& [key, group] : Groups(trusted)) {
    // B at this group's rate.
    const LinkModel at_rate{
        model.alpha_s, reference_bps > 0
                           ? model.bandwidth_Bps * key.second / reference_bps
                           : model.bandwidth_Bps};
    FindingA(key, group, at_rate, options, &lines);
    FindingB(key, group, options, &lines);
    FindingC(key, group, options, &lines);
    FindingD(key, group, at_rate, options, &lines);
  }
  return lines;
}

}  // namespace study
}  // namespace gradsync
