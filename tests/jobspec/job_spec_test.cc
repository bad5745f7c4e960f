// ValidateJobSpec: what the coordinator accepts as a
// job, the defaults it fills in, and the errors users see.
#include "jobspec/job_spec.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/synthetic/synthetic_spec.h"
#include "tests/jobspec/job_spec_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::gradsync::testing::ValidSpec;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(ValidateJobSpecTest, ValidSpec_FillsDefaults) {
  absl::StatusOr<JobSpec> spec = ValidateJobSpec(ValidSpec(2));
  ASSERT_THAT(spec, IsOk());
  EXPECT_EQ(spec->mode(), SYNC_MODE_RING);
  EXPECT_EQ(spec->bucket_bytes(), 25 << 20);
  EXPECT_EQ(spec->grad_accumulation_steps(), 1);
  EXPECT_EQ(spec->blas_threads(), 1);
  EXPECT_EQ(spec->device(), "cpu");
  EXPECT_EQ(spec->ring_backend(), "auto");
  EXPECT_EQ(spec->ring_algorithm(), "auto");
}

// Every name ParseAllReduceAlgorithm accepts goes, normalised to the
// canonical one the worker and `gradsync status` show.
TEST(ValidateJobSpecTest, RingAlgorithm_AcceptsEachNameNormalised) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "auto"},
      {"auto", "auto"},
      {"ring", "ring"},
      {"hd", "hd"},
      {"halving-doubling", "hd"},
      {"rhd", "hd"},
      {"hierarchical", "hierarchical"},
      {"hier", "hierarchical"},
      {"Ring", "ring"},
      {"HIERARCHICAL", "hierarchical"}};
  for (const auto& [name, want] : cases) {
    JobSpec in = ValidSpec(2);
    in.set_ring_algorithm(name);
    absl::StatusOr<JobSpec> spec = ValidateJobSpec(in);
    ASSERT_THAT(spec, IsOk()) << name;
    EXPECT_EQ(spec->ring_algorithm(), want) << name;
  }
}

// A forced algorithm is the TCP ring's: fine on cuda with ringBackend tcp,
// or auto on a model that does not run on NCCL (synthetic).
TEST(ValidateJobSpecTest, RingAlgorithm_ForcedOnTheTcpRingOfCuda_Accepted) {
  JobSpec in = ValidSpec(2, "cuda");
  in.set_ring_backend("tcp");
  in.set_ring_algorithm("hierarchical");
  EXPECT_THAT(ValidateJobSpec(in), IsOk());
  JobSpec synthetic = ValidSpec(2, "cuda");
  synthetic.mutable_model()->Clear();
  synthetic.mutable_model()->set_kind("synthetic");
  synthetic.mutable_model()->set_synthetic_floats(1000);
  synthetic.mutable_dataset()->set_name("synthetic");
  synthetic.set_ring_algorithm("ring");
  EXPECT_THAT(ValidateJobSpec(synthetic), IsOk());
}

// NCCL picks its own algorithm: forcing one there is refused (ringBackend
// nccl, or auto where auto means NCCL), naming both fields; "auto" stays
// fine with NCCL.
TEST(ValidateJobSpecTest, RingAlgorithm_ForcedWithNccl_InvalidArgument) {
  for (const char* backend : {"nccl", "auto", ""}) {
    for (const char* algo : {"ring", "hd", "hierarchical"}) {
      JobSpec in = ValidSpec(2, "cuda");
      in.set_ring_backend(backend);
      in.set_ring_algorithm(algo);
      const JobSpec before = in;
      EXPECT_THAT(
          ValidateJobSpec(in).status(),
          StatusIs(absl::StatusCode::kInvalidArgument,
                   AllOf(HasSubstr("field ringAlgorithm "), HasSubstr(algo),
                         HasSubstr("NCCL"), HasSubstr("ringBackend \"tcp\""))))
          << backend << " " << algo;
      EXPECT_EQ(in.SerializeAsString(), before.SerializeAsString());
    }
    JobSpec in = ValidSpec(2, "cuda");
    in.set_ring_backend(backend);
    in.set_ring_algorithm("auto");
    EXPECT_THAT(ValidateJobSpec(in), IsOk()) << backend;
  }
}

