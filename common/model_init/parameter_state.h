// ParameterState: what a mode switch moves between the parameter-server
// shards and the ranks: the parameters of one step and the optimizer state
// (momentum, Adam's m and v, the step count) over the same elements. A
// shard's state covers its slice; a rank's covers the whole flat vector
// (PsClient's FetchState concatenates the shards').
#ifndef GRADSYNC_COMMON_MODEL_INIT_PARAMETER_STATE_H_
#define GRADSYNC_COMMON_MODEL_INIT_PARAMETER_STATE_H_

#include <cstdint>
#include <vector>

#include "common/optimizer.h"

namespace gradsync {

struct ParameterState {
  // The step these parameters are for: the next gradient pushed or
  // all-reduced is step `step`'s.
  int64_t step = 0;
  std::vector<float> params;
  // optimizer.size == params.size().
  OptimizerState optimizer;
};

}  // namespace gradsync

#endif  // GRADSYNC_COMMON_MODEL_INIT_PARAMETER_STATE_H_
