#include "server/coordinator/coordinator_config.h"

#include "absl/strings/str_cat.h"
#include "security/path_roots.h"

namespace gradsync {
namespace {

[[nodiscard]] absl::Status Positive(absl::string_view field,
                                    absl::Duration value) {
  if (value > absl::ZeroDuration()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("coordinator config: ", field, " is ",
                   absl::FormatDuration(value), "; it must be positive"));
}

}  // namespace

absl::Status ValidateCoordinatorConfig(const CoordinatorConfig& config) {
  for (const auto& [field, value] :
       {std::pair<absl::string_view, absl::Duration>{"lease", config.lease},
        {"heartbeat_interval", config.heartbeat_interval},
        {"lease_check_interval", config.lease_check_interval},
        {"wait_slice", config.wait_slice}}) {
    if (absl::Status status = Positive(field, value); !status.ok()) {
      return status;
    }
  }
  if (config.heartbeat_interval >= config.lease) {
    return absl::InvalidArgumentError(absl::StrCat(
        "coordinator config: heartbeat interval (",
        absl::FormatDuration(config.heartbeat_interval),
        ") must be shorter than the lease (",
        absl::FormatDuration(config.lease),
        "), or every worker is lost between two heartbeats; a lease of "
        "several heartbeats (e.g. 5 s and 500 ms) tolerates a slow one"));
  }
  for (const std::string& root : config.checkpoint_roots) {
    absl::StatusOr<std::string> normal = NormalizeRoot(root);
    if (!normal.ok()) return normal.status();
    if (*normal != root) {
      return absl::InvalidArgumentError(
          absl::StrCat("coordinator config: checkpoint root '", root,
                       "' is not in its "
                       "normal form '",
                       *normal, "'"));
    }
  }
  if (config.retained_ended_jobs < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("coordinator config: retained_ended_jobs is ",
                     config.retained_ended_jobs, "; it must be >= 0"));
  }
  return absl::OkStatus();
}

}  // namespace gradsync
