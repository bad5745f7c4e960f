// TrainerConfigFromJobSpec, the synthetic dataset and the parameter hash.
#include "worker/train/train_config.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/job_spec.h"
#include "tests/util/status_matchers.h"
#include "worker/model/param_hash_terms.h"
#include "worker/train/param_hash.h"
#include "worker/train/train_data.h"

namespace gradsync {
namespace {

using ::gradsync::testing::IsOk;
using ::gradsync::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

JobSpec MinimalSpec() {
  JobSpec spec;
  spec.mutable_model()->set_kind("mlp");
  for (int64_t w : {784, 128, 10}) spec.mutable_model()->add_layer_sizes(w);
  spec.mutable_dataset()->set_name("fashion-mnist");
  spec.mutable_optimizer()->set_name("momentum");
  spec.mutable_optimizer()->set_learning_rate(0.05);
  spec.set_num_workers(4);
  spec.set_batch_size(256);
  spec.set_steps(100);
  spec.set_seed(7);
  return spec;
}

TEST(TrainConfigTest, FromJobSpec_FillsDefaults) {
  absl::StatusOr<TrainerConfig> c = TrainerConfigFromJobSpec(MinimalSpec());
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->model, "mlp");
  EXPECT_EQ(c->layer_sizes, (std::vector<size_t>{784, 128, 10}));
  EXPECT_EQ(c->dataset, DatasetKind::kFashionMnist);
  EXPECT_EQ(c->optimizer.kind, OptimizerKind::kMomentum);
  EXPECT_EQ(c->optimizer.momentum, 0.9);
  EXPECT_EQ(c->global_batch_size, 256u);
  EXPECT_EQ(c->steps, 100);
  EXPECT_EQ(c->seed, 7u);
  EXPECT_EQ(c->bucket_bytes, kDefaultAllReduceBucketBytes);
  EXPECT_EQ(c->grad_accumulation_steps, 1);
  EXPECT_EQ(c->blas_threads, 1);
  EXPECT_EQ(c->eval_every_steps, 0);
}

TEST(TrainConfigTest, FromJobSpec_CopiesEveryField) {
  JobSpec spec = MinimalSpec();
  spec.mutable_optimizer()->set_name("adam");
  spec.mutable_optimizer()->set_beta1(0.8);
  spec.mutable_optimizer()->set_weight_decay(0.01);
  spec.set_bucket_bytes(1 << 20);
  spec.set_grad_accumulation_steps(4);
  spec.set_eval_every_steps(10);
  spec.set_blas_threads(2);
  spec.mutable_dataset()->set_path("/data/fm");
  spec.mutable_checkpoint()->set_directory("/ckpt");
  spec.mutable_checkpoint()->set_every_steps(5);
  spec.mutable_checkpoint()->set_resume_from("/ckpt/step-5.ckpt");
  absl::StatusOr<TrainerConfig> c = TrainerConfigFromJobSpec(spec);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->optimizer.kind, OptimizerKind::kAdam);
  EXPECT_EQ(c->optimizer.beta1, 0.8);
  EXPECT_EQ(c->optimizer.beta2, 0.999);
  EXPECT_EQ(c->optimizer.weight_decay, 0.01);
  EXPECT_EQ(c->bucket_bytes, size_t{1} << 20);
  EXPECT_EQ(c->grad_accumulation_steps, 4);
  EXPECT_EQ(c->eval_every_steps, 10);
  EXPECT_EQ(c->blas_threads, 2);
  EXPECT_EQ(c->dataset_path, "/data/fm");
  EXPECT_EQ(c->checkpoint_dir, "/ckpt");
  EXPECT_EQ(c->checkpoint_every, 5);
  EXPECT_EQ(c->resume_from, "/ckpt/step-5.ckpt");
}

