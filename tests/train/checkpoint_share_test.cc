// ShareCheckpoint over real TCP communicators (ranks as threads): the
// lowest rank that can read the file broadcasts it, and every rank ends up
// with its bits; with no readable copy every rank gets the same clear error.
// Each rank is given its own path, standing for "the same name on its own
// host".
#include "worker/train/checkpoint_share.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/collectives/rank_group.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::RankGroup;
using ::gradsync::testing::SmallPipelineOptions;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Bitwise equality (EXPECT_EQ would call NaN unequal and -0 equal to 0).
bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void ExpectSameCheckpoint(const Checkpoint& got, const Checkpoint& want) {
  EXPECT_EQ(got.steps_done, want.steps_done);
  EXPECT_TRUE(SameBits(got.params, want.params));
  EXPECT_EQ(got.optimizer.kind, want.optimizer.kind);
  EXPECT_EQ(got.optimizer.step, want.optimizer.step);
  EXPECT_EQ(got.optimizer.size, want.params.size());
  ASSERT_EQ(got.optimizer.buffers.size(), want.optimizer.buffers.size());
  for (size_t i = 0; i < got.optimizer.buffers.size(); ++i) {
    EXPECT_TRUE(SameBits(got.optimizer.buffers[i], want.optimizer.buffers[i]))
        << "buffer " << i;
  }
}

class CheckpointShareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(
        ::testing::TempDir(), "/share-", getpid(), "-",
        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // An Adam checkpoint whose values tell `tag` apart, with the bit
  // patterns a lossy transfer would change: -0, a NaN, a denormal.
  static Checkpoint Made(float tag, size_t n = 1000) {
    Checkpoint c;
    c.steps_done = 40 + static_cast<int64_t>(tag);
    for (size_t i = 0; i < n; ++i) c.params.push_back(tag + 0.25f * i);
    c.params[1] = -0.0f;
    c.params[2] = std::numeric_limits<float>::quiet_NaN();
    c.params[3] = std::numeric_limits<float>::denorm_min();
    c.optimizer.kind = OptimizerKind::kAdam;
    c.optimizer.step = 40 + static_cast<uint64_t>(tag);
    c.optimizer.size = n;
    c.optimizer.buffers = {std::vector<float>(n, tag / 8),
                           std::vector<float>(n, tag * 3)};
    return c;
  }

  std::string Write(const std::string& name, const Checkpoint& c) {
    const std::string path = absl::StrCat(dir_, "/", name);
    EXPECT_THAT(WriteCheckpoint(path, c.steps_done, c.params, c.optimizer),
                IsOk());
    return path;
  }

  std::string Missing(int rank) {
    return absl::StrCat(dir_, "/host-", rank, "/step-40.ckpt");
  }

  // Runs ShareCheckpoint on `paths.size()` ranks, rank r with paths[r].
  std::vector<absl::StatusOr<SharedCheckpoint>> Share(
      const std::vector<std::string>& paths,
      size_t chunk_floats = kShareChunkFloats) {
    RankGroup group(static_cast<int>(paths.size()), SmallPipelineOptions());
    std::vector<absl::StatusOr<SharedCheckpoint>> out(
        paths.size(), absl::UnknownError("not run"));
    group.Run([&](int r) {
      out[r] = ShareCheckpoint(&group.comm(r), paths[r], chunk_floats);
      return out[r].status();
    });
    return out;
  }

  std::string dir_;
};

TEST_F(CheckpointShareTest, OnlyOneRankHasTheFile_EveryRankGetsItsBits) {
  const Checkpoint c = Made(1);
  const std::string path = Write("step-41.ckpt", c);
  // In one broadcast per vector, and in chunks of 7 floats (1000 is not a
  // multiple of 7).
  for (const size_t chunk : {kShareChunkFloats, size_t{7}}) {
    const auto out = Share({Missing(0), Missing(1), path, Missing(3)}, chunk);
    for (int r = 0; r < 4; ++r) {
      SCOPED_TRACE(absl::StrCat("rank ", r, ", chunks of ", chunk));
      ASSERT_THAT(out[r], IsOk());
      EXPECT_EQ(out[r]->source_rank, 2);
      ExpectSameCheckpoint(out[r]->checkpoint, c);
    }
  }
}

