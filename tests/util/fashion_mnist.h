// Tests that need Fashion-MNIST (dataset-fashion-mnist, installed by
// scripts/install_deps.sh): where it is missing they skip, or fall back to
// synthetic data, on a developer's machine; under the test script
// (scripts/test.sh, what CI runs), which installs the dataset and sets
// GRADSYNC_REQUIRE_FASHION_MNIST=1, a missing dataset fails them instead,
// so that CI never passes without having run them.
//
//   TEST(Training, Accuracy) {
//     GRADSYNC_SKIP_WITHOUT_FASHION_MNIST();
//     ...
//   }
//   if (!UseFashionMnist()) spec.mutable_dataset()->set_name("synthetic");
#ifndef GRADSYNC_TESTS_UTIL_FASHION_MNIST_H_
#define GRADSYNC_TESTS_UTIL_FASHION_MNIST_H_

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "gtest/gtest.h"
#include "worker/data/fashion_mnist.h"

namespace gradsync::testing {

// True when both splits' image files are installed.
inline bool HaveFashionMnist() {
  const std::string dir(kFashionMnistDir);
  std::error_code ignored;
  return std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz",
                                 ignored) &&
         std::filesystem::exists(dir + "/t10k-images-idx3-ubyte.gz", ignored);
}

// True when a missing dataset must fail the test (the test script's
// GRADSYNC_REQUIRE_FASHION_MNIST=1).
inline bool FashionMnistRequired() {
  const char* required = std::getenv("GRADSYNC_REQUIRE_FASHION_MNIST");
  return required != nullptr && std::string(required) == "1";
}

inline std::string MissingFashionMnistMessage() {
  return "no Fashion-MNIST in " + std::string(kFashionMnistDir) +
         " (apt-get install dataset-fashion-mnist)";
}

// For tests that fall back to synthetic data without the dataset: true
// when it is installed; false otherwise, after recording a test failure
// where it is required.
inline bool UseFashionMnist() {
  if (HaveFashionMnist()) return true;
  if (FashionMnistRequired()) ADD_FAILURE() << MissingFashionMnistMessage();
  return false;
}

}  // namespace gradsync::testing

// Skips the current test without the dataset, or fails it where it is
// required. Returns from the test body either way.
#define GRADSYNC_SKIP_WITHOUT_FASHION_MNIST()                              \
  do {                                                                     \
    if (!::gradsync::testing::HaveFashionMnist()) {                        \
      if (::gradsync::testing::FashionMnistRequired()) {                   \
        GTEST_FAIL() << ::gradsync::testing::MissingFashionMnistMessage(); \
      }                                                                    \
      GTEST_SKIP() << ::gradsync::testing::MissingFashionMnistMessage();   \
    }                                                                      \
  } while (0)

#endif  // GRADSYNC_TESTS_UTIL_FASHION_MNIST_H_
