// Builds the JobSpec of `gradsync submit` from a JSON file (--file, in
// protobuf's JSON mapping, see proto/job.proto; read by jobspec's one
// parser, ParseJobSpecJson) and command-line flags.
// Flags given on the command line override the file's fields; fields that
// neither sets get the CLI's defaults (FillJobSpecDefaults), and the
// coordinator checks the result.
//
//   JobSpecFlags spec_flags;
//   std::vector<FlagSpec> flags;
//   AddJobSpecFlags(&spec_flags, &flags);
//   ... ParseFlags(args, flags) ...
//   ASSIGN_OR_RETURN(JobSpec spec, BuildJobSpec(spec_flags));
//
// A flag is one row of a table naming the JobSpec fields it sets, so that
// a later flag (--ps-shards, --sync, --staleness) is one more row; the
// override copies exactly those fields, zero values included.
//
// Errors: INVALID_ARGUMENT for a bad flag value (naming the flag), an
// unreadable file or malformed JSON (naming the file and the parser's
// reason).
#ifndef GRADSYNC_CLI_CONTROL_JOB_SPEC_BUILDER_H_
#define GRADSYNC_CLI_CONTROL_JOB_SPEC_BUILDER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/flags.h"
#include "proto/job.pb.h"

namespace gradsync {
namespace cli {
namespace control {

// What the job-spec flags collected.
struct JobSpecFlags {
  std::string file;  // --file; empty: none
  JobSpec values;    // the fields the flags set
  // Proto paths of the fields set ("optimizer.learning_rate"), in the
  // order first set.
  std::vector<std::string> paths;
};

// Appends the job-spec rows (--name, --workers, --model, --layers,
// --synthetic-floats, --compute-ms, --dataset, --data-path, --optimizer,
// --lr, --momentum, --nesterov, --weight-decay, --batch-size, --steps,
// --epochs, --seed, --bucket-mb, --accumulate, --eval-every,
// --blas-threads, --mode, --ps-shards, --sync, --staleness,
// --ps-chunk-bytes, --switch-at (repeatable: STEP:MODE, kept in step
// order), --device, --ring-backend, --ring-algo, --checkpoint-dir,
// --checkpoint-every, --file) to `flags`, writing into `out`.
void AddJobSpecFlags(JobSpecFlags* out, std::vector<FlagSpec>* flags);

// Copies the fields named in flags.paths from flags.values into `spec`
// (repeated fields are replaced, not appended). --epochs without --steps
// also clears steps, so that the epochs count.
[[nodiscard]] absl::Status ApplyJobSpecFlags(const JobSpecFlags& flags,
                                             JobSpec* spec);

// Fills what is still unset: model "mlp" (or "synthetic" when
// syntheticFloats is set) with layers 784,256,256,10; dataset
// "fashion-mnist" (or "synthetic" for a synthetic model); 1 worker; mode
// ring; optimizer sgd with a learning rate for its kind (sgd 0.1, momentum
// 0.05, adam 0.001); batch 256 (at least one sample per rank and
// micro-batch); 100 steps when neither steps nor epochs is set; the name
// "<model>-<dataset>".
void FillJobSpecDefaults(JobSpec* spec);

// The file (when flags.file is set), then the flags, then the defaults.
[[nodiscard]] absl::StatusOr<JobSpec> BuildJobSpec(const JobSpecFlags& flags);

// The whole file as text. INVALID_ARGUMENT naming the file and the reason
// when it cannot be read.
[[nodiscard]] absl::StatusOr<std::string> ReadTextFile(absl::string_view path);

}  // namespace control
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_CONTROL_JOB_SPEC_BUILDER_H_