TEST(ValidateJobSpecTest, RingAlgorithm_Unknown_InvalidArgumentInputUnchanged) {
  JobSpec in = ValidSpec(2);
  in.set_ring_algorithm("butterfly");
  const JobSpec before = in;
  EXPECT_THAT(ValidateJobSpec(in).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("field ringAlgorithm "),
                             HasSubstr("'butterfly'"), HasSubstr("\"hd\""))));
  EXPECT_EQ(in.SerializeAsString(), before.SerializeAsString());
}

TEST(ValidateJobSpecTest, PsMode_WithPsSpecAndSwitches_Accepted) {
  JobSpec in = ValidSpec(2, "cpu");
  in.set_mode(SYNC_MODE_PS);
  in.mutable_ps()->set_shards(4);
  in.mutable_ps()->set_sync("ssp");
  in.mutable_ps()->set_staleness(2);
  in.mutable_ps()->set_chunk_bytes(1 << 20);
  SwitchSpec* to_ring = in.add_switches();
  to_ring->set_step(3);
  to_ring->set_mode(SYNC_MODE_RING);
  SwitchSpec* to_ps = in.add_switches();
  to_ps->set_step(7);
  to_ps->set_mode(SYNC_MODE_PS);
  absl::StatusOr<JobSpec> spec = ValidateJobSpec(in);
  ASSERT_THAT(spec, IsOk());
  EXPECT_EQ(spec->mode(), SYNC_MODE_PS);
  EXPECT_EQ(spec->ps().shards(), 4);
  EXPECT_EQ(spec->switches_size(), 2);
  EXPECT_TRUE(JobNeedsPs(*spec));
  for (const char* sync : {"", "sync", "async"}) {
    in.mutable_ps()->set_sync(sync);
    in.mutable_ps()->set_staleness(0);
    EXPECT_THAT(ValidateJobSpec(in), IsOk()) << sync;
  }
}

TEST(ValidateJobSpecTest, JobNeedsPs_ModeOrAScriptedSwitchToPs) {
  JobSpec spec = ValidSpec(1);
  EXPECT_FALSE(JobNeedsPs(spec));
  SwitchSpec* to_ring = spec.add_switches();
  to_ring->set_step(1);
  to_ring->set_mode(SYNC_MODE_RING);
  EXPECT_FALSE(JobNeedsPs(spec));
  to_ring->set_mode(SYNC_MODE_PS);
  EXPECT_TRUE(JobNeedsPs(spec));
}

TEST(ValidateJobSpecTest, BadPsSpecOrSwitches_InvalidArgumentNamingTheField) {
  struct Case {
    const char* field;
    std::function<void(JobSpec*)> change;
  };
  const std::vector<Case> cases = {
      {"ps.shards", [](JobSpec* s) { s->mutable_ps()->set_shards(-1); }},
      {"ps.shards", [](JobSpec* s) { s->mutable_ps()->set_shards(1025); }},
      {"ps.sync", [](JobSpec* s) { s->mutable_ps()->set_sync("bsp"); }},
      {"ps.staleness", [](JobSpec* s) { s->mutable_ps()->set_staleness(-1); }},
      {"ps.staleness",
       [](JobSpec* s) {
         s->mutable_ps()->set_sync("async");
         s->mutable_ps()->set_staleness(3);
       }},
      {"ps.staleness", [](JobSpec* s) { s->mutable_ps()->set_staleness(1); }},
      {"ps.chunkBytes",
       [](JobSpec* s) { s->mutable_ps()->set_chunk_bytes(2); }},
      {"ps.chunkBytes",
       [](JobSpec* s) { s->mutable_ps()->set_chunk_bytes(1026); }},
      {"ps.chunkBytes",
       [](JobSpec* s) { s->mutable_ps()->set_chunk_bytes((64 << 20) + 4); }},
      {"switches[0].step",
       [](JobSpec* s) { s->add_switches()->set_mode(SYNC_MODE_PS); }},
      {"switches[1].step",
       [](JobSpec* s) {
         for (int step : {5, 5}) {
           SwitchSpec* sw = s->add_switches();
           sw->set_step(step);
           sw->set_mode(SYNC_MODE_PS);
         }
       }},
      {"switches[0].mode", [](JobSpec* s) { s->add_switches()->set_step(4); }},
  };
  for (const Case& c : cases) {
    JobSpec in = ValidSpec(2);
    in.set_mode(SYNC_MODE_PS);
    c.change(&in);
    EXPECT_THAT(ValidateJobSpec(in).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrCat("field ", c.field, " "))))
        << c.field;
  }
  // A boundary that is fine: 64 MiB exactly, ssp with staleness 0.
  JobSpec in = ValidSpec(2);
  in.mutable_ps()->set_chunk_bytes(64 << 20);
  in.mutable_ps()->set_sync("ssp");
  EXPECT_THAT(ValidateJobSpec(in), IsOk());
}

