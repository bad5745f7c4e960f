// The control commands' flag parser and the JobSpec built from flags, a
// JSON file, or both (flags override the file; bad JSON is an error naming
// the file).
#include "cli/control/job_spec_builder.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "common/flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/job_spec_json.h"

namespace gradsync {
namespace cli {
namespace control {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Parses `args` with the job-spec flags and builds the spec.
[[nodiscard]] absl::StatusOr<JobSpec> Build(
    const std::vector<std::string>& args) {
  JobSpecFlags spec_flags;
  std::vector<FlagSpec> flags;
  AddJobSpecFlags(&spec_flags, &flags);
  absl::StatusOr<std::vector<std::string>> positional = ParseFlags(args, flags);
  if (!positional.ok()) return positional.status();
  return BuildJobSpec(spec_flags);
}

// A file in the test's temporary directory, removed at the end.
class TempFile {
 public:
  explicit TempFile(const std::string& contents) {
    const char* dir = std::getenv("TEST_TMPDIR");
    path_ = std::string(dir != nullptr ? dir : "/tmp") + "/gradsync_spec_" +
            std::to_string(getpid()) + "_" + std::to_string(counter_++) +
            ".json";
    std::ofstream(path_) << contents;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

TEST(JobSpecBuilderTest, NoFlags_GivesTheDefaults) {
  absl::StatusOr<JobSpec> spec = Build({});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model().kind(), "mlp");
  EXPECT_THAT(spec->model().layer_sizes(), ElementsAre(784, 256, 256, 10));
  EXPECT_EQ(spec->dataset().name(), "fashion-mnist");
  EXPECT_EQ(spec->num_workers(), 1);
  EXPECT_EQ(spec->mode(), SYNC_MODE_RING);
  EXPECT_EQ(spec->optimizer().name(), "sgd");
  EXPECT_DOUBLE_EQ(spec->optimizer().learning_rate(), 0.1);
  EXPECT_EQ(spec->batch_size(), 256);
  EXPECT_EQ(spec->steps(), 100);
  EXPECT_EQ(spec->name(), "mlp-fashion-mnist");
}

TEST(JobSpecBuilderTest, EveryFlagSetsItsField) {
  absl::StatusOr<JobSpec> spec = Build({"--name",
                                        "run1",
                                        "--workers",
                                        "4",
                                        "--model",
                                        "mlp",
                                        "--layers",
                                        "784,128,10",
                                        "--dataset",
                                        "fashion-mnist",
                                        "--optimizer",
                                        "momentum",
                                        "--lr",
                                        "0.05",
                                        "--momentum",
                                        "0.8",
                                        "--batch-size",
                                        "512",
                                        "--steps",
                                        "300",
                                        "--seed",
                                        "7",
                                        "--bucket-mb",
                                        "1.5",
                                        "--accumulate",
                                        "2",
                                        "--eval-every",
                                        "50",
                                        "--blas-threads",
                                        "2",
                                        "--mode",
                                        "ps",
                                        "--checkpoint-dir",
                                        "ckpt",
                                        "--checkpoint-every",
                                        "25",
                                        "--checkpoint-on-every-host",
                                        "--resume-from",
                                        "ckpt/step-100.ckpt",
                                        "--max-restarts",
                                        "3"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "run1");
  EXPECT_EQ(spec->num_workers(), 4);
  EXPECT_THAT(spec->model().layer_sizes(), ElementsAre(784, 128, 10));
  EXPECT_EQ(spec->optimizer().name(), "momentum");
  EXPECT_DOUBLE_EQ(spec->optimizer().learning_rate(), 0.05);
  EXPECT_DOUBLE_EQ(spec->optimizer().momentum(), 0.8);
  EXPECT_EQ(spec->batch_size(), 512);
  EXPECT_EQ(spec->steps(), 300);
  EXPECT_EQ(spec->seed(), 7u);
  EXPECT_EQ(spec->bucket_bytes(), 1572864);
  EXPECT_EQ(spec->grad_accumulation_steps(), 2);
  EXPECT_EQ(spec->eval_every_steps(), 50);
  EXPECT_EQ(spec->blas_threads(), 2);
  EXPECT_EQ(spec->mode(), SYNC_MODE_PS);
  EXPECT_EQ(spec->checkpoint().directory(), "ckpt");
  EXPECT_EQ(spec->checkpoint().every_steps(), 25);
  EXPECT_TRUE(spec->checkpoint().on_every_host());
  EXPECT_EQ(spec->checkpoint().resume_from(), "ckpt/step-100.ckpt");
  EXPECT_EQ(spec->max_restarts(), 3);
}

TEST(JobSpecBuilderTest, SyntheticModel_DefaultsToSyntheticData) {
  absl::StatusOr<JobSpec> spec =
      Build({"--model", "synthetic", "--synthetic-floats", "25M",
             "--compute-ms", "20", "--optimizer", "adam"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model().kind(), "synthetic");
  EXPECT_EQ(spec->model().synthetic_floats(), 25000000);
  EXPECT_DOUBLE_EQ(spec->model().synthetic_compute_ms(), 20);
  EXPECT_TRUE(spec->model().layer_sizes().empty());
  EXPECT_EQ(spec->dataset().name(), "synthetic");
  EXPECT_DOUBLE_EQ(spec->optimizer().learning_rate(), 0.001);
}

TEST(JobSpecBuilderTest, BadFlagValues_AreInvalidArgument) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--model", "cnn"},
                                             {"--mode", "allreduce"},
                                             {"--workers", "0"},
                                             {"--layers", "784,,10"},
                                             {"--lr", "0"},
                                             {"--optimizer", "lamb"},
                                             {"--bucket-mb", "-1"},
                                             {"--seed", "-3"},
                                             {"--resume-from", ""},
                                             {"--ring-algo", "tree"}}) {
    absl::StatusOr<JobSpec> spec = Build(args);
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument)
        << args[0] << " " << args[1];
    EXPECT_THAT(std::string(spec.status().message()), HasSubstr(args[0]));
  }
}

TEST(JobSpecBuilderTest, PsFlagsAndScriptedSwitches) {
  absl::StatusOr<JobSpec> spec =
      Build({"--mode", "ps", "--ps-shards", "3", "--sync", "ssp", "--staleness",
             "2", "--ps-chunk-bytes", "256K", "--switch-at", "200:ps",
             "--switch-at", "100:ring"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->mode(), SYNC_MODE_PS);
  EXPECT_EQ(spec->ps().shards(), 3);
  EXPECT_EQ(spec->ps().sync(), "ssp");
  EXPECT_EQ(spec->ps().staleness(), 2);
  EXPECT_EQ(spec->ps().chunk_bytes(), 256 * 1024);
  // Kept in step order whatever the order given.
  ASSERT_EQ(spec->switches_size(), 2);
  EXPECT_EQ(spec->switches(0).step(), 100);
  EXPECT_EQ(spec->switches(0).mode(), SYNC_MODE_RING);
  EXPECT_EQ(spec->switches(1).step(), 200);
  EXPECT_EQ(spec->switches(1).mode(), SYNC_MODE_PS);
  spec = Build({"--ps-chunk-bytes", "1048576", "--ps-shards", "0"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->ps().chunk_bytes(), 1 << 20);
  EXPECT_EQ(spec->ps().shards(), 0);
}

TEST(JobSpecBuilderTest, LabFlags_AutoModePlacementPartitionsProfile) {
  absl::StatusOr<JobSpec> spec =
      Build({"--mode", "auto", "--auto-probe-steps", "4",
             "--auto-recheck-every", "50", "--ps-placement", "colocated",
             "--ps-partition-bytes", "512K", "--model-profile", "vgg16",
             "--profile-scale", "0.01", "--compute-ms", "30"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->mode(), SYNC_MODE_RING);  // auto starts on the ring
  EXPECT_TRUE(spec->auto_mode().enabled());
  EXPECT_EQ(spec->auto_mode().probe_steps(), 4);
  EXPECT_EQ(spec->auto_mode().recheck_every(), 50);
  EXPECT_EQ(spec->ps().placement(), "colocated");
  EXPECT_EQ(spec->ps().partition_bytes(), 512 * 1024);
  EXPECT_EQ(spec->model().kind(), "synthetic");
  EXPECT_EQ(spec->model().profile(), "vgg16");
  EXPECT_DOUBLE_EQ(spec->model().profile_scale(), 0.01);
  EXPECT_EQ(spec->dataset().name(), "synthetic");
  // --auto-recheck-every 0 means never (-1 in the spec).
  spec = Build({"--mode", "auto", "--auto-recheck-every", "0"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->auto_mode().recheck_every(), -1);
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--ps-placement", "nearby"},
        std::vector<std::string>{"--model-profile", "gpt5"},
        std::vector<std::string>{"--profile-scale", "2"},
        std::vector<std::string>{"--ps-partition-bytes", "1K"}}) {
    absl::StatusOr<JobSpec> refused = Build(bad);
    ASSERT_FALSE(refused.ok()) << bad[0];
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(refused.status().message()), HasSubstr(bad[0]));
  }
}

TEST(JobSpecBuilderTest, SwitchAtFlags_ReplaceTheFilesSwitches) {
  TempFile file(R"({"switches": [{"step": 5, "mode": "SYNC_MODE_PS"},
    {"step": 9, "mode": "SYNC_MODE_RING"}], "ps": {"shards": 2}})");
  absl::StatusOr<JobSpec> spec = Build({"--file", file.path()});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->switches_size(), 2);
  spec =
      Build({"--file", file.path(), "--switch-at", "7:ps", "--sync", "async"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->switches_size(), 1);
  EXPECT_EQ(spec->switches(0).step(), 7);
  EXPECT_EQ(spec->ps().shards(), 2);  // the file's, beside the flag's sync
  EXPECT_EQ(spec->ps().sync(), "async");
}

TEST(JobSpecBuilderTest, BadPsFlagValues_AreInvalidArgumentNamingTheFlag) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{
           {"--ps-shards", "-1"},
           {"--sync", "bsp"},
           {"--staleness", "-2"},
           {"--ps-chunk-bytes", "1T"},
           {"--ps-chunk-bytes", "0"},
           {"--switch-at", "100"},
           {"--switch-at", "0:ps"},
           {"--switch-at", "x:ps"},
           {"--switch-at", "100:allreduce"},
           {"--switch-at", "100:ps", "--switch-at", "100:ring"}}) {
    absl::StatusOr<JobSpec> spec = Build(args);
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument)
        << args[0] << " " << args[1];
    EXPECT_THAT(std::string(spec.status().message()), HasSubstr(args[0]));
  }
}

