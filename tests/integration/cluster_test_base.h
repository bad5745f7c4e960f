// ClusterTest: the GoogleTest fixture of the integration tests. SetUp
// starts a TestCluster (test_cluster.h) with Options(); TearDown stops
// every process it started and, when the test failed, prints each
// process's log and keeps the log directory (removed after a pass).
//
// Also the job specs the tests share, and whether Fashion-MNIST is
// installed (the cases that train on it skip without it).
#ifndef GRADSYNC_TESTS_INTEGRATION_CLUSTER_TEST_BASE_H_
#define GRADSYNC_TESTS_INTEGRATION_CLUSTER_TEST_BASE_H_

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proto/job.pb.h"
#include "tests/integration/test_cluster.h"
#include "tests/util/fashion_mnist.h"

namespace gradsync {
namespace testing {

// An MLP on Fashion-MNIST trained with Adam.
inline JobSpec FashionMnistSpec(int num_workers,
                                const std::vector<int64_t>& layers,
                                int64_t batch_size, int64_t steps,
                                double learning_rate, uint64_t seed) {
  JobSpec spec;
  spec.set_name("integration-fmnist");
  spec.mutable_model()->set_kind("mlp");
  for (int64_t width : layers) spec.mutable_model()->add_layer_sizes(width);
  spec.mutable_dataset()->set_name("fashion-mnist");
  spec.set_num_workers(num_workers);
  spec.set_mode(SYNC_MODE_RING);
  spec.mutable_optimizer()->set_name("adam");
  spec.mutable_optimizer()->set_learning_rate(learning_rate);
  spec.set_batch_size(batch_size);
  spec.set_steps(steps);
  spec.set_seed(seed);
  return spec;
}

// A synthetic model (emulated compute, `floats` gradient elements) that
// runs for a long time, for tests that need a job to stay RUNNING.
inline JobSpec LongSyntheticSpec(int num_workers, int64_t floats = 4096,
                                 double compute_ms = 20) {
  JobSpec spec;
  spec.set_name("integration-long");
  spec.mutable_model()->set_kind("synthetic");
  spec.mutable_model()->set_synthetic_floats(floats);
  spec.mutable_model()->set_synthetic_compute_ms(compute_ms);
  spec.mutable_dataset()->set_name("synthetic");
  spec.set_num_workers(num_workers);
  spec.mutable_optimizer()->set_name("sgd");
  spec.mutable_optimizer()->set_learning_rate(0.01);
  spec.set_batch_size(64);
  spec.set_steps(1000000);
  spec.set_seed(7);
  return spec;
}

class ClusterTest : public ::testing::Test {
 protected:
  // The cluster SetUp starts; fixtures override to change it.
  virtual TestClusterOptions Options() const { return TestClusterOptions(); }

  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TestCluster>> cluster =
        TestCluster::Start(Options());
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
  }

  void TearDown() override {
    if (cluster_ == nullptr) return;
    const std::string ends = cluster_->Stop();
    if (HasFailure()) {
      std::cerr << "processes: " << ends << "\nlogs kept in "
                << cluster_->log_dir() << "\n"
                << cluster_->DumpLogs();
    } else {
      cluster_->RemoveLogs();
    }
    cluster_.reset();
  }

  TestCluster& cluster() { return *cluster_; }

 private:
  std::unique_ptr<TestCluster> cluster_;
};

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_INTEGRATION_CLUSTER_TEST_BASE_H_
