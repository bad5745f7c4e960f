// TempDir: a fresh directory under GoogleTest's temporary directory,
// removed with everything in it when the object goes out of scope.
//
//   TempDir dir("state_store");
//   const std::string path = dir.path() + "/state.db";
//
// path() is empty when the directory could not be made.
#ifndef GRADSYNC_TESTS_UTIL_TEMP_DIR_H_
#define GRADSYNC_TESTS_UTIL_TEMP_DIR_H_

#include <stdlib.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace gradsync {
namespace testing {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "gradsync") {
    std::string pattern = ::testing::TempDir();
    if (pattern.empty() || pattern.back() != '/') pattern += '/';
    pattern += prefix + "_XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    if (!path_.empty()) {
      (void)!system(absl::StrCat("rm -rf '", path_, "'").c_str());
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace testing
}  // namespace gradsync

#endif  // GRADSYNC_TESTS_UTIL_TEMP_DIR_H_
