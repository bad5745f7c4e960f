#include "jobspec/job_spec_json.h"

#include <google/protobuf/util/json_util.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

absl::StatusOr<JobSpec> ParseJobSpecJson(absl::string_view json,
                                         absl::string_view source) {
  JobSpec spec;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &spec, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source,
        ": not a valid job spec (protobuf JSON of gradsync.JobSpec, see "
        "proto/job.proto; fields in camelCase, e.g. {\"numWorkers\": 2, "
        "\"model\": {\"kind\": \"mlp\"}}): the JSON could not be parsed: ",
        std::string(status.message())));
  }
  return spec;
}

std::string JobSpecToJson(const JobSpec& spec) {
  std::string json;
  // A JobSpec has no Any or unresolvable field: printing cannot fail.
  (void)google::protobuf::util::MessageToJsonString(spec, &json);
  return json;
}

}  // namespace gradsync