TEST(ValidateJobSpecTest, Profile_FillsTheScaledGradientLength) {
  JobSpec in = ValidSpec(2);
  in.mutable_model()->set_kind("synthetic");
  in.mutable_model()->clear_layer_sizes();
  in.mutable_model()->set_profile("resnet50");
  in.mutable_model()->set_profile_scale(0.5);
  in.mutable_dataset()->set_name("synthetic");
  absl::StatusOr<JobSpec> spec = ValidateJobSpec(in);
  ASSERT_THAT(spec, IsOk());
  absl::StatusOr<int64_t> floats = ProfileFloats(in.model());
  ASSERT_THAT(floats, IsOk());
  EXPECT_EQ(spec->model().synthetic_floats(), *floats);
  EXPECT_NEAR(*floats / (25557032 * 0.5), 1.0, 0.001);
  // The same length given outright is accepted.
  in.mutable_model()->set_synthetic_floats(*floats);
  EXPECT_THAT(ValidateJobSpec(in), IsOk());
}

TEST(ValidateJobSpecTest, AutoMode_NeedsPsShards) {
  JobSpec in = ValidSpec(2);
  in.mutable_auto_mode()->set_enabled(true);
  EXPECT_TRUE(JobNeedsPs(in));
  EXPECT_THAT(ValidateJobSpec(in), IsOk());
}

TEST(ValidateJobSpecTest, ExplicitValues_AreKept) {
  JobSpec in = ValidSpec(2, "cuda");
  in.set_mode(SYNC_MODE_RING);
  in.set_bucket_bytes(1024);
  in.set_grad_accumulation_steps(2);
  in.set_blas_threads(4);
  absl::StatusOr<JobSpec> spec = ValidateJobSpec(in);
  ASSERT_THAT(spec, IsOk());
  EXPECT_EQ(spec->mode(), SYNC_MODE_RING);
  EXPECT_EQ(spec->bucket_bytes(), 1024);
  EXPECT_EQ(spec->grad_accumulation_steps(), 2);
  EXPECT_EQ(spec->blas_threads(), 4);
  EXPECT_EQ(spec->device(), "cuda");
}

TEST(ValidateJobSpecTest, OptimizerDefaults_AreFilledPerKind) {
  JobSpec in = ValidSpec(1);
  in.mutable_optimizer()->set_name("momentum");
  absl::StatusOr<JobSpec> momentum = ValidateJobSpec(in);
  ASSERT_THAT(momentum, IsOk());
  EXPECT_DOUBLE_EQ(momentum->optimizer().momentum(), 0.9);

  in.mutable_optimizer()->set_name("adam");
  absl::StatusOr<JobSpec> adam = ValidateJobSpec(in);
  ASSERT_THAT(adam, IsOk());
  EXPECT_DOUBLE_EQ(adam->optimizer().beta1(), 0.9);
  EXPECT_DOUBLE_EQ(adam->optimizer().beta2(), 0.999);
  EXPECT_DOUBLE_EQ(adam->optimizer().epsilon(), 1e-8);
}

