// The lab's state file, <run-dir>/lab.json: what `lab up` built (the
// LabSpec, from which every name and address follows), the coordinator's
// address and the newest link probe (proto/lab.proto). `lab down`,
// `status`, `probe`, `sweep` and `explain` read it.
//
// Threading: one process at a time per run directory.
#ifndef GRADSYNC_CLI_LAB_LAB_STATE_H_
#define GRADSYNC_CLI_LAB_LAB_STATE_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/lab/lab_config.h"
#include "proto/lab.pb.h"

namespace gradsync {
namespace lab {

LabSpec ToSpec(const LabConfig& config);
LabConfig FromSpec(const LabSpec& spec);

// <run_dir>/lab.json, or nullopt when there is none. INVALID_ARGUMENT
// naming the file when it is not a LabState.
[[nodiscard]] absl::StatusOr<std::optional<LabState>> ReadLabState(
    const std::string& run_dir);

// Writes <run_dir>/lab.json through a temporary file and a rename.
[[nodiscard]] absl::Status WriteLabState(const std::string& run_dir,
                                         const LabState& state);

// Removes <run_dir>/lab.json (if present).
void RemoveLabState(const std::string& run_dir);

// The same JSON mapping for any lab record (field names as in the proto).
std::string LabJson(const google::protobuf::Message& message);
[[nodiscard]] absl::Status ParseLabJson(const std::string& json,
                                        const std::string& source,
                                        google::protobuf::Message* message);

}  // namespace lab
}  // namespace gradsync

#endif  // GRADSYNC_CLI_LAB_LAB_STATE_H_
