#include "cli/bench/ps_options.h"

#include <algorithm>
#include <cstddef>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/host.h"

namespace gradsync {
namespace cli {
namespace bench {
namespace {}  // namespace

int PsShardCount(const BenchOptions& options) {
  if (options.ps_shards > 0) return options.ps_shards;
  return options.ps_addresses.empty()
             ? 1
             : static_cast<int>(options.ps_addresses.size());
}

std::vector<std::string> PsShardAddresses(const BenchOptions& options) {
  const int shards = PsShardCount(options);
  std::vector<std::string> addresses;
  for (int k = 0; k < shards && !options.ps_addresses.empty(); ++k) {
    addresses.push_back(options.ps_addresses[static_cast<size_t>(k) %
                                             options.ps_addresses.size()]);
  }
  return addresses;
}

absl::Status ValidatePsOptions(const BenchOptions& o) {
  if (o.collective != Collective::kAllReduce) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--backend ps measures allreduce only (one push and pull of the "
        "whole gradient), not ",
        CollectiveName(o.collective)));
  }
  if (o.type != DataType::kFloat32 || o.op != ReduceOp::kSum) {
    return absl::InvalidArgumentError(
        "--backend ps sums fp32 gradients; drop -d and -o (or use -d float "
        "-o sum)");
  }
  if (o.algorithm != "auto") {
    return absl::InvalidArgumentError(
        "--algo chooses the ring backend's algorithm; --backend ps has none");
  }
  for (const std::string& address : o.ps_addresses) {
    if (!IsHostPort(address)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--ps-addresses entry '", address,
                       "' is not host:port (a running gradsync-ps)"));
    }
  }
  if (o.member() && o.ps_addresses.empty()) {
    return absl::InvalidArgumentError(
        "--backend ps with --rank needs --ps-addresses host:port,... of "
        "running gradsync-ps servers (only the --ranks launcher starts its "
        "own)");
  }
  if (o.ps_chunk_bytes &&
      (*o.ps_chunk_bytes < 4 || *o.ps_chunk_bytes > (size_t{64} << 20))) {
    return absl::InvalidArgumentError("--ps-chunk must be within 4 B .. 64M");
  }
  const size_t shards = static_cast<size_t>(PsShardCount(o));
  if (o.min_bytes / sizeof(float) < shards) {
    return absl::InvalidArgumentError(
        absl::StrCat("-b ", o.min_bytes, " holds ", o.min_bytes / sizeof(float),
                     " floats, fewer than the ", shards,
                     " PS shards (each needs one); use -b ",
                     shards * sizeof(float), " or more"));
  }
  return absl::OkStatus();
}

}  // namespace bench
}  // namespace cli
}  // namespace gradsync