// A synthetic model reads no dataset, so it has no epochs to count: the
// coordinator used to accept such a job, which every worker then refused.
TEST(ValidateJobSpecTest, SyntheticModelAndEpochs_RefusedAtSubmit) {
  JobSpec in = ValidSpec(4);
  in.mutable_model()->Clear();
  in.mutable_model()->set_kind("synthetic");
  in.mutable_model()->set_synthetic_floats(1 << 20);
  in.mutable_model()->set_synthetic_compute_ms(5);
  in.mutable_dataset()->set_name("synthetic");
  in.set_steps(0);
  in.set_epochs(1.5);
  EXPECT_THAT(ValidateJobSpec(in),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("epochs"), HasSubstr("set steps"))));
  in.set_steps(10);
  EXPECT_THAT(ValidateJobSpec(in), IsOk());
}

// epochs = 1e300 used to pass here and fail on the worker; so did a batch
// larger than the dataset, which gives no step.
TEST(ValidateJobSpecTest, EpochsBeyondAnyStepCountOrBelowOneStep_Refused) {
  JobSpec in = ValidSpec(4);
  in.set_steps(0);
  in.set_epochs(1e300);
  EXPECT_THAT(ValidateJobSpec(in),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("epochs"), HasSubstr("at most"))));
  in.set_epochs(1);
  in.set_batch_size(100000);  // more than the 60000 examples: no full batch
  EXPECT_THAT(ValidateJobSpec(in), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("not one step")));
  in.set_batch_size(64);
  in.set_epochs(2);
  EXPECT_THAT(ValidateJobSpec(in), IsOk());
}

// Names are shown in tables: control characters (a terminal escape) and
// megabyte names are refused.
TEST(ValidateJobSpecTest, NameWithControlCharactersOrTooLong_Refused) {
  JobSpec in = ValidSpec(4);
  in.set_name("evil\x1b[2Jname");
  EXPECT_THAT(ValidateJobSpec(in),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("U+001B (a control character) at byte 4")));
  in.set_name(std::string("nul\0inside", 10));
  EXPECT_THAT(ValidateJobSpec(in), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("U+0000 (a control "
                                                      "character) at byte 3")));
  // C1 controls (NEL, CSI), bidirectional overrides, and bytes that are no
  // UTF-8 drive or reorder a terminal just as well.
  in.set_name(
      "a\xc2\x85"
      "b");
  EXPECT_THAT(ValidateJobSpec(in),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("U+0085 (a C1 control character) at byte 1")));
  in.set_name(
      "x\xc2\x9b"
      "2J");
  EXPECT_THAT(ValidateJobSpec(in), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("U+009B")));
  in.set_name("invoice\xe2\x80\xaegpj.exe");
  EXPECT_THAT(
      ValidateJobSpec(in),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("U+202E (a bidirectional control) at byte 7")));
  in.set_name("bad \xff byte");
  EXPECT_THAT(ValidateJobSpec(in),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not valid UTF-8 at byte 4 (0xff)")));
  in.set_name(std::string(1 << 20, 'x'));
  EXPECT_THAT(ValidateJobSpec(in),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("1048576 bytes long; at most 256")));
  in.set_name("fmnist-\xc3\xa9t\xc3\xa9 run 2");  // UTF-8 is fine
  EXPECT_THAT(ValidateJobSpec(in), IsOk());
}

struct BadSpecCase {
  std::string name;
  std::function<void(JobSpec*)> mutate;
  std::string field;  // what the message must name
};

class BadJobSpecTest : public ::testing::TestWithParam<BadSpecCase> {};

TEST_P(BadJobSpecTest, ValidateJobSpec_BadField_ReturnsInvalidArgument) {
  JobSpec spec = ValidSpec(2);
  GetParam().mutate(&spec);
  EXPECT_THAT(ValidateJobSpec(spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(GetParam().field),
                             HasSubstr("job spec field"))));
}