// --ring-algo takes the names `gradsync bench --algo` takes and writes the
// canonical one; the spec file's ringAlgorithm key reaches the same
// field, and a flag overrides it.
TEST(JobSpecBuilderTest, RingAlgoFlag_NormalisedAndRoundTripsThroughAFile) {
  for (const auto& [name, want] :
       std::vector<std::pair<std::string, std::string>>{
           {"auto", "auto"},
           {"ring", "ring"},
           {"hd", "hd"},
           {"halving-doubling", "hd"},
           {"hierarchical", "hierarchical"},
           {"HIER", "hierarchical"}}) {
    absl::StatusOr<JobSpec> spec =
        Build({"--ring-backend", "tcp", "--ring-algo", name});
    ASSERT_TRUE(spec.ok()) << name << ": " << spec.status();
    EXPECT_EQ(spec->ring_algorithm(), want) << name;
    EXPECT_EQ(spec->ring_backend(), "tcp");
    // What `gradsync submit` sends, written back as a spec file.
    const std::string json = JobSpecToJson(*spec);
    TempFile file(json);
    absl::StatusOr<JobSpec> again = Build({"--file", file.path()});
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->ring_algorithm(), want) << json;
  }
  EXPECT_EQ(Build({})->ring_algorithm(), "");  // the coordinator's "auto"
  TempFile file(R"({"ringBackend": "tcp", "ringAlgorithm": "hd"})");
  absl::StatusOr<JobSpec> from_file = Build({"--file", file.path()});
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  EXPECT_EQ(from_file->ring_algorithm(), "hd");
  absl::StatusOr<JobSpec> overridden =
      Build({"--ring-algo", "ring", "--file", file.path()});
  ASSERT_TRUE(overridden.ok()) << overridden.status();
  EXPECT_EQ(overridden->ring_algorithm(), "ring");
  EXPECT_THAT(std::string(Build({"--ring-algo", "tree"}).status().message()),
              HasSubstr("auto, ring, hd, hierarchical"));
}