// A host holding an older file under the same name does not split the
// replicas: every rank takes the lowest readable rank's.
TEST_F(CheckpointShareTest, DifferentFilesUnderTheName_LowestRankWins) {
  const Checkpoint older = Made(2, 500);
  const Checkpoint newer = Made(1);
  const auto out =
      Share({Missing(0), Write("a.ckpt", newer), Write("b.ckpt", older)});
  for (int r = 0; r < 3; ++r) {
    SCOPED_TRACE(absl::StrCat("rank ", r));
    ASSERT_THAT(out[r], IsOk());
    EXPECT_EQ(out[r]->source_rank, 1);
    ExpectSameCheckpoint(out[r]->checkpoint, newer);
  }
}

// Garbage, and a copy with one flipped bit (caught by the checksum), on
// the lower ranks: the good copy of the highest rank is taken.
TEST_F(CheckpointShareTest, CorruptCopies_SkippedForAGoodOne) {
  const std::string garbage = absl::StrCat(dir_, "/garbage.ckpt");
  std::ofstream(garbage) << "not a checkpoint";
  const Checkpoint c = Made(3);
  const std::string flipped = Write("flipped.ckpt", c);
  {
    std::fstream file(flipped, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(100);  // inside the parameters
    file.put('\x7f');
  }
  const auto out = Share({garbage, flipped, Write("good.ckpt", c)});
  for (int r = 0; r < 3; ++r) {
    ASSERT_THAT(out[r], IsOk()) << "rank " << r;
    EXPECT_EQ(out[r]->source_rank, 2);
    ExpectSameCheckpoint(out[r]->checkpoint, c);
  }
}

TEST_F(CheckpointShareTest, NoRankCanReadIt_NotFoundOnEveryRank) {
  const auto out = Share({Missing(0), Missing(1), Missing(2)});
  for (int r = 0; r < 3; ++r) {
    EXPECT_THAT(out[r],
                StatusIs(absl::StatusCode::kNotFound,
                         AllOf(HasSubstr("no worker could read the checkpoint"),
                               HasSubstr(Missing(r)),
                               HasSubstr(absl::StrCat("rank ", r)),
                               HasSubstr("put the file on the host of any "
                                         "one worker"))))
        << "rank " << r;
  }
}

TEST_F(CheckpointShareTest, OnlyACorruptCopy_DataLossOnEveryRank) {
  const std::string corrupt = absl::StrCat(dir_, "/corrupt.ckpt");
  std::ofstream(corrupt) << "not a checkpoint";
  const auto out = Share({Missing(0), corrupt});
  EXPECT_THAT(out[0], StatusIs(absl::StatusCode::kDataLoss,
                               HasSubstr("no worker could read")));
  EXPECT_THAT(out[1],
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("bad magic")));
}

// A peer that goes away (its communicator aborted, as a failing rank's
// is) ends the share at once on the others, naming what was under way;
// nothing waits for the deadline.
TEST_F(CheckpointShareTest, PeerGone_FailsPromptlyNamingTheOperation) {
  const std::string path = Write("step-41.ckpt", Made(1));
  RankGroup group(3, SmallPipelineOptions());
  std::vector<absl::Status> out(3);
  const absl::Time start = absl::Now();
  group.Run([&](int r) {
    if (r == 2) {
      group.comm(r).Abort(absl::UnavailableError("rank 2's host went away"));
      return absl::OkStatus();
    }
    out[r] = ShareCheckpoint(&group.comm(r), path).status();
    return out[r];
  });
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  for (int r = 0; r < 2; ++r) {
    EXPECT_THAT(out[r], StatusIs(absl::StatusCode::kUnavailable,
                                 HasSubstr("asking which ranks can read")))
        << "rank " << r;
  }
}

TEST_F(CheckpointShareTest, SgdAndOneRank_NoBuffersToSend) {
  Checkpoint c = Made(4, 10);
  c.optimizer.kind = OptimizerKind::kSgd;
  c.optimizer.buffers.clear();
  const std::string path = Write("sgd.ckpt", c);
  const auto alone = Share({path});
  ASSERT_THAT(alone[0], IsOk());
  ExpectSameCheckpoint(alone[0]->checkpoint, c);
  const auto pair = Share({Missing(0), path});
  for (int r = 0; r < 2; ++r) {
    ASSERT_THAT(pair[r], IsOk()) << "rank " << r;
    ExpectSameCheckpoint(pair[r]->checkpoint, c);
  }
}

}  // namespace
}  // namespace gradsync
