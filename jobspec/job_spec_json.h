// A JobSpec in JSON: the form users write specs in (`gradsync submit
// --file`), in protobuf's JSON mapping of proto/job.proto (camelCase or
// proto field names; enums by name, e.g. "SYNC_MODE_RING"). One parser
// for every reader of spec files (the CLI, the tests, the fuzzer), and
// its inverse.
//
//   ASSIGN_OR_RETURN(JobSpec spec, ParseJobSpecJson(text, "job.json"));
//   ASSIGN_OR_RETURN(JobSpec full, ValidateJobSpec(spec));  // job_spec.h
//
// Parsing does not validate. Errors: INVALID_ARGUMENT led by the source's
// name, with the parser's reason, for malformed JSON, unknown fields or
// values of the wrong type. Pure functions; thread-safe.
#ifndef GRADSYNC_JOBSPEC_JOB_SPEC_JSON_H_
#define GRADSYNC_JOBSPEC_JOB_SPEC_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/job.pb.h"

namespace gradsync {

// Parses `json` as a JobSpec; `source` (a file name, say) leads the error:
// "<source>: not a valid job spec (...): the JSON could not be parsed:
// <reason>".
[[nodiscard]] absl::StatusOr<JobSpec> ParseJobSpecJson(
    absl::string_view json, absl::string_view source = "job spec JSON");

// `spec` in the JSON that ParseJobSpecJson reads back: camelCase names,
// enums by name, fields at their defaults left out.
std::string JobSpecToJson(const JobSpec& spec);

}  // namespace gradsync

#endif  // GRADSYNC_JOBSPEC_JOB_SPEC_JSON_H_
