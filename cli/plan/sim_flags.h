// The flags that `gradsync simulate` and `gradsync plan` share (the model
// and its compute, the cluster's links, the synchronisation's knobs, the
// calibration file), and what they turn into: the simulator's workload
// and config (study/sim/).
//
//   SimFlags f;
//   std::vector<FlagSpec> flags;
//   AddSimFlags(&f, &flags);
//   ... ParseFlags(args, flags) ...
//   ASSIGN_OR_RETURN(sim::SimWorkload work, BuildWorkload(f));
//   ASSIGN_OR_RETURN(sim::SimConfig config, BuildConfig(f));
//
// Link rates: bits per second as tc writes them ("100gbit", "25gbit",
// "1gbit", "100mbit", cli/lab/lab_config.h's ParseLinkRate), or bytes per
// second with "byte" for "bit" ("300gbyte" = 300 GB/s).
//
// Errors: INVALID_ARGUMENT naming the flag: a missing --model-profile or
// --link, a rate, a range, a dtype, a transport or a GPU it does not
// know, a PS placement other than contiguous or spread, and a calibration file
// that cannot be read or is malformed (calibration.h's errors, all as
// INVALID_ARGUMENT: the file is input). Threading: pure functions; thread-safe.
#ifndef GRADSYNC_CLI_PLAN_SIM_FLAGS_H_
#define GRADSYNC_CLI_PLAN_SIM_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/flags.h"
#include "study/sim/sim_config.h"
#include "study/sim/workload.h"

namespace gradsync {
namespace cli {
namespace plan {

struct SimFlags {
  std::string model_profile;  // required
  double profile_scale = 1;
  int batch = 32;
  double gpu_tflops = 0;  // sustained; 0: --gpu's peak * --gpu-efficiency
  std::string gpu = "a100";
  double gpu_efficiency = 0.4;
  double compute_ms = -1;  // >= 0: the backward given, as the lab's
  int gpus_per_node = 1;
  std::string link;                    // required
  std::string node_link = "2400gbit";  // 300 GB/s
  std::string grad_dtype = "fp32";
  uint64_t bucket_bytes = 25 << 20;
  uint64_t first_bucket_bytes = 0;
  uint64_t partition_bytes = 4096000;
  std::string ps_placement = "contiguous";  // or "spread" (BytePS's)
  std::string ps_transport = "plane";
  bool ps_unpipelined = false;
  bool ps_flat_push = false;  // PS, G > 1: no reduction in the node
  int server_cores = 16;
  std::string calibration;  // a file; empty: the defaults
};

// Appends the rows of every SimFlags field to `flags`.
void AddSimFlags(SimFlags* f, std::vector<FlagSpec>* flags);

// A link rate (the top) in bytes per second; INVALID_ARGUMENT naming
// `flag` otherwise.
[[nodiscard]] absl::StatusOr<double> ParseRateBytes(absl::string_view flag,
                                                    absl::string_view text);

// "A..B": the powers of two in [A, B] (A itself first when it is not
// one); "A,B,C": those; "A": that one. Numbers >= `min`. INVALID_ARGUMENT
// naming `flag` for anything else or an empty range.
[[nodiscard]] absl::StatusOr<std::vector<int>> ParseCounts(
    absl::string_view flag, absl::string_view text, int min);

// The profile's layers with the compute the flags give (workload.h):
// --compute-ms if given, else --gpu-tflops, else --gpu's peak times
// --gpu-efficiency.
[[nodiscard]] absl::StatusOr<sim::SimWorkload> BuildWorkload(const SimFlags& f);

// The config of every field but layout, workers and servers (the caller
// sets those), with the calibration file read.
[[nodiscard]] absl::StatusOr<sim::SimConfig> BuildConfig(const SimFlags& f);

// "bert-large, bf16 gradients, 100 Gbit/s per node (2400 Gbit/s in the
// node), calibration: defaults (not fitted)": the header line of both
// commands' tables.
std::string DescribeSetup(const SimFlags& f, const sim::SimConfig& config);

}  // namespace plan
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_PLAN_SIM_FLAGS_H_
