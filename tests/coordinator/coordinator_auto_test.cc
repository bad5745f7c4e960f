// CoordinatorService: PS placement by host (PsSpec.placement) and `--mode
// auto` (JobSpec.auto_mode), which asks for runtime switches from the
// steps the ranks report, with the reasons in the job's status.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/coordinator/coordinator_service.h"
#include "tests/coordinator/coordinator_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

class AutoTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    CoordinatorConfig config;
    config.lease = kLease;
    config.heartbeat_interval = absl::Milliseconds(500);
    config.wait_slice = absl::Milliseconds(10);
    config.clock = [this] { return clock_.Now(); };
    // 100 MB/s links, no latency: the model's figures are easy to check.
    config.link_bandwidth_Bps = 100e6;
    absl::StatusOr<std::unique_ptr<CoordinatorService>> service =
        CoordinatorService::Create(config);
    ASSERT_THAT(service, IsOk());
    service_ = *std::move(service);
  }

  // Two worker hosts (one rank each), a server on each of them and one on
  // a host of its own.
  void TwoHostsThreeServers() {
    w1_ = Register("h1", 1);
    w2_ = Register("h2", 1);
    RegisterPs("10.0.0.11:1", "h1");
    RegisterPs("10.0.0.12:1", "h2");
    RegisterPs("10.0.0.20:1", "s1");
  }

  std::vector<std::string> ShardHosts(const std::string& job_id) {
    const JobStatus status = Status(job_id);
    std::vector<std::string> hosts;
    for (const std::string& address : status.ps_addresses()) {
      hosts.push_back(address == "10.0.0.11:1"   ? "h1"
                      : address == "10.0.0.12:1" ? "h2"
                                                 : "s1");
    }
    return hosts;
  }

  // Both ranks report `steps` steps from `first` in `mode`; the first one
  // says it acted on switch request `epoch` (0: none), as ranks do.
  void Steps(const std::string& job_id, int64_t first, int steps, SyncMode mode,
             double seconds, int64_t epoch = 0) {
    for (int64_t s = first; s < first + steps; ++s) {
      for (int rank : {0, 1}) {
        StepMetrics m = Step(rank, s);
        m.set_mode(mode);
        if (s == first) m.set_switch_epoch(epoch);
        m.set_step_s(seconds);
        m.set_sync_busy_s(seconds / 2);
        m.set_sync_bytes(8 << 20);
        ASSERT_THAT(ReportSteps(rank == 0 ? w1_ : w2_, job_id, {m}), IsOk());
      }
    }
  }

  // Two ranks in auto mode, 3 probe steps each way, 2 colocated shards.
  JobSpec AutoSpec() {
    JobSpec spec = ValidSpec(2);
    spec.mutable_auto_mode()->set_enabled(true);
    spec.mutable_auto_mode()->set_probe_steps(3);
    spec.mutable_ps()->set_shards(2);
    spec.mutable_ps()->set_placement("colocated");
    return spec;
  }

  std::string w1_, w2_;
};

TEST_F(AutoTest, SeparatePlacementUsesOnlyServersOffTheRanksHosts) {
  TwoHostsThreeServers();
  JobSpec spec = PsJobSpec(2, 2);
  spec.mutable_ps()->set_placement("separate");
  absl::StatusOr<std::string> job_or = Submit(spec);
  ASSERT_THAT(job_or, IsOk());
  const std::string job = *job_or;
  // One server qualifies: both shards go there.
  EXPECT_THAT(ShardHosts(job), ElementsAre("s1", "s1"));
}

TEST_F(AutoTest, ColocatedPlacementPutsShardKOnTheKthRanksHost) {
  TwoHostsThreeServers();
  JobSpec spec = PsJobSpec(2, 2);
  spec.mutable_ps()->set_placement("colocated");
  absl::StatusOr<std::string> job_or = Submit(spec);
  ASSERT_THAT(job_or, IsOk());
  const std::string job = *job_or;
  EXPECT_THAT(ShardHosts(job), ElementsAre("h1", "h2"));
}

