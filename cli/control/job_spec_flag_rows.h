// The job-spec flags of `gradsync submit` and `gradsync local up` as a
// table: one row per flag, naming the JobSpec field it writes
// (job_spec_builder.h turns the rows into flags and a field mask).
// Internal to cli/control.
#ifndef GRADSYNC_CLI_CONTROL_JOB_SPEC_FLAG_ROWS_H_
#define GRADSYNC_CLI_CONTROL_JOB_SPEC_FLAG_ROWS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/job.pb.h"

namespace gradsync {
namespace cli {
namespace control {

using SpecSetter = absl::Status (*)(absl::string_view value, JobSpec* spec);

struct SpecFlagRow {
  const char* name;
  const char* value_name;  // "": a switch
  const char* help;
  const char* path;  // the JobSpec field(s) `set` writes, "a,b" for two
  SpecSetter set;
};

// Every row, in --help order.
absl::Span<const SpecFlagRow> JobSpecFlagRows();

}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_JOB_SPEC_FLAG_ROWS_H_
