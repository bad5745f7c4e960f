// The entrypoint model kind's spec part (model_kind_spec.h): the user's
// own program (a PyTorch script, say), which each worker daemon runs as
// one process per rank (worker/launch/entrypoint_runner.h). gradsync does
// not hold its parameters: its model and data are the program's.
#ifndef GRADSYNC_MODELS_ENTRYPOINT_ENTRYPOINT_SPEC_H_
#define GRADSYNC_MODELS_ENTRYPOINT_ENTRYPOINT_SPEC_H_

#include <string>

#include "absl/status/status.h"
#include "jobspec/job_spec.h"
#include "models/model_kind_spec.h"
#include "proto/job.pb.h"

namespace gradsync {

// The entrypoint's fields (argv, workdir, deadlines, restarts) and none of
// gradsync's own models' (layers, profile, dataset): INVALID_ARGUMENT
// naming the field.
[[nodiscard]] absl::Status ValidateEntrypoint(const JobSpec& spec);

// ValidateEntrypoint as the kind's validate (no defaults to fill).
[[nodiscard]] absl::Status ValidateEntrypointModel(const JobSpec& spec,
                                                   JobSpec* out);
// ": python3 train.py --epochs 3 (in /home/me/run)".
std::string DescribeEntrypoint(const ModelSpec& model);

inline constexpr ModelKindSpec kEntrypointModelKindSpec = {
    kEntrypointModelKind,
    /*summary=*/"your own program, one process per rank (entrypoint.argv)",
    ModelKindSpec::Runner::kOwnRunner,
    /*runs_on_cuda=*/false,
    ValidateEntrypointModel,
    /*parameter_layout=*/nullptr,
    /*activation_floats=*/nullptr,
    /*input_floats=*/nullptr,
    DescribeEntrypoint,
};

}  // namespace gradsync

#endif  // GRADSYNC_MODELS_ENTRYPOINT_ENTRYPOINT_SPEC_H_
