#include "collectives/nccl/cuda_util.h"

#include "absl/strings/str_cat.h"

namespace gradsync {
namespace nccl_internal {

absl::Status NcclStatus(ncclResult_t result, absl::string_view context,
                        ncclComm_t comm) {
  if (result == ncclSuccess) return absl::OkStatus();
  absl::StatusCode code = absl::StatusCode::kInternal;
  switch (result) {
    case ncclRemoteError:
    case ncclSystemError:
      code = absl::StatusCode::kUnavailable;
      break;
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      code = absl::StatusCode::kInvalidArgument;
      break;
    default:
      break;
  }
  const char* last = ncclGetLastError(comm);
  return absl::Status(
      code,
      absl::StrCat(context, ": NCCL error ", static_cast<int>(result), " (",
                   ncclGetErrorString(result), ")",
                   last != nullptr && last[0] != '\0' ? absl::StrCat(": ", last)
                                                      : std::string()));
}

}  // namespace nccl_internal
}  // namespace gradsync