TEST(TrainConfigTest, FromJobSpec_Synthetic) {
  JobSpec spec = MinimalSpec();
  spec.mutable_model()->Clear();
  spec.mutable_model()->set_kind("synthetic");
  spec.mutable_model()->set_synthetic_floats(1000);
  spec.mutable_model()->set_synthetic_compute_ms(2.5);
  absl::StatusOr<TrainerConfig> c = TrainerConfigFromJobSpec(spec);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->model, "synthetic");
  EXPECT_EQ(c->synthetic_floats, 1000u);
  EXPECT_EQ(c->synthetic_compute, absl::Microseconds(2500));
}

TEST(TrainConfigTest, FromJobSpec_BadFields_NameTheField) {
  struct Case {
    void (*mutate)(JobSpec*);
    const char* field;
  };
  const Case cases[] = {
      {[](JobSpec* s) { s->mutable_model()->set_kind("cnn"); }, "model.kind"},
      {[](JobSpec* s) { s->mutable_model()->set_layer_sizes(1, 0); },
       "model.layerSizes[1]"},
      {[](JobSpec* s) { s->mutable_model()->clear_layer_sizes(); },
       "model.layerSizes"},
      {[](JobSpec* s) { s->mutable_dataset()->set_name("cifar"); },
       "dataset.name"},
      {[](JobSpec* s) { s->mutable_optimizer()->set_name("lbfgs"); },
       "optimizer.name"},
      // The torch PS path's "sum" would train a built-in model on its
      // gradients.
      {[](JobSpec* s) { s->mutable_optimizer()->set_name("sum"); },
       "optimizer.name"},
      {[](JobSpec* s) { s->set_batch_size(0); }, "batchSize"},
      {[](JobSpec* s) { s->set_steps(0); }, "steps"},
      {[](JobSpec* s) { s->set_bucket_bytes(-1); }, "bucketBytes"},
      {[](JobSpec* s) { s->set_bucket_bytes(3); }, "bucketBytes"},
      {[](JobSpec* s) { s->set_grad_accumulation_steps(-2); },
       "gradAccumulationSteps"},
      {[](JobSpec* s) { s->set_blas_threads(-1); }, "blasThreads"},
      {[](JobSpec* s) { s->mutable_optimizer()->set_learning_rate(-1); },
       "optimizer"},
  };
  for (const Case& c : cases) {
    JobSpec spec = MinimalSpec();
    c.mutate(&spec);
    EXPECT_THAT(
        TrainerConfigFromJobSpec(spec),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.field)))
        << c.field;
  }
}

TEST(TrainConfigTest, FromJobSpec_PsModeSyncAndSwitches) {
  JobSpec spec = MinimalSpec();
  spec.set_mode(SYNC_MODE_PS);
  spec.mutable_ps()->set_sync("ssp");
  spec.mutable_ps()->set_staleness(3);
  spec.mutable_ps()->set_chunk_bytes(65536);
  SwitchSpec* s = spec.add_switches();
  s->set_step(5);
  s->set_mode(SYNC_MODE_RING);
  s = spec.add_switches();
  s->set_step(9);
  s->set_mode(SYNC_MODE_PS);
  absl::StatusOr<TrainerConfig> config = TrainerConfigFromJobSpec(spec);
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->initial_path, SyncPath::kPs);
  EXPECT_EQ(config->ps.update, PsUpdate::kSsp);
  EXPECT_EQ(config->ps.staleness, 3);
  EXPECT_EQ(config->ps.chunk_bytes, 65536u);
  ASSERT_EQ(config->switches.size(), 2u);
  EXPECT_EQ(config->switches[0].step, 5);
  EXPECT_EQ(config->switches[0].path, SyncPath::kRing);
  EXPECT_EQ(config->switches[1].path, SyncPath::kPs);
}

