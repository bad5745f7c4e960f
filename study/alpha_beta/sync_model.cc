#include "study/alpha_beta/sync_model.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "study/sim/calibration.h"

namespace gradsync {
namespace {

// The busiest link's bytes, one way, of one PS phase (push or pull; they
// are symmetric), per byte of S.
double PsPhaseFactor(const SyncCase& c) {
  const double n = c.workers;
  const double k = c.shards;
  if (c.layout == SyncLayout::kPsSeparate) return std::max(1.0, n / k);
  // Colocated: a shard host takes (N-1)/K of pushes in and sends its own
  // worker's (K-1)/K out; a host without a shard sends all of S.
  const double shard_host = std::max((n - 1) / k, (k - 1) / k);
  return c.shards < c.workers ? std::max(shard_host, 1.0) : shard_host;
}

// Pipelined: push and pull share each link's two directions at once.
double PsPipelinedFactor(const SyncCase& c) {
  const double n = c.workers;
  const double k = c.shards;
  if (c.layout == SyncLayout::kPsSeparate) return std::max(1.0, n / k);
  const double shard_host = (n + k - 2) / k;
  return c.shards < c.workers ? std::max(shard_host, 1.0) : shard_host;
}

// The normal equations of the fit: rows (a_i, b_i) . (alpha, beta) ~ 1
// with a = latency_terms / t, b = link_bytes / t (least squares on the
// relative error), summed over the observations.
struct FitSums {
  double aa = 0, ab = 0, bb = 0, a1 = 0, b1 = 0;
};

[[nodiscard]] absl::StatusOr<FitSums> SumRows(
    const std::vector<SyncObservation>& observations) {
  if (observations.empty()) {
    return absl::InvalidArgumentError("nothing to fit: no observations");
  }
  FitSums s;
  for (const SyncObservation& o : observations) {
    if (!(o.seconds > 0) || !std::isfinite(o.seconds)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a measured time of ", o.seconds, " s; every one must be > 0"));
    }
    const double a = o.cost.latency_terms / o.seconds;
    const double b = o.cost.link_bytes / o.seconds;
    s.aa += a * a;
    s.ab += a * b;
    s.bb += b * b;
    s.a1 += a;
    s.b1 += b;
  }
  return s;
}

}  // namespace

absl::string_view SyncLayoutName(SyncLayout layout) {
  switch (layout) {
    case SyncLayout::kRing:
      return "ring";
    case SyncLayout::kPsSeparate:
      return "ps";
    case SyncLayout::kPsColocated:
      return "ps-colocated";
  }
  return "?";
}

absl::StatusOr<SyncLayout> ParseSyncLayout(absl::string_view name) {
  for (SyncLayout layout :
       {SyncLayout::kRing, SyncLayout::kPsSeparate, SyncLayout::kPsColocated}) {
    if (name == SyncLayoutName(layout)) return layout;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown layout '", name, "'; use ring, ps or ps-colocated"));
}

absl::Status ValidateSyncCase(const SyncCase& c) {
  if (c.workers < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("workers is ", c.workers, "; it must be >= 1"));
  }
  if (c.layout != SyncLayout::kRing && c.shards < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("shards is ", c.shards, "; a PS needs >= 1"));
  }
  if (c.layout == SyncLayout::kPsColocated && c.shards > c.workers) {
    return absl::InvalidArgumentError(
        absl::StrCat(c.shards, " colocated shards on ", c.workers,
                     " worker hosts; colocated shards are at most one per "
                     "worker host"));
  }
  if (!(c.bytes >= 0) || !std::isfinite(c.bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bytes is ", c.bytes, "; it must be >= 0"));
  }
  if (!(c.partition_bytes >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "partition_bytes is ", c.partition_bytes, "; it must be >= 0"));
  }
  return absl::OkStatus();
}

SyncCost ModelCost(const SyncCase& c) {
  SyncCost cost;
  if (c.layout == SyncLayout::kRing) {
    if (c.workers < 2) return cost;
    const double n = c.workers;
    cost.latency_terms = 2 * (n - 1);
    cost.link_bytes = 2 * (n - 1) / n * c.bytes;
    return cost;
  }
  cost.latency_terms = 2;
  if (!c.pipelined) {
    cost.link_bytes = 2 * PsPhaseFactor(c) * c.bytes;
    return cost;
  }
  const double factor = PsPipelinedFactor(c);
  cost.link_bytes = factor * c.bytes;
  // P partitions flow through a pipeline of P + 1 stages (a partition's
  // pull overlaps the next one's push): one alpha per stage, and the last
  // partition's pull, 1/P of the bytes, after every push.
  const double slice = c.bytes / c.shards;
  if (c.partition_bytes > 0 && slice > 0) {
    const double partitions = std::ceil(slice / c.partition_bytes);
    cost.link_bytes += factor * c.bytes / partitions;
    cost.latency_terms = partitions + 1;
  }
  return cost;
}

