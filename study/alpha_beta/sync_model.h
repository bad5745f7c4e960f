// The alpha-beta (latency-bandwidth) model of one gradient synchronisation,
// and its fit to measurements. `gradsync lab sweep`, `gradsync explain` and
// a job's `--mode auto` all predict with these functions.
//
// One synchronisation moves S bytes of gradient from each of N workers and
// brings S bytes of parameters (or of summed gradient) back. Every host has
// one full-duplex link of B bytes/s to a non-blocking switch, and sending a
// message costs alpha seconds of latency. The model's time is
//
//   t = latency_terms * alpha + link_bytes / B
//
// where link_bytes is what the busiest link carries, one way, on the
// critical path (SyncCost):
//
//   ring all-reduce     2(N-1)/N * S bytes in 2(N-1) steps:
//                       t = 2(N-1) * (alpha + S/(N*B)).
//   PS, K shards on K hosts of their own (no worker there): a worker's link
//                       carries S each way, a server's N*S/K each way.
//                       Unpipelined (the pull starts once every push is in,
//                       gradsync's sync PS): t = 2 * max(S, N*S/K) / B + 2a.
//                       Pipelined (each server's slice in P partitions of
//                       q bytes, pushed in turn, so that the pull of one
//                       overlaps the push of the next on the full-duplex
//                       links): P + 1 pipeline stages,
//                       t = max(S, N*S/K) (1 + 1/P) / B + (P + 1) a, the
//                       1/P being the last partition's pull. P = 1 is the
//                       unpipelined case.
//   PS colocated: K shards on K of the N worker hosts (BytePS's layout).
//                       A shard host's link carries (N-1)*S/K of pushes in
//                       and (K-1)*S/K of its own worker's pushes out; a host
//                       without a shard carries S. With K = N this is the
//                       ring's 2(N-1)/N * S, BytePS's
//                       2n(n-1)M / ((n^2 + kn - 2k) B) at k = 0 extra
//                       servers (BytePsSeconds). Pipelined, a shard host
//                       carries (N+K-2)*S/K each way.
//
// The servers' CPU (PS layouts only). Every byte a server receives or sends
// crosses its transport's CPU (the reads and writes, the summation, the
// copies): c core-seconds per byte, on `cores` cores. With R ranks (every
// rank pushes, so here ranks count, not hosts: R >= N), a server takes
// R*S/K of pushes in and sends as much out, colocated or not (its own
// host's pushes cross the transport too), so its CPU term is
//
//   t_cpu = 2 * R * S / K * c / cores.
//
// The server pipelines: its reader takes partition j + 1 off the socket
// while the summed partition j is written out, and the links carry bytes
// while the CPU works on others. So the two overlap, and the slower one
// bounds the step, as in the simulator (study/sim/ps_model.h: the CPU is a
// resource every byte crosses beside the NIC):
//
//   t = latency_terms * alpha + max(link_bytes / B, t_cpu).
//
// c per transport defaults to the simulator's calibration defaults
// (study/sim/calibration.h: the tensor plane 1e-10 s/B, gRPC 3e-10 s/B).
//
// The crossover: a PS of K separate server hosts is as fast as the ring at
// K* = N^2 / (2(N-1)) pipelined (N^2 / (N-1) unpipelined, which is more
// than N: an unpipelined PS never catches the ring with K <= N).
//
// Fit: FitAlphaBeta finds alpha >= 0 and B > 0 that minimise the squared
// relative error of the predictions over a set of measurements (weighted
// least squares on the two coefficients), so that a 10 ms cell counts as
// much as a 1 s one.
//
// Threading: plain functions of their arguments.
#ifndef GRADSYNC_STUDY_ALPHA_BETA_SYNC_MODEL_H_
#define GRADSYNC_STUDY_ALPHA_BETA_SYNC_MODEL_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gradsync {

enum class SyncLayout {
  kRing,         // peer ring all-reduce
  kPsSeparate,   // K parameter-server shards on hosts of their own
  kPsColocated,  // K shards on K of the workers' hosts
};

// "ring", "ps", "ps-colocated".
absl::string_view SyncLayoutName(SyncLayout layout);
// The inverse of SyncLayoutName; INVALID_ARGUMENT for anything else.
[[nodiscard]] absl::StatusOr<SyncLayout> ParseSyncLayout(
    absl::string_view name);