TEST(JobSpecBuilderTest, FromFile_ReadsProtobufJson) {
  TempFile file(R"({"name": "fmnist", "numWorkers": 3,
    "mode": "SYNC_MODE_PS",
    "model": {"kind": "mlp", "layerSizes": [784, 64, 10]},
    "optimizer": {"name": "adam", "learningRate": 0.002},
    "batchSize": 96, "epochs": 2, "seed": 5})");
  absl::StatusOr<JobSpec> spec = Build({"--file", file.path()});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name(), "fmnist");
  EXPECT_EQ(spec->num_workers(), 3);
  EXPECT_EQ(spec->mode(), SYNC_MODE_PS);
  EXPECT_THAT(spec->model().layer_sizes(), ElementsAre(784, 64, 10));
  EXPECT_DOUBLE_EQ(spec->optimizer().learning_rate(), 0.002);
  EXPECT_EQ(spec->batch_size(), 96);
  EXPECT_EQ(spec->steps(), 0);  // epochs given: no default steps
  EXPECT_DOUBLE_EQ(spec->epochs(), 2);
  EXPECT_EQ(spec->dataset().name(), "fashion-mnist");  // a default
}

TEST(JobSpecBuilderTest, FlagsOverrideTheFile_WhereverTheyAppear) {
  TempFile file(R"({"numWorkers": 3, "mode": "SYNC_MODE_PS",
    "model": {"kind": "mlp", "layerSizes": [784, 64, 10]},
    "optimizer": {"name": "momentum", "learningRate": 0.5, "momentum": 0.9},
    "steps": 40, "seed": 5})");
  absl::StatusOr<JobSpec> spec =
      Build({"--workers", "2", "--file", file.path(), "--layers", "784,10",
             "--mode", "ring", "--momentum", "0", "--seed", "0"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->num_workers(), 2);
  EXPECT_EQ(spec->mode(), SYNC_MODE_RING);
  // Repeated fields are replaced, not appended.
  EXPECT_THAT(spec->model().layer_sizes(), ElementsAre(784, 10));
  // Zero values given as flags override too.
  EXPECT_DOUBLE_EQ(spec->optimizer().momentum(), 0);
  EXPECT_EQ(spec->seed(), 0u);
  // What no flag named stays as the file has it.
  EXPECT_EQ(spec->optimizer().name(), "momentum");
  EXPECT_DOUBLE_EQ(spec->optimizer().learning_rate(), 0.5);
  EXPECT_EQ(spec->steps(), 40);
}