TEST_F(AutoTest, UnsatisfiablePlacementFailsTheJobNamingTheHosts) {
  w1_ = Register("h1", 1);
  w2_ = Register("h2", 1);
  RegisterPs("10.0.0.20:1", "s1");
  JobSpec spec = PsJobSpec(2, 1);
  spec.mutable_ps()->set_placement("colocated");
  absl::StatusOr<std::string> job_or = Submit(spec);
  ASSERT_THAT(job_or, IsOk());
  const std::string job = *job_or;
  const JobStatus status = Status(job);
  EXPECT_EQ(status.state(), JOB_STATE_FAILED);
  EXPECT_THAT(status.message(),
              HasSubstr("no live server runs on the hosts of its ranks (h1, "
                        "h2)"));
  // The devices are free again: a job that can run does.
  absl::StatusOr<std::string> next_or = Submit(PsJobSpec(2, 1));
  ASSERT_THAT(next_or, IsOk());
  const std::string next = *next_or;
  EXPECT_EQ(Status(next).state(), JOB_STATE_RENDEZVOUS);
}

TEST_F(AutoTest, BadPlacementIsRejectedAtSubmit) {
  TwoHostsThreeServers();
  JobSpec spec = PsJobSpec(2, 1);
  spec.mutable_ps()->set_placement("nearby");
  EXPECT_THAT(Submit(spec), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("ps.placement")));
}

TEST_F(AutoTest, AutoJobGetsShardsMeasuresBothAndSettles) {
  TwoHostsThreeServers();
  absl::StatusOr<std::string> job_or = Submit(AutoSpec());
  ASSERT_THAT(job_or, IsOk());
  const std::string job = *job_or;
  EXPECT_THAT(Status(job).ps_addresses(), SizeIs(2));
  Poll(w1_);
  Poll(w2_);
  // Ring: 2 settle steps + 3 measured, then the policy asks for the PS.
  Steps(job, 0, 5, SYNC_MODE_RING, 0.100);
  JobStatus status = Status(job);
  EXPECT_EQ(status.switch_requests(), 1);
  ASSERT_THAT(status.mode_decisions(), SizeIs(1));
  EXPECT_EQ(status.mode_decisions(0).chosen(), SYNC_MODE_PS);
  // Each worker hears of it.
  HeartbeatResponse news = Poll(w1_);
  ASSERT_THAT(news.switches(), SizeIs(1));
  EXPECT_EQ(news.switches(0).epoch(), 1);
  // The PS is slower: back to the ring, with the model's view in the
  // reason. S = 8 MiB on 2 hosts: the ring moves 2(N-1)/N S = S; the two
  // colocated shards' 4 MiB slices are one 4 MiB partition each, so their
  // pull cannot overlap their push: 2 S.
  Steps(job, 5, 1, SYNC_MODE_RING, 0.100);  // the switch lands a step late
  Steps(job, 6, 5, SYNC_MODE_PS, 0.300, /*epoch=*/1);
  status = Status(job);
  EXPECT_EQ(status.switch_requests(), 2);
  ASSERT_THAT(status.mode_decisions(), SizeIs(2));
  const ModeDecision& decision = status.mode_decisions(1);
  EXPECT_EQ(decision.chosen(), SYNC_MODE_RING);
  EXPECT_TRUE(decision.switch_requested());
  EXPECT_DOUBLE_EQ(decision.ring_step_s(), 0.100);
  EXPECT_DOUBLE_EQ(decision.ps_step_s(), 0.300);
  EXPECT_NEAR(decision.ring_model_s(), (8 << 20) / 100e6, 1e-12);
  EXPECT_NEAR(decision.ps_model_s(), 2.0 * (8 << 20) / 100e6, 1e-12);
  EXPECT_THAT(decision.reason(), HasSubstr("ring is faster by x3.00"));
  // The ranks' switch records carry the reasons (rank 0's steps in the
  // new mode make them).
  Steps(job, 11, 3, SYNC_MODE_RING, 0.100, /*epoch=*/2);
  status = Status(job);
  ASSERT_THAT(status.switches(), SizeIs(2));
  EXPECT_THAT(status.switches(0).reason(), HasSubstr("trying ps"));
  EXPECT_THAT(status.switches(1).reason(), HasSubstr("switching back to ring"));
}