TEST(TrainConfigTest, FromJobSpec_BadPsOrSwitches_NameTheField) {
  JobSpec spec = MinimalSpec();
  spec.mutable_ps()->set_sync("eventually");
  EXPECT_THAT(
      TrainerConfigFromJobSpec(spec),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ps.sync")));
  spec = MinimalSpec();
  SwitchSpec* first = spec.add_switches();
  first->set_step(4);
  first->set_mode(SYNC_MODE_PS);
  SwitchSpec* second = spec.add_switches();
  second->set_step(4);
  second->set_mode(SYNC_MODE_RING);
  EXPECT_THAT(TrainerConfigFromJobSpec(spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("switches[1].step")));
  spec = MinimalSpec();
  SwitchSpec* s = spec.add_switches();
  s->set_step(2);
  s->set_mode(static_cast<SyncMode>(7));
  EXPECT_THAT(TrainerConfigFromJobSpec(spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("switches[0].mode")));
}

// The worker checks a spec again on receipt with the coordinator's rules:
// what the coordinator would refuse, the worker refuses with the same
// status, message and all.
TEST(TrainConfigTest, FromJobSpec_WhatTheCoordinatorRefuses_RefusedAlike) {
  struct Case {
    const char* what;
    void (*mutate)(JobSpec*);
  };
  const Case cases[] = {
      // Partitions: 4 KiB .. 1 GiB, a multiple of 4.
      {"partition below 4 KiB",
       [](JobSpec* s) { s->mutable_ps()->set_partition_bytes(1000); }},
      {"partition not a multiple of 4",
       [](JobSpec* s) { s->mutable_ps()->set_partition_bytes(4098); }},
      {"partition above 1 GiB",
       [](JobSpec* s) {
         s->mutable_ps()->set_partition_bytes(int64_t{2} << 30);
       }},
      {"negative partition",
       [](JobSpec* s) { s->mutable_ps()->set_partition_bytes(-4096); }},
      {"chunk not a multiple of 4",
       [](JobSpec* s) { s->mutable_ps()->set_chunk_bytes(4097); }},
      {"no workers", [](JobSpec* s) { s->set_num_workers(0); }},
      {"batch below the ranks", [](JobSpec* s) { s->set_batch_size(2); }},
      {"fashion-mnist widths",
       [](JobSpec* s) { s->mutable_model()->set_layer_sizes(0, 100); }},
      {"staleness without ssp",
       [](JobSpec* s) { s->mutable_ps()->set_staleness(2); }},
      {"switch at step 0",
       [](JobSpec* s) {
         SwitchSpec* sw = s->add_switches();
         sw->set_step(0);
         sw->set_mode(SYNC_MODE_PS);
       }},
      {"too many restarts", [](JobSpec* s) { s->set_max_restarts(1000); }},
      {"a terminal escape in the name",
       [](JobSpec* s) { s->set_name("job\x1b[2J"); }},
      {"epochs beyond any step count",
       [](JobSpec* s) {
         s->set_steps(0);
         s->set_epochs(1e300);
       }},
      {"nccl for the synthetic model",
       [](JobSpec* s) {
         s->mutable_model()->Clear();
         s->mutable_model()->set_kind("synthetic");
         s->mutable_model()->set_synthetic_floats(1000);
         s->set_device("cuda");
         s->set_ring_backend("nccl");
       }},
  };
  for (const Case& c : cases) {
    JobSpec spec = MinimalSpec();
    c.mutate(&spec);
    const absl::Status coordinator = ValidateJobSpec(spec).status();
    EXPECT_EQ(coordinator.code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_EQ(TrainerConfigFromJobSpec(spec).status(), coordinator) << c.what;
  }
}

// The defaults the coordinator leaves at 0 in the spec are read the way
// it means them (jobspec/job_spec.h).
TEST(TrainConfigTest, FromJobSpec_PsDefaults_AreTheSpecsDefaults) {
  absl::StatusOr<TrainerConfig> c = TrainerConfigFromJobSpec(MinimalSpec());
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->ps.partition_bytes, size_t{4} << 20);
  EXPECT_EQ(c->ps.partition_bytes,
            static_cast<size_t>(kDefaultPsPartitionBytes));
  EXPECT_EQ(c->ps.chunk_bytes, kDefaultChunkBytes);
  EXPECT_EQ(c->bucket_bytes, static_cast<size_t>(kDefaultBucketBytes));
  JobSpec spec = MinimalSpec();
  spec.mutable_ps()->set_partition_bytes(65536);
  c = TrainerConfigFromJobSpec(spec);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(c->ps.partition_bytes, 65536u);
}

// Kinds that are valid specs but not the trainer's: the worker runs them
// with their own runners (worker/launch, the link probe).
TEST(TrainConfigTest, FromJobSpec_AnEntrypoint_IsNotTheTrainers) {
  JobSpec spec;
  spec.set_num_workers(1);
  spec.mutable_model()->set_kind("entrypoint");
  spec.mutable_model()->mutable_entrypoint()->add_argv("python3");
  spec.mutable_model()->mutable_entrypoint()->set_workdir("/tmp");
  ASSERT_THAT(ValidateJobSpec(spec), IsOk());
  EXPECT_THAT(
      TrainerConfigFromJobSpec(spec),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("model.kind"), HasSubstr("'entrypoint'"))));
}