INSTANTIATE_TEST_SUITE_P(
    AllFields, BadJobSpecTest,
    ::testing::Values(
        BadSpecCase{"UnknownModel",
                    [](JobSpec* s) { s->mutable_model()->set_kind("resnet"); },
                    "model.kind"},
        BadSpecCase{
            "ProfileOnAnMlp",
            [](JobSpec* s) { s->mutable_model()->set_profile("resnet50"); },
            "model.profile"},
        BadSpecCase{"UnknownProfile",
                    [](JobSpec* s) {
                      s->mutable_model()->set_kind("synthetic");
                      s->mutable_model()->set_profile("gpt5");
                    },
                    "model.profile"},
        BadSpecCase{"ProfileScaleAboveOne",
                    [](JobSpec* s) {
                      s->mutable_model()->set_kind("synthetic");
                      s->mutable_model()->set_profile("resnet50");
                      s->mutable_model()->set_profile_scale(2);
                    },
                    "model.profile"},
        BadSpecCase{"ProfileAndOtherFloats",
                    [](JobSpec* s) {
                      s->mutable_model()->set_kind("synthetic");
                      s->mutable_model()->set_profile("resnet50");
                      s->mutable_model()->set_synthetic_floats(5);
                    },
                    "model.syntheticFloats"},
        BadSpecCase{
            "UnknownPlacement",
            [](JobSpec* s) { s->mutable_ps()->set_placement("nearby"); },
            "ps.placement"},
        BadSpecCase{
            "TinyPartitions",
            [](JobSpec* s) { s->mutable_ps()->set_partition_bytes(100); },
            "ps.partitionBytes"},
        BadSpecCase{"AutoWithScriptedSwitches",
                    [](JobSpec* s) {
                      s->mutable_auto_mode()->set_enabled(true);
                      SwitchSpec* w = s->add_switches();
                      w->set_step(2);
                      w->set_mode(SYNC_MODE_PS);
                    },
                    "autoMode"},
        BadSpecCase{"AutoWithAsyncPs",
                    [](JobSpec* s) {
                      s->mutable_auto_mode()->set_enabled(true);
                      s->mutable_ps()->set_sync("async");
                    },
                    "autoMode"},
        BadSpecCase{"OneLayer",
                    [](JobSpec* s) {
                      s->mutable_model()->mutable_layer_sizes()->Truncate(1);
                    },
                    "model.layerSizes"},
        BadSpecCase{
            "ZeroWidth",
            [](JobSpec* s) { s->mutable_model()->set_layer_sizes(1, 0); },
            "model.layerSizes[1]"},
        BadSpecCase{"HugeModel",
                    [](JobSpec* s) {
                      s->mutable_model()->clear_layer_sizes();
                      for (int64_t w : {784, 1 << 20, 1 << 20, 10}) {
                        s->mutable_model()->add_layer_sizes(w);
                      }
                    },
                    "parameters"},
        BadSpecCase{
            "WrongInputWidthForFashionMnist",
            [](JobSpec* s) { s->mutable_model()->set_layer_sizes(0, 100); },
            "784"},
        BadSpecCase{"SyntheticWithoutFloats",
                    [](JobSpec* s) {
                      s->mutable_model()->Clear();
                      s->mutable_model()->set_kind("synthetic");
                    },
                    "model.syntheticFloats"},
        BadSpecCase{
            "UnknownDataset",
            [](JobSpec* s) { s->mutable_dataset()->set_name("imagenet"); },
            "dataset.name"},
        BadSpecCase{"ZeroWorkers", [](JobSpec* s) { s->set_num_workers(0); },
                    "numWorkers"},
        BadSpecCase{"BatchSmallerThanWorkers",
                    [](JobSpec* s) { s->set_batch_size(1); }, "batchSize"},
        BadSpecCase{"NoStepsNorEpochs", [](JobSpec* s) { s->set_steps(0); },
                    "steps"},
        BadSpecCase{"NegativeSteps", [](JobSpec* s) { s->set_steps(-1); },
                    "steps"},
        BadSpecCase{"NegativeEpochs", [](JobSpec* s) { s->set_epochs(-1); },
                    "epochs"},
        BadSpecCase{
            "UnknownOptimizer",
            [](JobSpec* s) { s->mutable_optimizer()->set_name("lbfgs"); },
            "optimizer.name"},
        BadSpecCase{
            "ZeroLearningRate",
            [](JobSpec* s) { s->mutable_optimizer()->set_learning_rate(0); },
            "optimizer.learningRate"},
        BadSpecCase{"MomentumOutOfRange",
                    [](JobSpec* s) {
                      s->mutable_optimizer()->set_name("momentum");
                      s->mutable_optimizer()->set_momentum(1.5);
                    },
                    "optimizer"},
        BadSpecCase{"UnknownMode",
                    [](JobSpec* s) { s->set_mode(static_cast<SyncMode>(7)); },
                    "mode"},
        BadSpecCase{"UnknownDevice", [](JobSpec* s) { s->set_device("tpu"); },
                    "device"},
        BadSpecCase{"UnknownRingBackend",
                    [](JobSpec* s) { s->set_ring_backend("gloo"); },
                    "ringBackend"},
        BadSpecCase{"UnknownRingAlgorithm",
                    [](JobSpec* s) { s->set_ring_algorithm("tree"); },
                    "ringAlgorithm"},
        BadSpecCase{"RingAlgorithmWithNccl",
                    [](JobSpec* s) {
                      s->set_device("cuda");
                      s->set_ring_backend("nccl");
                      s->set_ring_algorithm("ring");
                    },
                    "ringAlgorithm"},
        BadSpecCase{"NcclOnCpu",
                    [](JobSpec* s) {
                      s->set_device("cpu");
                      s->set_ring_backend("nccl");
                    },
                    "ringBackend"},
        BadSpecCase{"NegativeBucket",
                    [](JobSpec* s) { s->set_bucket_bytes(-1); }, "bucketBytes"},
        // A bucket holds at least one float (the worker's rule too).
        BadSpecCase{"BucketBelowOneFloat",
                    [](JobSpec* s) { s->set_bucket_bytes(3); }, "bucketBytes"},
        // The synthetic model has no device kernels for NCCL to reduce.
        BadSpecCase{"NcclForTheSyntheticModel",
                    [](JobSpec* s) {
                      s->mutable_model()->Clear();
                      s->mutable_model()->set_kind("synthetic");
                      s->mutable_model()->set_synthetic_floats(1000);
                      s->set_device("cuda");
                      s->set_ring_backend("nccl");
                    },
                    "ringBackend"},
        BadSpecCase{"NegativeAccumulation",
                    [](JobSpec* s) { s->set_grad_accumulation_steps(-2); },
                    "gradAccumulationSteps"},
        BadSpecCase{"BatchSmallerThanMicroBatches",
                    [](JobSpec* s) {
                      s->set_batch_size(4);
                      s->set_grad_accumulation_steps(4);
                    },
                    "batchSize"},
        BadSpecCase{"NegativeBlasThreads",
                    [](JobSpec* s) { s->set_blas_threads(-1); }, "blasThreads"},
        BadSpecCase{"NegativeEval",
                    [](JobSpec* s) { s->set_eval_every_steps(-1); },
                    "evalEverySteps"},
        BadSpecCase{
            "NegativeCheckpointEvery",
            [](JobSpec* s) { s->mutable_checkpoint()->set_every_steps(-1); },
            "checkpoint.everySteps"},
        BadSpecCase{"CopyOnEveryHostWithoutDirectory",
                    [](JobSpec* s) {
                      s->mutable_checkpoint()->set_on_every_host(true);
                    },
                    "checkpoint.onEveryHost"}),
    [](const ::testing::TestParamInfo<BadSpecCase>& info) {
      return info.param.name;
    });

}  // namespace
}  // namespace gradsync
