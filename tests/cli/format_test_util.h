// Test data shared by the control commands' format tests.
#ifndef GRADSYNC_TESTS_CLI_FORMAT_TEST_UTIL_H_
#define GRADSYNC_TESTS_CLI_FORMAT_TEST_UTIL_H_

#include <cstdint>

#include "proto/coordinator.pb.h"

namespace gradsync::cli::control::testing {

// One rank's metrics of one ring step, with the given times in seconds.
inline StepMetrics Metric(int rank, int64_t step, double compute, double comm,
                          double step_s) {
  StepMetrics m;
  m.set_rank(rank);
  m.set_step(step);
  m.set_loss(1.0 / (step + 1));
  m.set_compute_s(compute);
  m.set_comm_s(comm);
  m.set_idle_s(step_s - compute - comm);
  m.set_step_s(step_s);
  m.set_bytes_sent(1024);
  m.set_bytes_received(2048);
  m.set_samples(32);
  m.set_mode(SYNC_MODE_RING);
  return m;
}

}  // namespace gradsync::cli::control::testing

#endif  // GRADSYNC_TESTS_CLI_FORMAT_TEST_UTIL_H_
