// A fast 64-bit fingerprint of a parameter buffer, which every rank reports
// after each step (StepMetrics.param_hash): ranks of a synchronous job must
// hold bitwise-identical parameters (docs/architecture.md, invariant 1), so
// their hashes must be equal, and two runs of one spec and seed must end with
// the same hash (invariant 3).
//
// The sum of a mixed term per pair of floats, then the length mixed in
// (worker/model/param_hash_terms.h has the arithmetic): a GPU rank computes
// the same value on the device (CudaMlp::HashParams) instead of copying its
// parameters to the host every step. Not cryptographic: it detects
// divergence, it does not resist forgery.
//
// Errors: none. Threading: a pure function.
#ifndef GRADSYNC_WORKER_TRAIN_PARAM_HASH_H_
#define GRADSYNC_WORKER_TRAIN_PARAM_HASH_H_

#include <cstdint>

#include "absl/types/span.h"

namespace gradsync {

// The fingerprint of `params` (bit patterns, so -0.0 != 0.0 and NaNs with
// different payloads differ).
uint64_t HashParameters(absl::Span<const float> params);

}  // namespace gradsync

#endif  // GRADSYNC_WORKER_TRAIN_PARAM_HASH_H_