// One synchronisation to predict.
struct SyncCase {
  SyncLayout layout = SyncLayout::kRing;
  int workers = 1;         // N, one per host
  int shards = 1;          // K (PS layouts)
  double bytes = 0;        // S
  bool pipelined = false;  // PS: pull overlaps push (see the top)
  // Pipelined PS: the partition size q (each server's slice of S/K bytes
  // is in P = ceil(S/(K q)) partitions); the last partition's pull adds
  // 1/P of the busiest link's bytes. 0: no fill term.
  double partition_bytes = 0;
};

// OK, or INVALID_ARGUMENT naming the bad field: N < 1, K < 1, S < 0, a
// negative partition size, or a colocated K above N.
[[nodiscard]] absl::Status ValidateSyncCase(const SyncCase& c);

// t = latency_terms * alpha + link_bytes / B.
struct SyncCost {
  double latency_terms = 0;
  double link_bytes = 0;
};

// The coefficients of `c` (see the top). A single worker synchronises
// nothing on the ring (zero cost); on a PS it still pushes and pulls.
// `c` must be valid.
SyncCost ModelCost(const SyncCase& c);

struct LinkModel {
  double alpha_s = 0;        // latency per message, seconds
  double bandwidth_Bps = 0;  // B, bytes per second, one way
};

// latency_terms * alpha + link_bytes / B; `model.bandwidth_Bps` > 0.
double PredictSeconds(const SyncCost& cost, const LinkModel& model);
double PredictSeconds(const SyncCase& c, const LinkModel& model);

// A PS server's CPU (see the top).
struct ServerCpuModel {
  double cpu_s_per_byte = 0;  // c, core-seconds per byte; 0: no CPU term
  double cores = 1;           // > 0
};

// c for a PS transport: "grpc" (and "mixed", part gRPC) gets gRPC's
// calibration default, anything else (the plane, the default) the plane's.
ServerCpuModel DefaultServerCpu(absl::string_view transport);

// The CPU term of `c` with `ranks` pushing ranks: 2 R S / K * c / cores on
// a PS, 0 on the ring.
double ServerCpuSeconds(const SyncCase& c, int ranks,
                        const ServerCpuModel& cpu);

// One prediction with both terms, and which binds.
struct SyncPrediction {
  double latency_s = 0;  // latency_terms * alpha
  double link_s = 0;     // link_bytes / B
  double cpu_s = 0;      // ServerCpuSeconds
  double seconds = 0;    // latency_s + max(link_s, cpu_s)
  bool cpu_binds = false;
};

// `links.bandwidth_Bps` > 0, or 0 for "no link in play": then only the CPU
// term (and no latency) counts.
SyncPrediction PredictWithCpu(const SyncCase& c, int ranks,
                              const LinkModel& links,
                              const ServerCpuModel& cpu);

// BytePS's time for n workers (each also a colocated server) plus k
// servers on hosts of their own, with the load split optimally:
// 2n(n-1)M / ((n^2 + kn - 2k) B), for M bytes. n >= 2, k >= 0, B > 0.
double BytePsSeconds(int n, int k, double bytes, double bandwidth_Bps);

// K* for N workers: N^2 / (2(N-1)) pipelined, N^2 / (N-1) unpipelined;
// 0 for N < 2.
double CrossoverShards(int workers, bool pipelined);

// One measured synchronisation.
struct SyncObservation {
  SyncCost cost;
  double seconds = 0;  // measured, > 0
};

// Weighted least squares (see the top). INVALID_ARGUMENT for fewer than one
// observation, a non-positive measurement, or observations that determine
// no positive bandwidth (every link_bytes 0). With a single observation, or
// when the best unconstrained alpha is negative, alpha is 0 and B is fitted
// alone.
[[nodiscard]] absl::StatusOr<LinkModel> FitAlphaBeta(
    const std::vector<SyncObservation>& observations);

// The same least squares for alpha >= 0 alone, B given: for observations
// that cannot separate alpha from B (FitAlphaBeta would put B above what
// the links can carry), with B known from the links instead. With no
// latency terms in any observation, alpha is 0. INVALID_ARGUMENT as
// FitAlphaBeta, or for a bandwidth that is not positive and finite.
[[nodiscard]] absl::StatusOr<LinkModel> FitAlphaAtBandwidth(
    const std::vector<SyncObservation>& observations, double bandwidth_Bps);

// (predicted - measured) / measured.
double RelativeError(double predicted, double measured);

}  // namespace gradsync

#endif  // GRADSYNC_STUDY_ALPHA_BETA_SYNC_MODEL_H_
