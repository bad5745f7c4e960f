// Valid job specs for tests of what a spec means (tests/jobspec/) and of
// the coordinator that checks them (tests/coordinator/).
#ifndef GRADSYNC_TESTS_JOBSPEC_JOB_SPEC_TEST_UTIL_H_
#define GRADSYNC_TESTS_JOBSPEC_JOB_SPEC_TEST_UTIL_H_

#include <string>

#include "proto/job.pb.h"

namespace gradsync {
namespace testing {

// A valid spec: an MLP on Fashion-MNIST with `num_workers` ranks.
inline JobSpec ValidSpec(int num_workers, const std::string& device = "") {
  JobSpec spec;
  spec.set_name("test");
  spec.mutable_model()->set_kind("mlp");
  for (int width : {784, 32, 10}) spec.mutable_model()->add_layer_sizes(width);
  spec.mutable_dataset()->set_name("fashion-mnist");
  spec.set_num_workers(num_workers);
  spec.mutable_optimizer()->set_name("sgd");
  spec.mutable_optimizer()->set_learning_rate(0.1);
  spec.set_batch_size(64);
  spec.set_steps(10);
  spec.set_device(device);
  return spec;
}

// A valid spec in PS mode with `shards` shards (0: one per server).
inline JobSpec PsJobSpec(int num_workers, int shards) {
  JobSpec spec = ValidSpec(num_workers);
  spec.set_mode(SYNC_MODE_PS);
  spec.mutable_ps()->set_shards(shards);
  return spec;
}

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_JOBSPEC_JOB_SPEC_TEST_UTIL_H_
