// Checkpoints: rank 0 writes them every N steps and after the last step,
// each exactly the parameters and optimizer state of its step; damaged
// files are refused.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ps/daemon/ps_server.h"
#include "tests/train/trainer_test_util.h"
#include "tests/util/status_matchers.h"
#include "worker/train/checkpoint.h"
#include "worker/train/param_hash.h"

namespace gradsync {
namespace {

using ::gradsync::testing::ExpectAllOk;
using ::gradsync::testing::IsOk;
using ::gradsync::testing::JobOutcome;
using ::gradsync::testing::LoadOrDie;
using ::gradsync::testing::RunJob;
using ::gradsync::testing::RunJobPerRank;
using ::gradsync::testing::SmallMlpConfig;
using ::gradsync::testing::StatusIs;
using ::testing::HasSubstr;

// Rank 0 writes checkpoints every N steps and after the last one; each
// holds exactly the parameters and optimizer state of that step.
TEST(TrainerCheckpointTest, EveryNStepsAndAtEnd_MatchTheRun) {
  TrainerConfig config = SmallMlpConfig();
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/ckpt-", getpid());
  config.checkpoint_dir = dir;
  config.checkpoint_every = 5;
  const TrainData data = LoadOrDie(config);
  const JobOutcome out = RunJob(config, data, 2);
  ExpectAllOk(out);
  for (int64_t steps : {5, 10, 12}) {
    absl::StatusOr<Checkpoint> c = ReadCheckpoint(CheckpointPath(dir, steps));
    ASSERT_THAT(c.status(), IsOk()) << steps;
    EXPECT_EQ(steps, c->steps_done);
    EXPECT_EQ(OptimizerKind::kMomentum, c->optimizer.kind);
    EXPECT_EQ(static_cast<uint64_t>(steps), c->optimizer.step);
    EXPECT_EQ(out.metrics[0][steps - 1].param_hash(),
              HashParameters(c->params));
  }
  EXPECT_FALSE(std::filesystem::exists(CheckpointPath(dir, 4)));
  // Rank 0 names each file in the metrics of its step; no other rank does.
  for (int r = 0; r < 2; ++r) {
    for (const StepMetrics& m : out.metrics[r]) {
      const int64_t done = m.step() + 1;
      const bool written = r == 0 && (done % 5 == 0 || done == 12);
      EXPECT_EQ(m.checkpoint(), written ? CheckpointPath(dir, done) : "")
          << "rank " << r << " step " << m.step();
    }
  }
  const absl::StatusOr<Checkpoint> last =
      ReadCheckpoint(CheckpointPath(dir, 12));
  ASSERT_THAT(last.status(), IsOk());
  EXPECT_EQ(out.final_params[0], last->params);
  std::filesystem::remove_all(dir);
}

// checkpoint_on_every_host: the lowest rank of each host writes a copy
// (on the ring from its own state, in PS mode fetched from the shards),
// identical to rank 0's. Each rank is given its own directory here, so
// that the test sees which ranks wrote on a single file system.
void ExpectACopyPerHost(bool ps) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/ckpt-hosts-", getpid(), ps);
  std::filesystem::remove_all(dir);
  std::vector<std::unique_ptr<PsServer>> servers;
  TrainerConfig base = SmallMlpConfig();
  base.checkpoint_every = 6;
  base.checkpoint_on_every_host = true;
  if (ps) {
    absl::StatusOr<std::unique_ptr<PsServer>> server =
        PsServer::Start("127.0.0.1:0");
    ASSERT_THAT(server, IsOk());
    base.ps.addresses = {(*server)->address()};
    servers.push_back(*std::move(server));
    base.ps.job_id = "hosts";
    base.ps.chunk_bytes = 512;
    base.ps.optimizer.set_name("momentum");
    base.ps.optimizer.set_learning_rate(base.optimizer.lr);
    base.ps.optimizer.set_momentum(base.optimizer.momentum);
    base.initial_path = SyncPath::kPs;
  }
  const std::vector<std::string> hosts = {"a", "a", "b", "c", "b"};
  std::vector<TrainerConfig> configs(hosts.size(), base);
  for (size_t r = 0; r < hosts.size(); ++r) {
    configs[r].host = hosts[r];
    configs[r].checkpoint_dir = absl::StrCat(dir, "/rank-", r);
  }
  const TrainData data = LoadOrDie(base);
  ExpectAllOk(RunJobPerRank(configs, data));
  for (int64_t steps : {6, 12}) {
    const absl::StatusOr<Checkpoint> want =
        ReadCheckpoint(CheckpointPath(configs[0].checkpoint_dir, steps));
    ASSERT_THAT(want.status(), IsOk()) << steps;
    for (size_t r = 1; r < hosts.size(); ++r) {
      const std::string path = CheckpointPath(configs[r].checkpoint_dir, steps);
      const bool writer = r == 2 || r == 3;  // the first of hosts b and c
      ASSERT_EQ(std::filesystem::exists(path), writer) << "rank " << r;
      if (!writer) continue;
      const absl::StatusOr<Checkpoint> copy = ReadCheckpoint(path);
      ASSERT_THAT(copy.status(), IsOk()) << "rank " << r;
      EXPECT_EQ(copy->steps_done, steps);
      EXPECT_EQ(copy->params, want->params) << "rank " << r;
      EXPECT_EQ(copy->optimizer.step, want->optimizer.step);
      EXPECT_EQ(copy->optimizer.buffers, want->optimizer.buffers);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(TrainerCheckpointTest, OnEveryHost_Ring_TheFirstRankOfEachHostWrites) {
  ExpectACopyPerHost(/*ps=*/false);
}

TEST(TrainerCheckpointTest, OnEveryHost_Ps_TheFirstRankOfEachHostWrites) {
  ExpectACopyPerHost(/*ps=*/true);
}

TEST(CheckpointTest, GarbageAndTruncatedFiles_DataLoss) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/bad-", getpid(), ".ckpt");
  { std::ofstream(path) << "not a checkpoint at all"; }
  EXPECT_THAT(ReadCheckpoint(path).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("bad magic")));
  const std::vector<float> params(100, 1.5f);
  ASSERT_THAT(WriteCheckpoint(path, 3, params, OptimizerState()), IsOk());
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 40);
  EXPECT_THAT(ReadCheckpoint(path).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("truncated")));
  EXPECT_THAT(ReadCheckpoint(path + ".missing").status(),
              StatusIs(absl::StatusCode::kNotFound));
  std::filesystem::remove(path);
}

