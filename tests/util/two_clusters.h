// TwoClustersTest: a fixture holding two clusters' certificates
// (security/certs.h), made once per test suite because key generation is
// slow: certs(), the cluster under test, and other(), a stranger's whose
// certificates the first must refuse.
#ifndef GRADSYNC_TESTS_UTIL_TWO_CLUSTERS_H_
#define GRADSYNC_TESTS_UTIL_TWO_CLUSTERS_H_

#include <utility>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "security/certs.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {

class TwoClustersTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<ClusterCertificates> certs = NewClusterCertificates(30);
    ASSERT_THAT(certs, IsOk());
    certs_ = new ClusterCertificates(*std::move(certs));
    absl::StatusOr<ClusterCertificates> other = NewClusterCertificates(30);
    ASSERT_THAT(other, IsOk());
    other_ = new ClusterCertificates(*std::move(other));
  }
  static void TearDownTestSuite() {
    delete certs_;
    delete other_;
    certs_ = other_ = nullptr;
  }

  static const ClusterCertificates& certs() { return *certs_; }
  static const ClusterCertificates& other() { return *other_; }

 private:
  inline static ClusterCertificates* certs_ = nullptr;
  inline static ClusterCertificates* other_ = nullptr;  // another cluster's
};

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_UTIL_TWO_CLUSTERS_H_
