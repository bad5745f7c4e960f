// Fuzz target: the job-spec JSON parser and validator (what `gradsync
// submit --file` reads and the coordinator checks). Any input must give a
// spec or an INVALID_ARGUMENT, never a crash, a hang or undefined
// behaviour; a spec that validates must validate again unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "jobspec/job_spec.h"
#include "jobspec/job_spec_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view json(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<gradsync::JobSpec> spec = gradsync::ParseJobSpecJson(json);
  if (!spec.ok()) {
    if (spec.status().code() != absl::StatusCode::kInvalidArgument) abort();
    return 0;
  }
  absl::StatusOr<gradsync::JobSpec> valid = gradsync::ValidateJobSpec(*spec);
  if (!valid.ok()) {
    if (valid.status().code() != absl::StatusCode::kInvalidArgument) abort();
    return 0;
  }
  // Validation fills defaults; a valid spec is a fixed point.
  absl::StatusOr<gradsync::JobSpec> again = gradsync::ValidateJobSpec(*valid);
  if (!again.ok() || again->SerializeAsString() != valid->SerializeAsString()) {
    abort();
  }
  return 0;
}