// One flipped bit anywhere in the body fails the checksum; a file of the
// format before the checksum (GSCKPT01) still loads.
TEST(CheckpointTest, FlippedBit_DataLossAndVersion1StillLoads) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/flip-", getpid(), ".ckpt");
  OptimizerState adam;
  adam.kind = OptimizerKind::kAdam;
  adam.step = 7;
  adam.size = 64;
  adam.buffers = {std::vector<float>(64, 0.5f), std::vector<float>(64, 2.0f)};
  const std::vector<float> params(64, 1.5f);
  ASSERT_THAT(WriteCheckpoint(path, 7, params, adam), IsOk());
  ASSERT_THAT(ReadCheckpoint(path).status(), IsOk());
  const auto size =
      static_cast<std::streamoff>(std::filesystem::file_size(path));
  // In the parameters, in Adam's second buffer, in the optimizer step.
  for (const std::streamoff at :
       {std::streamoff{40}, size - 20, std::streamoff{8 + 8 + 8 + 256 + 1}}) {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(at);
    const char byte = static_cast<char>(file.get());
    file.seekp(at);
    file.put(static_cast<char>(byte ^ 0x10));
    file.close();
    EXPECT_THAT(ReadCheckpoint(path).status(),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr("checksum")))
        << "byte " << at;
    file.open(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(at);
    file.put(byte);
  }
  ASSERT_THAT(ReadCheckpoint(path).status(), IsOk());

  {
    std::ofstream v1(path, std::ios::binary | std::ios::trunc);
    auto put = [&v1](const auto& value) {
      v1.write(reinterpret_cast<const char*>(&value), sizeof(value));
    };
    v1.write("GSCKPT01", 8);
    put(int64_t{3});
    put(uint64_t{2});
    put(1.25f);
    put(-2.5f);
    put(static_cast<uint8_t>(OptimizerKind::kSgd));
    put(uint64_t{3});
    put(uint32_t{0});
  }
  const absl::StatusOr<Checkpoint> old = ReadCheckpoint(path);
  ASSERT_THAT(old.status(), IsOk());
  EXPECT_EQ(old->steps_done, 3);
  EXPECT_EQ(old->params, (std::vector<float>{1.25f, -2.5f}));
  std::filesystem::remove(path);
}

}  // namespace
// A resume path that is not a checkpoint file is refused at once, as a
// Status: a directory (it used to throw filesystem_error and take the
// daemon down), a FIFO (it used to block the rank forever) and a link.
TEST(CheckpointTest, DirectoryFifoAndLink_RefusedAtOnce) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/odd-", getpid());
  std::filesystem::create_directories(dir);
  EXPECT_THAT(ReadCheckpoint(dir).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(" is a directory, not a checkpoint file")));
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(ReadCheckpoint(fifo).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(" is a FIFO, not a checkpoint file")));
  const std::string real = dir + "/real.ckpt";
  ASSERT_THAT(
      WriteCheckpoint(real, 1, std::vector<float>(4, 1.0f), OptimizerState()),
      IsOk());
  const std::string link = dir + "/link.ckpt";
  std::filesystem::create_symlink(real, link);
  EXPECT_THAT(ReadCheckpoint(link).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is a symbolic link")));
  EXPECT_THAT(ReadCheckpoint(real).status(), IsOk());
  std::filesystem::remove_all(dir);
}

// Writing never goes through what already sits at the final name: a link
// planted there is replaced, and the file it points to is untouched. Only
// the checkpoint is left in the directory (no temporary file).
TEST(CheckpointTest, PlantedLinkIsReplacedNotFollowed_NoTemporaryLeft) {
  const std::string dir =
      absl::StrCat(::testing::TempDir(), "/plant-", getpid());
  std::filesystem::create_directories(dir);
  const std::string victim = dir + "/victim";
  { std::ofstream(victim) << "precious"; }
  const std::string path = dir + "/ckpt";
  std::filesystem::create_directories(path);
  const std::string target = path + "/step-2.ckpt";
  std::filesystem::create_symlink(victim, target);
  const std::vector<float> params(16, 2.5f);
  ASSERT_THAT(WriteCheckpoint(target, 2, params, OptimizerState()), IsOk());
  EXPECT_FALSE(std::filesystem::is_symlink(target));
  std::ifstream in(victim);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "precious");
  absl::StatusOr<Checkpoint> back = ReadCheckpoint(target);
  ASSERT_THAT(back.status(), IsOk());
  EXPECT_EQ(back->params, params);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(names, std::vector<std::string>{"step-2.ckpt"});
  // A directory where the file should go is an error, not a crash.
  const std::string taken = path + "/step-3.ckpt";
  std::filesystem::create_directories(taken + "/inside");
  EXPECT_THAT(WriteCheckpoint(taken, 3, params, OptimizerState()),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("rename")));
  std::filesystem::remove_all(dir);
}

}  // namespace gradsync
