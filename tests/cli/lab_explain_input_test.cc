// What `gradsync explain` hands the study's explanation
// (ExplainInputOf, cli/lab/explain_command.h): the coordinator's answers
// read field by field, the servers' hosts found by address, the spec's
// partition size, and a synthetic job's model profile for the simulator.
#include <string>
#include <utility>

#include "cli/lab/explain_command.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "study/model_profiles.h"

namespace gradsync {
namespace lab {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using ::testing::SizeIs;

TEST(ExplainInputTest, ReadsTheCoordinatorsAnswers) {
  JobStatus job;
  job.set_job_id("job-7");
  for (int r = 0; r < 2; ++r) {
    RankPlacement* p = job.add_ranks();
    p->set_rank(r);
    p->set_host(r == 0 ? "h1" : "h2");
  }
  job.add_ps_addresses("10.0.0.9:1");
  job.add_ps_addresses("10.0.0.8:1");  // a server the cluster does not list
  job.mutable_spec()->mutable_ps()->set_partition_bytes(65536);
  ListWorkersResponse cluster;
  ParameterServerInfo* ps = cluster.add_parameter_servers();
  ps->set_address("10.0.0.9:1");
  ps->set_host("s1");
  GetMetricsResponse metrics;
  StepMetrics* m = metrics.add_metrics();
  m->set_rank(1);
  m->set_step(3);
  m->set_mode(SYNC_MODE_PS);
  m->set_step_s(0.5);
  m->set_compute_s(0.1);
  m->set_comm_s(0.2);
  m->set_idle_s(0.05);
  m->set_sync_busy_s(0.3);
  m->set_sync_bytes(4096);
  m->set_switch_s(0.25);
  m->set_ps_transport("plane");
  m = metrics.add_metrics();
  m->set_mode(SYNC_MODE_UNSPECIFIED);
  ps::ShardStats* shard = metrics.add_shards();
  shard->set_shard(1);
  shard->set_bytes_in(10);
  shard->set_bytes_out(20);

  const study::ExplainInput in = ExplainInputOf(job, metrics, cluster);
  EXPECT_EQ(in.job_id, "job-7");
  EXPECT_THAT(in.rank_hosts, ElementsAre("h1", "h2"));
  EXPECT_THAT(in.shard_servers,
              ElementsAre(Pair("10.0.0.9:1", "s1"), Pair("10.0.0.8:1", "")));
  EXPECT_EQ(in.ps_partition_bytes, 65536);
  ASSERT_THAT(in.steps, SizeIs(2));
  const study::ExplainStep& step = in.steps[0];
  EXPECT_EQ(step.rank, 1);
  EXPECT_EQ(step.step, 3);
  EXPECT_EQ(step.mode, SyncPath::kPs);
  EXPECT_DOUBLE_EQ(step.step_s, 0.5);
  EXPECT_DOUBLE_EQ(step.compute_s, 0.1);
  EXPECT_DOUBLE_EQ(step.comm_s, 0.2);
  EXPECT_DOUBLE_EQ(step.idle_s, 0.05);
  EXPECT_DOUBLE_EQ(step.sync_busy_s, 0.3);
  EXPECT_EQ(step.sync_bytes, 4096);
  EXPECT_DOUBLE_EQ(step.switch_s, 0.25);
  EXPECT_EQ(step.ps_transport, "plane");
  EXPECT_EQ(in.steps[1].mode, SyncPath::kRing);  // unspecified: the ring
  ASSERT_THAT(in.shards, SizeIs(1));
  EXPECT_EQ(in.shards[0].shard, 1);
  EXPECT_EQ(in.shards[0].bytes_in, 10);
  EXPECT_EQ(in.shards[0].bytes_out, 20);
  // An mlp: no layer profile for the simulator.
  EXPECT_TRUE(in.profile.empty());
  EXPECT_EQ(in.profile_scale, 1);
}

// A synthetic job with a model profile: the profile's tensors, its scale,
// its emulated compute and the bucket size, for explain's simulator.
TEST(ExplainInputTest, ReadsTheSyntheticModelsProfile) {
  JobStatus job;
  job.mutable_spec()->set_bucket_bytes(4 << 20);
  ModelSpec* model = job.mutable_spec()->mutable_model();
  model->set_kind("synthetic");
  model->set_profile("resnet50");
  model->set_profile_scale(0.25);
  model->set_synthetic_compute_ms(120);
  const study::ExplainInput in =
      ExplainInputOf(job, GetMetricsResponse(), ListWorkersResponse());
  EXPECT_EQ(in.model_kind, "synthetic");
  EXPECT_EQ(in.profile_name, "resnet50");
  absl::StatusOr<std::vector<ProfileTensor>> want = ModelProfile("resnet50");
  ASSERT_TRUE(want.ok());
  EXPECT_THAT(in.profile, SizeIs(want->size()));
  EXPECT_EQ(in.profile_scale, 0.25);
  EXPECT_DOUBLE_EQ(in.compute_s, 0.12);
  EXPECT_EQ(in.bucket_bytes, 4 << 20);
  // An unknown profile leaves none (explain then keeps the formula).
  model->set_profile("alexnet");
  EXPECT_TRUE(ExplainInputOf(job, GetMetricsResponse(), ListWorkersResponse())
                  .profile.empty());
}

}  // namespace
}  // namespace lab
}  // namespace gradsync
