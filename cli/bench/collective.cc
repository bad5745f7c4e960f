#include "cli/bench/collective.h"

#include <algorithm>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "study/alpha_beta/sync_bandwidth.h"

namespace gradsync {
namespace cli {
namespace bench {

absl::StatusOr<Collective> ParseCollective(absl::string_view name) {
  const std::string n =
      absl::StrReplaceAll(absl::AsciiStrToLower(name), {{"_", ""}, {"-", ""}});
  if (n == "allreduce") return Collective::kAllReduce;
  if (n == "reducescatter") return Collective::kReduceScatter;
  if (n == "allgather") return Collective::kAllGather;
  if (n == "broadcast" || n == "bcast") return Collective::kBroadcast;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown collective '", name,
                   "'; use allreduce, reducescatter, allgather or broadcast"));
}

absl::string_view CollectiveName(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce:
      return "allreduce";
    case Collective::kReduceScatter:
      return "reducescatter";
    case Collective::kAllGather:
      return "allgather";
    case Collective::kBroadcast:
      return "broadcast";
  }
  return "invalid";
}

bool HasReduceOp(Collective collective) {
  return collective == Collective::kAllReduce ||
         collective == Collective::kReduceScatter;
}

bool HasRoot(Collective collective) {
  return collective == Collective::kBroadcast;
}

double BusBandwidthFactor(Collective collective, int ranks) {
  const double n = ranks;
  switch (collective) {
    case Collective::kAllReduce:
      return AllReduceBusFactor(ranks);
    case Collective::kReduceScatter:
    case Collective::kAllGather:
      return (n - 1) / n;
    case Collective::kBroadcast:
      return 1.0;
  }
  return 0.0;
}

double AlgorithmBandwidth(size_t bytes, double seconds) {
  return gradsync::AlgorithmBandwidth(static_cast<int64_t>(bytes),
                                      absl::Seconds(seconds));
}

CollectiveCounts CountsForSize(Collective collective, size_t bytes,
                               DataType type, int ranks) {
  const size_t element = DataTypeSize(type);
  const size_t count = bytes / element;
  const size_t n = static_cast<size_t>(std::max(ranks, 1));
  CollectiveCounts counts;
  switch (collective) {
    case Collective::kAllReduce:
    case Collective::kBroadcast:
      counts.send_count = count;
      counts.recv_count = count;
      counts.param_count = count;
      break;
    case Collective::kReduceScatter:
      counts.recv_count = count / n;
      counts.send_count = counts.recv_count * n;
      counts.param_count = counts.recv_count;
      break;
    case Collective::kAllGather:
      counts.send_count = count / n;
      counts.recv_count = counts.send_count * n;
      counts.param_count = counts.send_count;
      break;
  }
  counts.size_bytes = std::max(counts.send_count, counts.recv_count) * element;
  return counts;
}

InPlaceOffsets InPlaceOffsetsFor(Collective collective,
                                 const CollectiveCounts& counts, int rank) {
  InPlaceOffsets offsets;
  const size_t r = static_cast<size_t>(rank);
  if (collective == Collective::kReduceScatter) {
    offsets.recv = r * counts.recv_count;
  } else if (collective == Collective::kAllGather) {
    offsets.send = r * counts.send_count;
  }
  return offsets;
}

absl::Status RunCollective(Communicator* comm, Collective collective,
                           const void* send, void* recv,
                           const CollectiveCounts& counts, DataType type,
                           ReduceOp op, int root) {
  switch (collective) {
    case Collective::kAllReduce:
      return comm->AllReduce(send, recv, counts.param_count, type, op);
    case Collective::kReduceScatter:
      return comm->ReduceScatter(send, recv, counts.param_count, type, op);
    case Collective::kAllGather:
      return comm->AllGather(send, recv, counts.param_count, type);
    case Collective::kBroadcast:
      return comm->Broadcast(send, recv, counts.param_count, type, root);
  }
  return absl::InvalidArgumentError("invalid collective");
}

}  // namespace bench
}  // namespace cli
}  // namespace gradsync