TEST(TrainConfigTest, FromJobSpec_CudaOrCpuDevice_IsAccepted) {
  for (const char* device : {"", "cpu", "cuda"}) {
    JobSpec spec = MinimalSpec();
    spec.set_device(device);
    absl::StatusOr<TrainerConfig> c = TrainerConfigFromJobSpec(spec);
    ASSERT_THAT(c, IsOk()) << device;
    // The daemon places each rank (Assignment), not the spec.
    EXPECT_EQ(c->cuda_device, -1) << device;
    EXPECT_EQ(c->layer_sizes, (std::vector<size_t>{784, 128, 10})) << device;
  }
}

TEST(TrainConfigTest, FromJobSpec_RingBackend) {
  struct Case {
    const char* device;
    const char* backend;
    RingBackend want;
  };
  for (const Case& c : {Case{"cpu", "", RingBackend::kTcp},
                        Case{"cpu", "auto", RingBackend::kTcp},
                        Case{"cpu", "tcp", RingBackend::kTcp},
                        Case{"cuda", "", RingBackend::kNccl},
                        Case{"cuda", "auto", RingBackend::kNccl},
                        Case{"cuda", "nccl", RingBackend::kNccl},
                        Case{"cuda", "tcp", RingBackend::kTcp}}) {
    JobSpec spec = MinimalSpec();
    spec.set_device(c.device);
    spec.set_ring_backend(c.backend);
    absl::StatusOr<TrainerConfig> config = TrainerConfigFromJobSpec(spec);
    ASSERT_THAT(config, IsOk()) << c.device << " " << c.backend;
    EXPECT_EQ(config->ring_backend, c.want) << c.device << " " << c.backend;
  }
  // The synthetic model has no device kernels: auto keeps it on TCP, and
  // nccl is refused.
  JobSpec synthetic = MinimalSpec();
  synthetic.set_device("cuda");
  synthetic.mutable_model()->Clear();
  synthetic.mutable_model()->set_kind("synthetic");
  synthetic.mutable_model()->set_synthetic_floats(1000);
  absl::StatusOr<TrainerConfig> config = TrainerConfigFromJobSpec(synthetic);
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->ring_backend, RingBackend::kTcp);
  synthetic.set_ring_backend("nccl");
  EXPECT_THAT(
      TrainerConfigFromJobSpec(synthetic),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ringBackend")));
  JobSpec on_cpu = MinimalSpec();
  on_cpu.set_ring_backend("nccl");
  EXPECT_THAT(TrainerConfigFromJobSpec(on_cpu),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("ringBackend"), HasSubstr("cuda"))));
  JobSpec bogus = MinimalSpec();
  bogus.set_ring_backend("gloo");
  EXPECT_THAT(TrainerConfigFromJobSpec(bogus),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("ringBackend"), HasSubstr("gloo"))));
}

