#include "jobspec/sync_mode_name.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gradsync {
namespace {

constexpr absl::string_view kRingName = SyncPathName(SyncPath::kRing);
constexpr absl::string_view kPsName = SyncPathName(SyncPath::kPs);

}  // namespace

std::string SyncModeName(SyncMode mode) {
  switch (mode) {
    case SYNC_MODE_PS:
      return std::string(kPsName);
    case SYNC_MODE_RING:
    case SYNC_MODE_UNSPECIFIED:
      return std::string(kRingName);
    default:
      return absl::StrCat("mode ", static_cast<int>(mode));
  }
}

absl::StatusOr<SyncMode> ParseSyncModeName(absl::string_view name,
                                           absl::string_view what) {
  if (name == kRingName) return SYNC_MODE_RING;
  if (name == kPsName) return SYNC_MODE_PS;
  return absl::InvalidArgumentError(
      absl::StrCat(what, " is '", name, "'; use ", kPsName, " or ", kRingName));
}

SyncPath SyncPathOf(SyncMode mode) {
  return mode == SYNC_MODE_PS ? SyncPath::kPs : SyncPath::kRing;
}

SyncMode SyncModeOf(SyncPath path) {
  return path == SyncPath::kPs ? SYNC_MODE_PS : SYNC_MODE_RING;
}

}  // namespace gradsync
