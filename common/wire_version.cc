#include "common/wire_version.h"

#include "absl/strings/str_cat.h"

namespace gradsync {

absl::Status CheckWireVersion(int32_t peer_version, absl::string_view who) {
  if (peer_version == kWireVersion) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "cannot register ", who, ": it speaks gradsync wire version ",
      peer_version,
      peer_version == 0 ? " (a build from before versioned registration)" : "",
      " but this coordinator speaks version ", kWireVersion,
      "; run the coordinator, gradsync-ps and gradsync-worker from the same "
      "gradsync build"));
}

}  // namespace gradsync
