// The checkpoint roots: what counts as under a root, lexically and with
// the links on disk resolved.
#include "security/path_roots.h"

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PathRootsTest, RootsAreAbsoluteAndNormal) {
  EXPECT_EQ(NormalizeRoot("/var/lib/gradsync/").value_or(""),
            "/var/lib/gradsync");
  EXPECT_EQ(NormalizeRoot("/").value_or(""), "/");
  for (const char* bad : {"ckpt", "", "/a/../etc", "/a/./b", "/a//b"}) {
    EXPECT_THAT(NormalizeRoot(bad), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("absolute path")))
        << bad;
  }
  EXPECT_THAT(
      ParseRoots("/data,/scratch/ckpt/").value_or(std::vector<std::string>{}),
      ElementsAre("/data", "/scratch/ckpt"));
  absl::StatusOr<std::vector<std::string>> none = ParseRoots("");
  ASSERT_THAT(none, IsOk());
  EXPECT_TRUE(none->empty());
  EXPECT_THAT(ParseRoots("/data,rel"),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(PathRootsTest, UnderARootOrRefusedNamingTheField) {
  const std::vector<std::string> roots = {"/data", "/scratch/ckpt"};
  for (const char* ok : {"/data", "/data/job/step-3.ckpt", "/scratch/ckpt/x"}) {
    EXPECT_THAT(CheckUnderRoots("checkpoint.directory", ok, roots), IsOk())
        << ok;
  }
  for (const char* bad : {"/etc", "/database/x", "/scratch", "/data/../etc",
                          "data/x", "/data/./x"}) {
    EXPECT_THAT(CheckUnderRoots("checkpoint.resumeFrom", bad, roots),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("checkpoint.resumeFrom"),
                               HasSubstr("/data, /scratch/ckpt"))))
        << bad;
  }
  // No path named, or no roots: nothing to check.
  EXPECT_THAT(CheckUnderRoots("checkpoint.directory", "", roots), IsOk());
  EXPECT_THAT(CheckUnderRoots("checkpoint.directory", "../x", {}), IsOk());
}

// A link inside a root that leads out is caught once resolved; one that
// stays inside is fine.
TEST(PathRootsTest, ResolvedLinksMustStayUnderARoot) {
  const std::string root = (std::filesystem::path(::testing::TempDir()) /
                            absl::StrCat("roots-", getpid()))
                               .lexically_normal()
                               .string();
  std::filesystem::create_directories(root + "/inside");
  std::filesystem::create_symlink("/etc", root + "/out");
  std::filesystem::create_symlink(root + "/inside", root + "/in");
  const std::vector<std::string> roots = {root};
  EXPECT_THAT(
      CheckUnderRoots("checkpoint.resumeFrom", root + "/out/passwd", roots),
      IsOk());  // lexically under the root...
  EXPECT_THAT(CheckResolvedUnderRoots("checkpoint.resumeFrom",
                                      root + "/out/passwd", roots),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("symbolic link to /etc/passwd")));
  EXPECT_THAT(CheckResolvedUnderRoots("checkpoint.directory",
                                      root + "/in/new-dir", roots),
              IsOk());
  EXPECT_THAT(CheckResolvedUnderRoots("checkpoint.directory", "/etc", roots),
              StatusIs(absl::StatusCode::kInvalidArgument));
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace gradsync
