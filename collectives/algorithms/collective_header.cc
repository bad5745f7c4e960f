#include "collectives/algorithms/collective_header.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gradsync {

absl::string_view CollectiveName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "allreduce";
    case CollectiveKind::kReduceScatter:
      return "reducescatter";
    case CollectiveKind::kAllGather:
      return "allgather";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kBarrier:
      return "barrier";
  }
  return "unknown-collective";
}

std::string DescribeCollective(const CollectiveHeader& h) {
  const auto kind = static_cast<CollectiveKind>(h.kind);
  std::string s =
      absl::StrCat(CollectiveName(kind), " #", h.seq, " (", h.count, " x ",
                   DataTypeName(static_cast<DataType>(h.type)));
  if (kind == CollectiveKind::kAllReduce ||
      kind == CollectiveKind::kReduceScatter) {
    absl::StrAppend(&s, " ", ReduceOpName(static_cast<ReduceOp>(h.op)));
  }
  if (kind == CollectiveKind::kBroadcast) {
    absl::StrAppend(&s, " from root ", h.root);
  }
  absl::StrAppend(&s, ")");
  return s;
}

absl::Status CheckHeader(const CollectiveHeader& want,
                         const CollectiveHeader& got, int peer_rank) {
  if (got.magic != kHeaderMagic) {
    return absl::DataLossError(absl::StrFormat(
        "garbage from rank %d where the header of %s was expected (magic "
        "0x%08x, want 0x%08x); a foreign process may be writing to this "
        "connection or a previous collective was cut short",
        peer_rank, DescribeCollective(want), got.magic, kHeaderMagic));
  }
  std::string what;
  if (got.seq != want.seq) {
    what = "sequence number";
  } else if (got.kind != want.kind) {
    what = "collective";
  } else if (got.count != want.count) {
    what = "element count";
  } else if (got.type != want.type) {
    what = "data type";
  } else if (got.op != want.op) {
    what = "reduction op";
  } else if (got.root != want.root) {
    what = "root";
  } else if (got.algorithm != want.algorithm) {
    what = "algorithm";
  } else if (got.from_rank != peer_rank) {
    what = "sender rank";
  } else {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "mismatched collectives (", what, " differs): rank ", peer_rank,
      " called ", DescribeCollective(got), " but this rank (", want.from_rank,
      ") called ", DescribeCollective(want),
      "; every rank must issue the same collectives in the same order"));
}

}  // namespace gradsync