// `gradsync lab set-link` tells the coordinator of the new links: the
// model's next view uses them; facts that make no sense change nothing.
TEST_F(AutoTest, SetLinkFactsFeedsTheModelAndBadFactsChangeNothing) {
  EXPECT_DOUBLE_EQ(service_->ListWorkers().link_facts().link_gbps(), 0.1);
  EXPECT_DOUBLE_EQ(service_->ListWorkers().link_facts().link_alpha_us(), 0);
  for (const auto& [gbps, alpha_us] : std::vector<std::pair<double, double>>{
           {-1, 0}, {0.05, -3}, {std::nan(""), 0}, {0.05, HUGE_VAL}}) {
    SetLinkFactsRequest bad;
    bad.mutable_facts()->set_link_gbps(gbps);
    bad.mutable_facts()->set_link_alpha_us(alpha_us);
    EXPECT_THAT(service_->SetLinkFacts(bad),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("nothing changed")));
  }
  EXPECT_DOUBLE_EQ(service_->ListWorkers().link_facts().link_gbps(), 0.1);
  EXPECT_DOUBLE_EQ(service_->ListWorkers().link_facts().link_alpha_us(), 0);

  SetLinkFactsRequest request;
  request.mutable_facts()->set_link_gbps(0.05);
  request.mutable_facts()->set_link_alpha_us(20);
  absl::StatusOr<ClusterLinkFacts> now = service_->SetLinkFacts(request);
  ASSERT_THAT(now, IsOk());
  EXPECT_DOUBLE_EQ(now->link_gbps(), 0.05);
  EXPECT_DOUBLE_EQ(now->link_alpha_us(), 20);
  EXPECT_DOUBLE_EQ(service_->ListWorkers().link_facts().link_gbps(), 0.05);

  TwoHostsThreeServers();
  absl::StatusOr<std::string> job = Submit(AutoSpec());
  ASSERT_THAT(job, IsOk());
  Poll(w1_);
  Poll(w2_);
  // Ring, then PS (the decision with both measured carries the model).
  Steps(*job, 0, 5, SYNC_MODE_RING, 0.100);
  Steps(*job, 5, 1, SYNC_MODE_RING, 0.100);
  Steps(*job, 6, 5, SYNC_MODE_PS, 0.300, /*epoch=*/1);
  const JobStatus status = Status(*job);
  ASSERT_THAT(status.mode_decisions(), SizeIs(2));
  // The ring of N = 2 hosts: 2(N-1) (alpha + S/(N B)) = 2 alpha + S/B.
  EXPECT_NEAR(status.mode_decisions(1).ring_model_s(),
              2 * 20e-6 + (8 << 20) / 50e6, 1e-12);
}

// The model's PS time has its servers' CPU term for the spec's transport
// (study/alpha_beta/sync_model.h): on 100 GB/s links the link term of the
// two colocated shards is only 2 S / B = 0.168 ms, and each server moves
// 2 R S / K = 16 MiB through its transport: at gRPC's 3e-10 s/B 5.033 ms,
// at the plane's 1e-10 s/B (the default, "") 1.678 ms, and that binds.
class AutoCpuTest : public AutoTest {
 protected:
  double PsModelSeconds(const std::string& transport) {
    SetLinkFactsRequest request;
    request.mutable_facts()->set_link_gbps(100);
    EXPECT_THAT(service_->SetLinkFacts(request), IsOk());
    TwoHostsThreeServers();
    JobSpec spec = AutoSpec();
    spec.mutable_ps()->set_transport(transport);
    absl::StatusOr<std::string> job = Submit(spec);
    EXPECT_THAT(job, IsOk());
    if (!job.ok()) return -1;
    Poll(w1_);
    Poll(w2_);
    Steps(*job, 0, 5, SYNC_MODE_RING, 0.100);
    Steps(*job, 5, 1, SYNC_MODE_RING, 0.100);
    Steps(*job, 6, 5, SYNC_MODE_PS, 0.300, /*epoch=*/1);
    const JobStatus status = Status(*job);
    EXPECT_THAT(status.mode_decisions(), SizeIs(2));
    return status.mode_decisions_size() < 2
               ? -1
               : status.mode_decisions(1).ps_model_s();
  }
};

TEST_F(AutoCpuTest, GrpcPs_PredictedWithGrpcsCpu) {
  EXPECT_NEAR(PsModelSeconds("grpc"), 2.0 * 2 * (8 << 20) / 2 * 3e-10, 1e-12);
}

TEST_F(AutoCpuTest, PlanePs_PredictedWithThePlanesCpu) {
  EXPECT_NEAR(PsModelSeconds(""), 2.0 * 2 * (8 << 20) / 2 * 1e-10, 1e-12);
}

TEST_F(AutoTest, AutoWithScriptedSwitchesIsRejected) {
  TwoHostsThreeServers();
  JobSpec spec = ValidSpec(2);
  spec.mutable_auto_mode()->set_enabled(true);
  SwitchSpec* s = spec.add_switches();
  s->set_step(3);
  s->set_mode(SYNC_MODE_PS);
  EXPECT_THAT(Submit(spec), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("auto mode decides")));
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
