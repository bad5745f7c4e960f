// A fast 64-bit fingerprint of a parameter buffer, which every rank reports
// after each step (StepMetrics.param_hash): ranks of a synchronous job must
// hold bitwise-identical parameters (DESIGN.md invariant 1), so their
// hashes must be equal, and two runs of one spec and seed must end with
// the same hash (invariant 3).
//
// FNV-1a (Fowler, Noll, Vo) over the buffer's bytes taken as host-order
// 64-bit words (a trailing odd float is zero-extended), plus the length.
// Not cryptographic: it detects divergence, it does not resist forgery.
// About 1 ns per word.
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
