// JobSpec.grad_dtype: the element type gradients travel in, on the ring
// and to the parameter server.
// One parser for the coordinator, the workers and the CLI.
//
//   "" or "fp32"  float (the default)
//   "bf16"        bfloat16
//   "fp16"        IEEE half, finite values clamped to +-65504
//
// (The aliases of collectives/types.h's ParseDataType are accepted too:
// "float", "bfloat16", "half", ...). 16-bit gradients are built for the
// host rings (TCP, shared memory, halving-doubling, hierarchical), the NCCL
// ring and the parameter server (both transports:
// CreateShardRequest.wire_dtype), so a spec's only error is the name
// (entrypoint jobs, whose gradients are their program's, refuse 16 bits in
// job_spec.cc).
#ifndef GRADSYNC_JOBSPEC_GRAD_DTYPE_H_
#define GRADSYNC_JOBSPEC_GRAD_DTYPE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "collectives/types.h"
#include "proto/job.pb.h"

namespace gradsync {

// kFloat32, kBFloat16 or kFloat16; INVALID_ARGUMENT naming the field
// otherwise.
[[nodiscard]] absl::StatusOr<DataType> ParseGradDtype(absl::string_view name);

// "fp32", "bf16" or "fp16": the spelling the spec, the CLI and the metrics
// use.
std::string GradDtypeName(DataType type);

// True when `spec` ever synchronises through parameter-server shards: mode
// PS or auto, or a scripted switch to PS.
bool SpecUsesPs(const JobSpec& spec);

}  // namespace gradsync

#endif  // GRADSYNC_JOBSPEC_GRAD_DTYPE_H_
