// The NCCL ring path of the trainer (worker/train/device_ring.h): GPU ranks
// whose parameters, gradients and optimizer state stay on the device, with
// buckets all-reduced by NCCL as backward produces them.
//
// The yardstick is the host-staged path of the same GPU ranks (the TCP
// ring, ring_backend kTcp): the device computes the same gradients either
// way, a sum over one or two ranks is the same single fp32 addition on
// both transports, and the CUDA optimizer is bitwise the CPU one
// (cuda_optimizer.h). So the two paths must agree BITWISE, step by step:
//   - one GPU rank (world size 1 still builds the communicator from a
//     unique id published through the store, and destroys it);
//   - two ranks on two GPUs (skipped with fewer);
//   - 16-bit gradients (bf16, fp16) on one and two GPUs;
//   - a run that switches NCCL ring -> PS -> NCCL ring, which moves the
//     parameters and the optimizer state device -> host -> shards -> host
//     -> device, and rebuilds the NCCL communicator.
// Every case skips on hosts without a GPU.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collectives/memory_store.h"
#include "collectives/nccl/nccl_communicator.h"
#include "collectives/prefix_store.h"
#include "gtest/gtest.h"
#include "server/ps/daemon/ps_server.h"
#include "tests/collectives/rank_group.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/train/trainer_test_util.h"
#include "worker/model/blas.h"
#include "worker/model/cuda/cuda_status.h"
#include "worker/train/trainer.h"

namespace gradsync {
namespace {

using ::gradsync::testing::JobOutcome;
using ::gradsync::testing::RankGroup;
using ::gradsync::testing::SmallPipelineOptions;

constexpr int64_t kSteps = 9;

// The trainer tests' small MLP (tests/train/trainer_test_util.h) on Adam,
// with a global batch that splits evenly over 1, 2 and 3 ranks.
TrainerConfig NcclMlpConfig() {
  TrainerConfig c = ::gradsync::testing::SmallMlpConfig();
  c.optimizer.kind = OptimizerKind::kAdam;
  c.optimizer.lr = 0.01;
  c.global_batch_size = 48;
  c.steps = kSteps;
  c.seed = 11;
  c.comm_timeout = absl::Seconds(30);
  return c;
}

class NcclTrainerTest : public gpu_test::GpuTest {
 protected:
  void SetUp() override {
    gpu_test::GpuTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(SetBlasThreads(1).ok());
  }

  // Rank r on cuda:r, through `backend`.
  JobOutcome Run(TrainerConfig config, RingBackend backend, int world) {
    config.ring_backend = backend;
    absl::StatusOr<TrainData> data = LoadTrainData(config);
    EXPECT_TRUE(data.ok()) << data.status();
    RankGroup group(world, SmallPipelineOptions());
    MemoryStore nccl_store;
    JobOutcome out;
    out.metrics.resize(world);
    out.results.resize(world);
    out.status = group.Run([&](int r) -> absl::Status {
      TrainerConfig mine = config;
      mine.cuda_device = r;
      DeviceCommFactory comms;
      if (backend == RingBackend::kNccl) {
        comms = [&nccl_store, r, world](int64_t step, absl::Time deadline)
            -> absl::StatusOr<std::unique_ptr<Communicator>> {
          PrefixStore store(&nccl_store, absl::StrCat("step-", step, "/"));
          NcclOptions options;
          options.job_id = absl::StrCat("nccl-trainer-test/", step);
          options.device = r;
          options.connect_timeout = deadline - absl::Now();
          options.timeout = absl::Seconds(30);
          return CreateNcclCommunicator(&store, r, world, options);
        };
      }
      absl::StatusOr<std::unique_ptr<Trainer>> trainer = Trainer::Create(
          mine, *data, &group.comm(r),
          [&out, r](const StepMetrics& m) { out.metrics[r].push_back(m); },
          nullptr, SwitchSource(), std::move(comms));
      if (!trainer.ok()) return trainer.status();
      absl::StatusOr<TrainResult> result = (*trainer)->Run();
      if (!result.ok()) return result.status();
      out.results[r] = *result;
      return absl::OkStatus();
    });
    return out;
  }

