// RootedDir on real directories: opened beneath a root without following
// links, created when asked, and Verify catching a directory (or one of
// its parents) swapped for a link, moved, replaced or removed.
#include "security/rooted_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"
#include "tests/util/temp_dir.h"

namespace gradsync {
namespace {

namespace fs = std::filesystem;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Each test runs with openat2 (where the kernel has it) and with the
// component walk older kernels take.
class RootedDirTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    SetRootedDirOpenat2ForTesting(GetParam());
    ASSERT_FALSE(dir_.path().empty());
    base_ = dir_.path();
    root_ = base_ + "/root";
    outside_ = base_ + "/outside";
    fs::create_directories(root_);
    fs::create_directories(outside_);
  }
  void TearDown() override { SetRootedDirOpenat2ForTesting(true); }

  bool OutsideIsEmpty() const { return fs::is_empty(outside_); }

  ::gradsync::testing::TempDir dir_{"rooted"};
  std::string base_, root_, outside_;
};

TEST_P(RootedDirTest, CreatesBelowTheRoot_FilesGoThroughTheDescriptor) {
  const std::string path = root_ + "/jobs/a/ckpt";
  absl::StatusOr<RootedDir> dir = RootedDir::Open(root_, path, true);
  ASSERT_THAT(dir, IsOk());
  EXPECT_EQ(dir->path(), path);
  EXPECT_EQ(dir->root(), root_);
  EXPECT_TRUE(fs::is_directory(path));
  const int fd = openat(dir->fd(), "f", O_WRONLY | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  EXPECT_TRUE(fs::exists(path + "/f"));
  EXPECT_THAT(dir->Verify(), IsOk());
  // The root holding the path that is the longest.
  absl::StatusOr<RootedDir> nested = RootedDir::OpenUnderRoots(
      "checkpoint.directory", path, {root_, root_ + "/jobs"}, false);
  ASSERT_THAT(nested, IsOk());
  EXPECT_EQ(nested->root(), root_ + "/jobs");
  EXPECT_THAT(nested->Verify(), IsOk());
}

TEST_P(RootedDirTest, OutsideTheRootsOrMissing_Refused) {
  EXPECT_THAT(RootedDir::OpenUnderRoots("checkpoint.directory", outside_,
                                        {root_}, true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("checkpoint.directory")));
  EXPECT_THAT(RootedDir::Open(root_, root_ + "/../outside", true),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(RootedDir::Open(root_, root_ + "/missing/ckpt", false),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr(root_ + "/missing does not exist")));
  EXPECT_FALSE(fs::exists(root_ + "/missing"));
  EXPECT_TRUE(OutsideIsEmpty());
}

// No link is followed below the root, whether it leads out or stays in.
TEST_P(RootedDirTest, LinkBelowTheRoot_RefusedAtOpenNamingIt) {
  fs::create_directories(root_ + "/real");
  fs::create_symlink(outside_, root_ + "/out");
  fs::create_symlink(root_ + "/real", root_ + "/in");
  for (const char* link : {"/out", "/in"}) {
    for (const std::string& path :
         {root_ + link, root_ + link + "/ckpt", root_ + link + "/a/b"}) {
      EXPECT_THAT(
          RootedDir::Open(root_, path, true),
          StatusIs(absl::StatusCode::kFailedPrecondition,
                   AllOf(HasSubstr(root_ + link + " is a symbolic link"),
                         HasSubstr("no link is followed"))))
          << path;
    }
  }
  EXPECT_TRUE(OutsideIsEmpty());
  EXPECT_TRUE(fs::is_empty(root_ + "/real"));
  // A file where a directory should be.
  fs::create_directories(root_ + "/d");
  close(open((root_ + "/d/file").c_str(), O_WRONLY | O_CREAT, 0600));
  EXPECT_THAT(RootedDir::Open(root_, root_ + "/d/file/x", true),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(root_ + "/d/file is not a directory")));
}

TEST_P(RootedDirTest, DirectorySwappedForALink_VerifyFailsNamingIt) {
  const std::string path = root_ + "/job/ckpt";
  absl::StatusOr<RootedDir> dir = RootedDir::Open(root_, path, true);
  ASSERT_THAT(dir, IsOk());
  fs::rename(path, path + ".old");
  fs::create_symlink(outside_, path);
  EXPECT_THAT(
      dir->Verify(),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               AllOf(HasSubstr(path + " was replaced by a symbolic link or "
                                      "moved since the job started"),
                     HasSubstr(path + " is a symbolic link"),
                     HasSubstr("below the root " + root_))));
}

TEST_P(RootedDirTest, ParentSwappedForALink_VerifyFailsNamingIt) {
  const std::string path = root_ + "/job/ckpt";
  absl::StatusOr<RootedDir> dir = RootedDir::Open(root_, path, true);
  ASSERT_THAT(dir, IsOk());
  fs::rename(root_ + "/job", root_ + "/job.old");
  fs::create_directories(outside_ + "/ckpt");
  fs::create_symlink(outside_, root_ + "/job");
  EXPECT_THAT(dir->Verify(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(path + " was replaced"),
                             HasSubstr(root_ + "/job is a symbolic link"))));
}

TEST_P(RootedDirTest, MovedReplacedOrRemoved_VerifyFails) {
  const std::string path = root_ + "/ckpt";
  absl::StatusOr<RootedDir> dir = RootedDir::Open(root_, path, true);
  ASSERT_THAT(dir, IsOk());
  fs::rename(path, path + ".old");
  fs::create_directories(path);  // a real directory, but not the same
  EXPECT_THAT(dir->Verify(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(path + " is another directory now")));
  fs::remove(path);
  EXPECT_THAT(dir->Verify(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                      HasSubstr(path + " does not exist")));
  fs::rename(path + ".old", path);  // back where it was
  EXPECT_THAT(dir->Verify(), IsOk());
}

// Without a root the directory is opened as named, links and all, and
// Verify asks whether its name still leads to it.
TEST_P(RootedDirTest, WithoutARoot_OpenedAsNamedAndVerified) {
  fs::create_directories(base_ + "/a");
  fs::create_directories(base_ + "/b");
  const std::string link = base_ + "/link";
  fs::create_symlink(base_ + "/a", link);
  absl::StatusOr<RootedDir> dir =
      RootedDir::OpenUnderRoots("x", link, {}, false);
  ASSERT_THAT(dir, IsOk());
  EXPECT_EQ(dir->root(), "");
  EXPECT_THAT(dir->Verify(), IsOk());
  fs::remove(link);
  fs::create_symlink(base_ + "/b", link);
  EXPECT_THAT(dir->Verify(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(link + " is another directory now")));
  absl::StatusOr<RootedDir> made =
      RootedDir::Open("", base_ + "/new/dir", true);
  ASSERT_THAT(made, IsOk());
  EXPECT_TRUE(fs::is_directory(base_ + "/new/dir"));
}

INSTANTIATE_TEST_SUITE_P(Openat2AndWalk, RootedDirTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Openat2" : "Walk";
                         });

}  // namespace
}  // namespace gradsync
