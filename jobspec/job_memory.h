// The memory one rank of a job needs, estimated from its spec: what the
// coordinator checks at submit against the workers' --max-job-memory, and
// what a worker checks again before it starts the ranks it was given.
//
// A rank of a built-in model holds, in host memory:
//   parameters   P fp32 values;
//   gradients    P more;
//   optimizer    P per state buffer (momentum 1, Adam/AdamW 2), kept even
//                in PS mode because a switch to the ring brings it back;
//   sync         one flat copy of the gradient (the ring's buckets, or the
//                PS step's push/pull buffer);
//   activations  mlp: every layer's output plus two backward deltas of the
//                widest layer, for one batch;
//   data         fashion-mnist: all 70,000 images as fp32 (each rank loads
//                the dataset); synthetic data: one batch.
// P is the mlp's weights and biases, or the synthetic model's floats. An
// entrypoint job (the user's own program) is not estimated: its memory is
// the program's to bound (docs/security.md).
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_JOBSPEC_JOB_MEMORY_H_
#define GRADSYNC_JOBSPEC_JOB_MEMORY_H_

#include <cstdint>
#include <string>

#include "proto/job.pb.h"

namespace gradsync {

struct RankMemoryEstimate {
  int64_t parameters = 0;  // bytes, as are all below
  int64_t gradients = 0;
  int64_t optimizer = 0;
  int64_t sync = 0;
  int64_t activations = 0;
  int64_t data = 0;
  bool estimated = false;  // false: an entrypoint job (all zero)

  int64_t total() const {
    return parameters + gradients + optimizer + sync + activations + data;
  }
  // "2.9 GiB per rank (parameters 732 MiB, gradients 732 MiB, Adam state
  // 1.4 GiB, sync buffer 732 MiB, activations 1.5 MiB, data 210 MiB)".
  std::string Describe() const;
};

// The estimate for one rank of a valid `spec` (after the coordinator's
// defaults). Overflow-safe for any spec the coordinator accepts.
RankMemoryEstimate EstimateRankMemory(const JobSpec& spec);

}  // namespace gradsync

#endif  // GRADSYNC_JOBSPEC_JOB_MEMORY_H_
