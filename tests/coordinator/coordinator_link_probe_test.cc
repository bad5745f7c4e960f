// A link probe at the coordinator (`gradsync links probe`): one rank per
// host however many workers a host has; each rank's measurements become
// the job's, checked (another rank's links, figures that are not links, a
// job that is not a probe: refused, nothing changed; a retried report:
// fine); the links and the link facts set from them, with their source,
// survive a coordinator restart. Parameter-server hosts without a worker
// are handed to the ranks to probe over their tensor planes, and the
// ranks' links with them are checked as theirs.
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/coordinator/state_store.h"
#include "tests/coordinator/coordinator_test_util.h"
#include "tests/util/status_matchers.h"

namespace gradsync {
namespace testing {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

JobSpec ProbeSpec(int hosts) {
  JobSpec spec;
  spec.set_name("links-probe");
  spec.mutable_model()->set_kind("link_probe");
  spec.set_num_workers(hosts);
  return spec;
}

LinkMeasurement Link(int from, int to, double goodput = 100e6) {
  LinkMeasurement m;
  m.set_from_rank(from);
  m.set_to_rank(to);
  m.set_goodput_bytes_per_s(goodput);
  m.set_stream_bytes(8 << 20);
  m.set_rtt_median_us(200);
  m.set_rtt_min_us(150);
  m.set_round_trips(20);
  return m;
}

// Rank `from`'s link with parameter server `ps` on host psbox, one way.
LinkMeasurement PsLink(int from, const std::string& ps, bool from_ps,
                       double goodput = 100e6) {
  LinkMeasurement m = Link(from, 0, goodput);
  m.clear_to_rank();
  m.set_ps_id(ps);
  m.set_ps_host("psbox");
  m.set_from_ps(from_ps);
  return m;
}

class CoordinatorLinkProbeTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    state_store_ = NewMemoryStateStore();
    CoordinatorTest::SetUp();
  }

  [[nodiscard]] absl::Status Succeed(const std::string& worker,
                                     const std::string& job, int rank,
                                     std::vector<LinkMeasurement> links) {
    ReportRankRequest request;
    request.set_worker_id(worker);
    request.set_credential(Credential(worker));
    request.set_job_id(job);
    request.set_rank(rank);
    request.set_state(RANK_STATE_SUCCEEDED);
    for (const LinkMeasurement& link : links) *request.add_links() = link;
    return service_->ReportRank(request);
  }

  // Three hosts, host a with two workers of two devices each.
  std::string ThreeHostProbe() {
    Register("a", 2);
    Register("a", 2);
    Register("b", 1);
    Register("c", 3);
    absl::StatusOr<std::string> job = Submit(ProbeSpec(3));
    EXPECT_THAT(job, IsOk());
    return job.ok() ? *job : "";
  }

  std::string WorkerOf(const std::string& job, int rank) {
    return Status(job).ranks(rank).worker_id();
  }
};

TEST_F(CoordinatorLinkProbeTest, OneRankPerHost_AndTheLinksBecomeTheJobs) {
  const std::string job = ThreeHostProbe();
  const JobStatus placed = Status(job);
  ASSERT_THAT(placed.ranks(), SizeIs(3));
  std::set<std::string> hosts;
  for (const RankPlacement& r : placed.ranks()) hosts.insert(r.host());
  EXPECT_EQ(hosts, (std::set<std::string>{"a", "b", "c"}));
  EXPECT_EQ(placed.spec().model().link_probe().pairs(), "ring");  // defaults
  ReportAll(job, RANK_STATE_READY);
  for (int r = 0; r < 3; ++r) {
    ASSERT_THAT(Succeed(WorkerOf(job, r), job, r, {Link(r, (r + 1) % 3)}),
                IsOk());
  }
  const JobStatus done = Status(job);
  EXPECT_EQ(done.state(), JOB_STATE_SUCCEEDED);
  ASSERT_THAT(done.links(), SizeIs(3));
  EXPECT_EQ(done.links(2).from_rank(), 2);
  EXPECT_EQ(done.links(2).to_rank(), 0);
}