// JobSpec.ring_algorithm into the communicator's AllReduceAlgorithm: every
// name ParseAllReduceAlgorithm takes, empty as auto.
TEST(TrainConfigTest, FromJobSpec_RingAlgorithm) {
  struct Case {
    const char* name;
    AllReduceAlgorithm want;
  };
  for (const Case& c :
       {Case{"", AllReduceAlgorithm::kAuto},
        Case{"auto", AllReduceAlgorithm::kAuto},
        Case{"ring", AllReduceAlgorithm::kRing},
        Case{"hd", AllReduceAlgorithm::kHalvingDoubling},
        Case{"halving-doubling", AllReduceAlgorithm::kHalvingDoubling},
        Case{"hierarchical", AllReduceAlgorithm::kHierarchical},
        Case{"hier", AllReduceAlgorithm::kHierarchical}}) {
    JobSpec spec = MinimalSpec();
    spec.set_ring_algorithm(c.name);
    absl::StatusOr<TrainerConfig> config = TrainerConfigFromJobSpec(spec);
    ASSERT_THAT(config, IsOk()) << c.name;
    EXPECT_EQ(config->ring_algorithm, c.want) << c.name;
    EXPECT_EQ(config->ring_backend, RingBackend::kTcp) << c.name;
  }
  // On cuda the forced algorithm needs the TCP ring.
  JobSpec tcp_on_cuda = MinimalSpec();
  tcp_on_cuda.set_device("cuda");
  tcp_on_cuda.set_ring_backend("tcp");
  tcp_on_cuda.set_ring_algorithm("hierarchical");
  absl::StatusOr<TrainerConfig> config = TrainerConfigFromJobSpec(tcp_on_cuda);
  ASSERT_THAT(config, IsOk());
  EXPECT_EQ(config->ring_algorithm, AllReduceAlgorithm::kHierarchical);
  for (const char* backend : {"", "auto", "nccl"}) {
    JobSpec nccl = MinimalSpec();
    nccl.set_device("cuda");
    nccl.set_ring_backend(backend);
    nccl.set_ring_algorithm("ring");
    EXPECT_THAT(TrainerConfigFromJobSpec(nccl),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("ringAlgorithm"), HasSubstr("NCCL"))))
        << backend;
    nccl.set_ring_algorithm("auto");
    EXPECT_THAT(TrainerConfigFromJobSpec(nccl), IsOk()) << backend;
  }
  JobSpec bogus = MinimalSpec();
  bogus.set_ring_algorithm("butterfly");
  EXPECT_THAT(
      TrainerConfigFromJobSpec(bogus),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("ringAlgorithm"), HasSubstr("butterfly"))));
}

TEST(TrainConfigTest, FromJobSpec_UnknownDevice_NamesTheField) {
  JobSpec spec = MinimalSpec();
  spec.set_device("tpu");
  EXPECT_THAT(TrainerConfigFromJobSpec(spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("field device"), HasSubstr("'tpu'"),
                             HasSubstr("\"cuda\""))));
}