TEST(JobSpecBuilderTest, EpochsFlag_ClearsTheFilesSteps) {
  TempFile file(R"({"steps": 40})");
  absl::StatusOr<JobSpec> spec =
      Build({"--file", file.path(), "--epochs", "1.5"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->steps(), 0);
  EXPECT_DOUBLE_EQ(spec->epochs(), 1.5);
  spec = Build({"--file", file.path(), "--epochs", "2", "--steps", "9"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->steps(), 9);
}

TEST(JobSpecBuilderTest, MalformedJson_NamesTheFileAndTheReason) {
  TempFile file(R"({"numWorkers": 2,, })");
  absl::StatusOr<JobSpec> spec = Build({"--file", file.path()});
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr(file.path() + ": not a valid job spec ("));
}

TEST(JobSpecBuilderTest, UnknownField_IsAnError) {
  TempFile file(R"({"numWorker": 2})");
  absl::StatusOr<JobSpec> spec = Build({"--file", file.path()});
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("numWorker"));
}

TEST(JobSpecBuilderTest, MissingFile_NamesIt) {
  absl::StatusOr<JobSpec> spec =
      Build({"--file", "/nonexistent/gradsync/job.json"});
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("cannot read /nonexistent/gradsync/job.json"));
}

TEST(JobSpecBuilderTest, DefaultBatch_CoversEveryRankAndMicroBatch) {
  absl::StatusOr<JobSpec> spec =
      Build({"--workers", "200", "--accumulate", "2"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->batch_size(), 400);
}

TEST(EntrypointFlagsTest, EntrypointWorkdirAndDeadline) {
  absl::StatusOr<JobSpec> spec =
      Build({"--entrypoint", "python3 'my train.py' --lr 0.1", "--workdir",
             "/srv/run", "--workers", "4", "--step-deadline-s", "30"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model().kind(), "entrypoint");
  EXPECT_THAT(spec->model().entrypoint().argv(),
              ElementsAre("python3", "my train.py", "--lr", "0.1"));
  EXPECT_EQ(spec->model().entrypoint().workdir(), "/srv/run");
  EXPECT_EQ(spec->model().entrypoint().step_deadline_ms(), 30000);
  EXPECT_EQ(spec->num_workers(), 4);
  EXPECT_EQ(spec->name(), "python3 my train.py");
  // A built-in model's defaults stay out of it.
  EXPECT_TRUE(spec->dataset().name().empty());
  EXPECT_TRUE(spec->model().layer_sizes().empty());
  EXPECT_EQ(spec->batch_size(), 0);
  EXPECT_TRUE(spec->optimizer().name().empty());
}

TEST(EntrypointFlagsTest, WorkdirDefaultsToTheCurrentOneAndIsMadeAbsolute) {
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  absl::StatusOr<JobSpec> spec = Build({"--entrypoint", "python3 t.py"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model().entrypoint().workdir(), cwd);
  spec = Build({"--entrypoint", "python3 t.py", "--workdir", "sub"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model().entrypoint().workdir(), std::string(cwd) + "/sub");
  spec = Build({"--entrypoint", "python3 t.py", "--step-deadline-s", "-1"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->model().entrypoint().step_deadline_ms(), -1);
}

// The CLI refuses what the coordinator would: a name with a bidi override.
TEST(NameFlagTest, UnsafeCodePoint_RefusedBeforeSubmit) {
  absl::StatusOr<JobSpec> spec = Build({"--name",
                                        "run\xe2\x80\xae"
                                        "cba"});
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(),
              HasSubstr("--name holds U+202E (a bidirectional control)"));
}

TEST(EntrypointFlagsTest, BadCommandLine_InvalidArgument) {
  EXPECT_THAT(Build({"--entrypoint", "python3 'oops"}).status().message(),
              HasSubstr("unterminated"));
}

}  // namespace
}  // namespace control
}  // namespace cli
}  // namespace gradsync