double PredictSeconds(const SyncCost& cost, const LinkModel& model) {
  return cost.latency_terms * model.alpha_s +
         cost.link_bytes / model.bandwidth_Bps;
}

double PredictSeconds(const SyncCase& c, const LinkModel& model) {
  return PredictSeconds(ModelCost(c), model);
}

ServerCpuModel DefaultServerCpu(absl::string_view transport) {
  // The calibration's documented defaults, header-only: one source.
  const sim::SimCalibration defaults;
  ServerCpuModel cpu;
  cpu.cpu_s_per_byte = transport == "grpc" || transport == "mixed"
                           ? defaults.grpc_cpu_s_per_byte
                           : defaults.plane_cpu_s_per_byte;
  return cpu;
}

double ServerCpuSeconds(const SyncCase& c, int ranks,
                        const ServerCpuModel& cpu) {
  if (c.layout == SyncLayout::kRing || c.shards < 1 || !(cpu.cores > 0)) {
    return 0;
  }
  return 2.0 * std::max(ranks, c.workers) * c.bytes / c.shards *
         cpu.cpu_s_per_byte / cpu.cores;
}

SyncPrediction PredictWithCpu(const SyncCase& c, int ranks,
                              const LinkModel& links,
                              const ServerCpuModel& cpu) {
  SyncPrediction p;
  const SyncCost cost = ModelCost(c);
  if (links.bandwidth_Bps > 0) {
    p.latency_s = cost.latency_terms * links.alpha_s;
    p.link_s = cost.link_bytes / links.bandwidth_Bps;
  }
  p.cpu_s = ServerCpuSeconds(c, ranks, cpu);
  p.cpu_binds = p.cpu_s > p.link_s;
  p.seconds = p.latency_s + std::max(p.link_s, p.cpu_s);
  return p;
}

double BytePsSeconds(int n, int k, double bytes, double bandwidth_Bps) {
  const double dn = n;
  const double dk = k;
  return 2 * dn * (dn - 1) * bytes /
         ((dn * dn + dk * dn - 2 * dk) * bandwidth_Bps);
}

double CrossoverShards(int workers, bool pipelined) {
  if (workers < 2) return 0;
  const double n = workers;
  return pipelined ? n * n / (2 * (n - 1)) : n * n / (n - 1);
}

absl::StatusOr<LinkModel> FitAlphaBeta(
    const std::vector<SyncObservation>& observations) {
  ASSIGN_OR_RETURN(const FitSums s, SumRows(observations));
  if (s.bb <= 0) {
    return absl::InvalidArgumentError(
        "the observations move no bytes over any link; the bandwidth is "
        "undetermined");
  }
  LinkModel model;
  const double det = s.aa * s.bb - s.ab * s.ab;
  double alpha = -1, beta = 0;
  if (observations.size() > 1 && det > 1e-12 * s.aa * s.bb) {
    alpha = (s.a1 * s.bb - s.b1 * s.ab) / det;
    beta = (s.b1 * s.aa - s.a1 * s.ab) / det;
  }
  if (alpha < 0 || beta <= 0) {
    alpha = 0;
    beta = s.b1 / s.bb;
  }
  if (!(beta > 0)) {
    return absl::InvalidArgumentError(
        "the fit found no positive bandwidth for these observations");
  }
  model.alpha_s = alpha;
  model.bandwidth_Bps = 1 / beta;
  return model;
}

absl::StatusOr<LinkModel> FitAlphaAtBandwidth(
    const std::vector<SyncObservation>& observations, double bandwidth_Bps) {
  if (!(bandwidth_Bps > 0) || !std::isfinite(bandwidth_Bps)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a bandwidth of ", bandwidth_Bps,
                     " B/s to fit alpha at; it must be > 0 and finite"));
  }
  ASSIGN_OR_RETURN(const FitSums s, SumRows(observations));
  // beta = 1/B fixed: alpha minimises sum (a_i alpha + b_i beta - 1)^2.
  const double beta = 1 / bandwidth_Bps;
  LinkModel model;
  model.bandwidth_Bps = bandwidth_Bps;
  model.alpha_s = s.aa > 0 ? std::max(0.0, (s.a1 - beta * s.ab) / s.aa) : 0;
  return model;
}

double RelativeError(double predicted, double measured) {
  return (predicted - measured) / measured;
}

}  // namespace gradsync