  // The NCCL run against the host-staged run: every step's hash and loss.
  void ExpectSameRun(const TrainerConfig& config, int world) {
    const JobOutcome nccl = Run(config, RingBackend::kNccl, world);
    const JobOutcome tcp = Run(config, RingBackend::kTcp, world);
    for (int r = 0; r < world; ++r) {
      ASSERT_TRUE(nccl.status[r].ok())
          << "rank " << r << ": " << nccl.status[r];
      ASSERT_TRUE(tcp.status[r].ok()) << "rank " << r << ": " << tcp.status[r];
      ASSERT_EQ(nccl.metrics[r].size(), static_cast<size_t>(kSteps));
      ASSERT_EQ(tcp.metrics[r].size(), static_cast<size_t>(kSteps));
      for (int64_t s = 0; s < kSteps; ++s) {
        const StepMetrics& a = nccl.metrics[r][s];
        const StepMetrics& b = tcp.metrics[r][s];
        EXPECT_EQ(a.param_hash(), b.param_hash())
            << "rank " << r << " step " << s
            << ": the NCCL path's parameters differ from the TCP path's";
        EXPECT_EQ(a.loss(), b.loss()) << "rank " << r << " step " << s;
        EXPECT_EQ(a.mode(), b.mode()) << "rank " << r << " step " << s;
        EXPECT_EQ(a.param_hash(), nccl.metrics[0][s].param_hash())
            << "rank " << r << " left lockstep at step " << s;
      }
      EXPECT_EQ(nccl.results[r].test_accuracy, tcp.results[r].test_accuracy);
      EXPECT_EQ(nccl.results[r].param_hash, tcp.results[r].param_hash);
    }
    EXPECT_LT(nccl.metrics[0].back().loss(), nccl.metrics[0].front().loss());
  }
};

TEST_F(NcclTrainerTest, OneGpu_MatchesTheHostStagedPathBitwise) {
  ExpectSameRun(NcclMlpConfig(), /*world=*/1);
}

TEST_F(NcclTrainerTest, WithAccumulation_MatchesTheHostStagedPathBitwise) {
  TrainerConfig config = NcclMlpConfig();
  config.grad_accumulation_steps = 3;
  ExpectSameRun(config, /*world=*/1);
}

TEST_F(NcclTrainerTest, TwoGpus_MatchTheHostStagedPathBitwise) {
  if (gpu::VisibleCudaDeviceCount() < 2) {
    GTEST_SKIP() << "needs two CUDA devices (NCCL puts one rank per device)";
  }
  ExpectSameRun(NcclMlpConfig(), /*world=*/2);
}

// 16-bit gradients (gradDtype bf16|fp16): the device rounds each bucket as
// half.h does on the host (the fp16 clamp included), NCCL sums bf16/fp16,
// and the device widens back. One rank: the same rounding on both paths.
// Two ranks: one sum per element, correctly rounded on both (NCCL's
// __hadd; the host's fp32 add then one rounding, exact enough that the
// double rounding is harmless: 24 >= 2 * 11 + 2 bits).
TEST_F(NcclTrainerTest, SixteenBit_OneGpu_MatchesTheHostStagedPathBitwise) {
  for (DataType type : {DataType::kBFloat16, DataType::kFloat16}) {
    SCOPED_TRACE(DataTypeName(type));
    TrainerConfig config = NcclMlpConfig();
    config.grad_dtype = type;
    ExpectSameRun(config, /*world=*/1);
  }
}

TEST_F(NcclTrainerTest, SixteenBit_TwoGpus_MatchTheHostStagedPathBitwise) {
  if (gpu::VisibleCudaDeviceCount() < 2) {
    GTEST_SKIP() << "needs two CUDA devices (NCCL puts one rank per device)";
  }
  for (DataType type : {DataType::kBFloat16, DataType::kFloat16}) {
    SCOPED_TRACE(DataTypeName(type));
    TrainerConfig config = NcclMlpConfig();
    config.grad_dtype = type;
    ExpectSameRun(config, /*world=*/2);
  }
}

TEST_F(NcclTrainerTest, SwitchToPsAndBack_MovesDeviceStateExactly) {
  absl::StatusOr<std::unique_ptr<PsServer>> server =
      PsServer::Start("127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  TrainerConfig config = NcclMlpConfig();
  config.ps.addresses = {(*server)->address()};
  config.ps.optimizer.set_name("adam");
  config.ps.optimizer.set_learning_rate(config.optimizer.lr);
  config.switches = {{3, SyncPath::kPs}, {6, SyncPath::kRing}};
  // Each run needs its own shards: a job id per run.
  TrainerConfig nccl_config = config;
  nccl_config.ps.job_id = "nccl-switch";
  TrainerConfig tcp_config = config;
  tcp_config.ps.job_id = "tcp-switch";
  const JobOutcome nccl = Run(nccl_config, RingBackend::kNccl, 1);
  const JobOutcome tcp = Run(tcp_config, RingBackend::kTcp, 1);
  ASSERT_TRUE(nccl.status[0].ok()) << nccl.status[0];
  ASSERT_TRUE(tcp.status[0].ok()) << tcp.status[0];
  ASSERT_EQ(nccl.metrics[0].size(), static_cast<size_t>(kSteps));
  for (int64_t s = 0; s < kSteps; ++s) {
    EXPECT_EQ(nccl.metrics[0][s].mode(),
              s >= 3 && s < 6 ? SYNC_MODE_PS : SYNC_MODE_RING)
        << "step " << s;
    EXPECT_EQ(nccl.metrics[0][s].param_hash(), tcp.metrics[0][s].param_hash())
        << "step " << s;
  }
}

}  // namespace
}  // namespace gradsync