TEST(TrainConfigTest, Validate_CudaDevice) {
  absl::StatusOr<TrainerConfig> c = TrainerConfigFromJobSpec(MinimalSpec());
  ASSERT_THAT(c, IsOk());
  c->cuda_device = 0;
  EXPECT_THAT(ValidateTrainerConfig(*c), IsOk());
  c->cuda_device = -2;
  EXPECT_THAT(
      ValidateTrainerConfig(*c),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cuda_device")));
}

TEST(TrainDataTest, SyntheticDataset_IsDeterministicAndShaped) {
  absl::StatusOr<Dataset> a = MakeSyntheticDataset(100, 12, 5, 3, 0);
  absl::StatusOr<Dataset> b = MakeSyntheticDataset(100, 12, 5, 3, 0);
  absl::StatusOr<Dataset> test = MakeSyntheticDataset(100, 12, 5, 3, 1);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  ASSERT_THAT(test, IsOk());
  EXPECT_EQ(a->features, b->features);
  EXPECT_EQ(a->labels, b->labels);
  EXPECT_NE(a->features, test->features);
  EXPECT_EQ(a->features.size(), 1200u);
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(a->labels[i], int32_t(i % 5));
  EXPECT_THAT(MakeSyntheticDataset(1 << 20, 1 << 20, 10, 0, 0),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(TrainDataTest, LoadTrainData_ShapeMismatch_ReturnsInvalidArgument) {
  TrainerConfig config;
  config.layer_sizes = {100, 10};
  config.dataset = DatasetKind::kFashionMnist;
  config.dataset_path = "/nonexistent";
  EXPECT_THAT(LoadTrainData(config), StatusIs(absl::StatusCode::kNotFound));
  config.dataset = DatasetKind::kSynthetic;
  absl::StatusOr<TrainData> data = LoadTrainData(config);
  ASSERT_THAT(data, IsOk());
  EXPECT_EQ(data->train->feature_size, 100u);
  EXPECT_EQ(data->test->num_examples, kSyntheticTestExamples);
}

TEST(ParamHashTest, DetectsAnyChangeAndLength) {
  std::vector<float> p(1001, 0.5f);
  const uint64_t h = HashParameters(p);
  EXPECT_EQ(h, HashParameters(p));
  for (size_t i : {0, 1, 500, 999, 1000}) {
    std::vector<float> q = p;
    q[i] = std::nextafter(q[i], 1.0f);
    EXPECT_NE(HashParameters(q), h) << i;
  }
  std::vector<float> shorter(p.begin(), p.end() - 1);
  EXPECT_NE(HashParameters(shorter), h);
  EXPECT_NE(HashParameters({}), HashParameters(std::vector<float>{0.0f}));
  // Order and sign bits count: swapped elements, swapped words, -0.
  std::vector<float> ramp(64);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<float>(i);
  const uint64_t r = HashParameters(ramp);
  std::vector<float> swapped = ramp;
  std::swap(swapped[0], swapped[1]);
  EXPECT_NE(HashParameters(swapped), r);
  swapped = ramp;
  std::swap(swapped[2], swapped[40]);
  std::swap(swapped[3], swapped[41]);
  EXPECT_NE(HashParameters(swapped), r);
  EXPECT_NE(HashParameters({-0.0f}), HashParameters({0.0f}));
}

// The host loop (four lanes, running offsets) is the definition in
// param_hash_terms.h that the CUDA kernel computes term by term.
uint64_t HashByDefinition(const std::vector<float>& p) {
  auto bits = [&p](size_t i) -> uint32_t {
    if (i >= p.size()) return 0;
    uint32_t b;
    std::memcpy(&b, &p[i], sizeof(b));
    return b;
  };
  uint64_t sum = 0;
  for (size_t j = 0; 2 * j < p.size(); ++j) {
    sum += param_hash::Term(param_hash::Word(bits(2 * j), bits(2 * j + 1)), j);
  }
  return param_hash::Finish(sum, p.size());
}

TEST(ParamHashTest, EqualsTheDefinitionTheGpuComputes) {
  std::vector<float> p;
  for (size_t n = 0; n <= 41; ++n) {
    EXPECT_EQ(HashParameters(p), HashByDefinition(p)) << n;
    p.push_back(static_cast<float>(n) * -1.25f);
  }
  std::vector<float> large(100003);
  for (size_t i = 0; i < large.size(); ++i) {
    large[i] =
        std::ldexp(static_cast<float>(i % 977), -static_cast<int>(i % 150));
  }
  EXPECT_EQ(HashParameters(large), HashByDefinition(large));
}

}  // namespace
}  // namespace gradsync