TEST_F(CoordinatorLinkProbeTest, BadLinks_RefusedAndNothingChanges) {
  const std::string job = ThreeHostProbe();
  ReportAll(job, RANK_STATE_READY);
  const std::string w0 = WorkerOf(job, 0);
  const std::vector<std::vector<LinkMeasurement>> bad = {
      {Link(1, 2)},                          // another rank's link
      {Link(0, 0)},                          // to itself
      {Link(0, 3)},                          // outside the job
      {Link(0, 1, std::nan(""))},            // not a figure
      {Link(0, 1, -5)},                      // negative
      {Link(0, 1), Link(0, 2), Link(0, 1)},  // more than a rank has
  };
  for (const auto& links : bad) {
    EXPECT_THAT(Succeed(w0, job, 0, links),
                StatusIs(absl::StatusCode::kInvalidArgument));
  }
  JobStatus status = Status(job);
  EXPECT_EQ(status.state(), JOB_STATE_RUNNING);
  EXPECT_THAT(status.links(), SizeIs(0));

  // Links with a READY report are refused too.
  ReportRankRequest ready;
  ready.set_worker_id(w0);
  ready.set_credential(Credential(w0));
  ready.set_job_id(job);
  ready.set_rank(0);
  ready.set_state(RANK_STATE_READY);
  *ready.add_links() = Link(0, 1);
  EXPECT_THAT(service_->ReportRank(ready),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not its success")));

  // A retried report is fine; other links after it are not.
  ASSERT_THAT(Succeed(w0, job, 0, {Link(0, 1)}), IsOk());
  EXPECT_THAT(Succeed(w0, job, 0, {Link(0, 1)}), IsOk());
  EXPECT_THAT(
      Succeed(w0, job, 0, {Link(0, 1, 5e6)}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("other links")));
  EXPECT_THAT(Status(job).links(), SizeIs(1));
}

TEST_F(CoordinatorLinkProbeTest, LinksFromATrainingJob_Refused) {
  const std::string w = Register("a", 2);
  absl::StatusOr<std::string> job = Submit(ValidSpec(2));
  ASSERT_THAT(job, IsOk());
  ReportAll(*job, RANK_STATE_READY);
  EXPECT_THAT(Succeed(w, *job, 0, {Link(0, 1)}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not a link probe")));
  EXPECT_FALSE(Status(*job).ranks().empty());
}

TEST_F(CoordinatorLinkProbeTest, LinksAndMeasuredFactsSurviveARestart) {
  const std::string job = ThreeHostProbe();
  ReportAll(job, RANK_STATE_READY);
  for (int r = 0; r < 3; ++r) {
    ASSERT_THAT(Succeed(WorkerOf(job, r), job, r, {Link(r, (r + 1) % 3)}),
                IsOk());
  }
  SetLinkFactsRequest facts;
  facts.mutable_facts()->set_link_gbps(0.1);
  facts.mutable_facts()->set_link_alpha_us(100);
  facts.mutable_facts()->set_source("links probe " + job);
  ASSERT_THAT(service_->SetLinkFacts(facts), IsOk());

  SetLinkFactsRequest bad = facts;
  bad.mutable_facts()->set_source("two\nlines");
  EXPECT_THAT(service_->SetLinkFacts(bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("nothing changed")));

  service_.reset();
  Start();
  EXPECT_THAT(Status(job).links(), SizeIs(3));
  const ClusterLinkFacts kept = service_->ListWorkers().link_facts();
  EXPECT_DOUBLE_EQ(kept.link_gbps(), 0.1);
  EXPECT_DOUBLE_EQ(kept.link_alpha_us(), 100);
  EXPECT_EQ(kept.source(), "links probe " + job);
}

TEST_F(CoordinatorLinkProbeTest, ParameterServerHostsWithoutAWorker_Probed) {
  // psbox (two servers: one probed), a server on worker host b (its link
  // is b's), one with no tensor plane, one lost.
  const std::string ps1 = RegisterPs("10.0.0.9:29600", "psbox", 29601);
  RegisterPs("10.0.0.9:29700", "psbox", 29701);
  RegisterPs("10.0.0.2:29600", "b", 29601);
  RegisterPs("10.0.0.8:29600", "planeless", 0);
  const std::string job = ThreeHostProbe();
  std::vector<Assignment> assignments;
  const JobStatus placed = Status(job);
  for (const RankPlacement& r : placed.ranks()) {
    const HeartbeatResponse news = Poll(r.worker_id());
    for (const Assignment& a : news.assignments()) {
      if (a.job_id() == job) assignments.push_back(a);
    }
  }
  ASSERT_THAT(assignments, SizeIs(3));
  for (const Assignment& a : assignments) {
    ASSERT_THAT(a.probe_servers(), SizeIs(1));
    EXPECT_EQ(a.probe_servers(0).ps_id(), ps1);
    EXPECT_EQ(a.probe_servers(0).host(), "psbox");
    EXPECT_EQ(a.probe_servers(0).plane_address(), "10.0.0.9:29601");
    EXPECT_FALSE(a.ps_token().empty());
  }
  EXPECT_THAT(absl::StrJoin(events_, "\n"),
              HasSubstr("probing parameter server " + ps1 + " (host psbox)"));

  // Rank 0 measured both directions with psbox; a rank's links with a
  // server are its own, once each way, named.
  ReportAll(job, RANK_STATE_READY);
  const std::string w0 = WorkerOf(job, 0);
  const std::vector<std::vector<LinkMeasurement>> bad = {
      {PsLink(1, ps1, false)},                         // another rank's
      {PsLink(0, ps1, false), PsLink(0, ps1, false)},  // twice one way
      {[&] {
        LinkMeasurement m = PsLink(0, ps1, true);
        m.clear_ps_host();
        return m;
      }()},  // no host
      {[&] {
        LinkMeasurement m = Link(0, 1);
        m.set_from_ps(true);
        return m;
      }()},  // a rank link that says it came from a server
      {PsLink(0, std::string(100, 'p'), false)},  // an id far too long
  };
  for (const auto& links : bad) {
    EXPECT_THAT(Succeed(w0, job, 0, links),
                StatusIs(absl::StatusCode::kInvalidArgument));
  }
  EXPECT_THAT(Status(job).links(), SizeIs(0));
  ASSERT_THAT(Succeed(w0, job, 0,
                      {Link(0, 1), PsLink(0, ps1, false, 90e6),
                       PsLink(0, ps1, true, 80e6)}),
              IsOk());
  const JobStatus status = Status(job);
  ASSERT_THAT(status.links(), SizeIs(3));
  EXPECT_EQ(status.links(2).ps_id(), ps1);
  EXPECT_TRUE(status.links(2).from_ps());
  EXPECT_DOUBLE_EQ(status.links(2).goodput_bytes_per_s(), 80e6);
}

TEST_F(CoordinatorLinkProbeTest, TensorPortsAreListedAndSurviveARestart) {
  RegisterPs("10.0.0.9:29600", "psbox", 29601);
  EXPECT_EQ(service_->ListWorkers().parameter_servers(0).tensor_port(), 29601);
  RegisterParameterServerRequest bad;
  bad.set_host("psbox");
  bad.set_address("10.0.0.9:29800");
  bad.set_wire_version(kWireVersion);
  bad.set_tensor_port(70000);
  EXPECT_THAT(service_->RegisterParameterServer(bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensor port 70000")));
  EXPECT_THAT(service_->ListWorkers().parameter_servers(), SizeIs(1));
  service_.reset();
  Start();
  EXPECT_EQ(service_->ListWorkers().parameter_servers(0).tensor_port(), 29601);
}

}  // namespace
}  // namespace testing
}  // namespace gradsync
