// The coordinator's placement as pure functions, without a service: the
// device order ranks take (DeviceInventory), the FIFO scheduling plan
// (PlanSchedule) and where PS shards go (PlaceShards).
#include "server/coordinator/job_scheduler.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/coordinator/device_inventory.h"
#include "server/coordinator/job.h"
#include "server/coordinator/ps_placement.h"
#include "server/coordinator/ps_registry.h"

namespace gradsync {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const absl::Time kNow = absl::FromUnixSeconds(1700000000);
constexpr absl::Duration kLease = absl::Seconds(5);

Device Dev(const std::string& kind, int index) {
  Device device;
  device.set_kind(kind);
  device.set_index(index);
  return device;
}

DeviceInventory::Worker Worker(const std::string& id, const std::string& host,
                               int64_t number, int cpus,
                               std::vector<bool> free = {}) {
  DeviceInventory::Worker w;
  w.id = id;
  w.host = host;
  w.number = number;
  for (int i = 0; i < cpus; ++i) w.devices.push_back(Dev("cpu", i));
  w.free = free.empty() ? std::vector<bool>(cpus, true) : free;
  return w;
}

JobSpec Spec(int ranks) {
  JobSpec spec;
  spec.set_device("cpu");
  spec.set_num_workers(ranks);
  return spec;
}

// "w-1:0" for each slot.
std::vector<std::string> Where(const std::vector<DeviceSlot>& slots) {
  std::vector<std::string> where;
  for (const DeviceSlot& s : slots) {
    where.push_back(s.worker_id + ":" + std::to_string(s.device.index()));
  }
  return where;
}

TEST(DeviceInventoryTest, Take_OrdersByHostThenWorkerThenDevice) {
  // Registered as w-1 on host b, w-2 on host a: host a's devices go first.
  DeviceInventory inventory(
      {Worker("w-1", "b", 1, 2), Worker("w-2", "a", 2, 2)});
  std::optional<std::vector<DeviceSlot>> slots = inventory.Take("cpu", 3);
  ASSERT_TRUE(slots.has_value());
  EXPECT_THAT(Where(*slots), ElementsAre("w-2:0", "w-2:1", "w-1:0"));
  EXPECT_EQ(inventory.Free("cpu"), 1);
  EXPECT_EQ(inventory.Total("cpu"), 4);
  EXPECT_EQ(inventory.Describe("cpu"),
            "w-1 on host b: 1 of 2 cpu free, w-2 on host a: 0 of 2 cpu free");
}

TEST(DeviceInventoryTest, Take_TooFewFree_TakesNothing) {
  DeviceInventory inventory({Worker("w-1", "a", 1, 2, {true, false})});
  EXPECT_FALSE(inventory.Take("cpu", 2).has_value());
  EXPECT_FALSE(inventory.Take("cuda", 1).has_value());
  EXPECT_EQ(inventory.Free("cpu"), 1);
  EXPECT_EQ(DeviceInventory().Describe("cpu"), "no live workers");
}

TEST(DeviceInventoryTest, OnePerHost_EachHostsFirstDevice) {
  // Two workers on host a, one on b, one on c: a link probe's three ranks
  // go to a, b and c, never twice to a.
  DeviceInventory inventory({Worker("w-1", "a", 1, 2), Worker("w-2", "a", 2, 1),
                             Worker("w-3", "b", 3, 2),
                             Worker("w-4", "c", 4, 1)});
  std::optional<std::vector<DeviceSlot>> slots =
      inventory.Take("cpu", 3, 0, /*one_per_host=*/true);
  ASSERT_TRUE(slots.has_value());
  EXPECT_THAT(Where(*slots), ElementsAre("w-1:0", "w-3:0", "w-4:0"));
  // Four hosts are not there: nothing more is taken.
  DeviceInventory three({Worker("w-1", "a", 1, 4), Worker("w-2", "b", 2, 4),
                         Worker("w-3", "c", 3, 4)});
  EXPECT_FALSE(three.Take("cpu", 4, 0, true).has_value());
  EXPECT_EQ(three.Free("cpu"), 12);
}

TEST(PlanScheduleTest, LinkProbe_WaitsForAFreeDeviceOnEachHost) {
  JobTable jobs(10);
  JobSpec probe = Spec(3);
  probe.mutable_model()->set_kind("link_probe");
  Job* job = jobs.Create(probe, kNow);
  const SchedulePlan plan = PlanSchedule(
      jobs,
      DeviceInventory({Worker("w-1", "a", 1, 4), Worker("w-2", "b", 2, 4)}),
      false, kNow, kLease);
  EXPECT_THAT(plan.placements, IsEmpty());
  EXPECT_EQ(plan.waiting_job, job->id());
  EXPECT_THAT(plan.waiting_message,
              HasSubstr("waiting for a free cpu device on each of 3 hosts"));
}

TEST(PlanScheduleTest, PlacesOldestFirstWhileTheyFit) {
  JobTable jobs(10);
  Job* first = jobs.Create(Spec(2), kNow);
  Job* second = jobs.Create(Spec(1), kNow);
  Job* third = jobs.Create(Spec(2), kNow);
  Job* fourth = jobs.Create(Spec(1), kNow);
  const SchedulePlan plan = PlanSchedule(
      jobs, DeviceInventory({Worker("w-1", "a", 1, 4)}), false, kNow, kLease);
  ASSERT_EQ(plan.placements.size(), 2u);
  EXPECT_EQ(plan.placements[0].job_id, first->id());
  EXPECT_THAT(Where(plan.placements[0].slots), ElementsAre("w-1:0", "w-1:1"));
  EXPECT_EQ(plan.placements[1].job_id, second->id());
  EXPECT_THAT(Where(plan.placements[1].slots), ElementsAre("w-1:2"));
  // The third does not fit the one device left; the fourth, which would,
  // does not overtake it.
  EXPECT_EQ(plan.waiting_job, third->id());
  EXPECT_THAT(plan.waiting_message,
              HasSubstr("waiting for 2 free cpu devices (1 free of 4: w-1 on "
                        "host a: 1 of 4 cpu free); it starts when earlier "
                        "jobs end"));
  EXPECT_NE(plan.waiting_job, fourth->id());
  EXPECT_THAT(plan.stale, IsEmpty());
}

TEST(PlanScheduleTest, MoreRanksThanDevices_SaysWorkersWereLost) {
  JobTable jobs(10);
  jobs.Create(Spec(3), kNow);
  const SchedulePlan plan = PlanSchedule(
      jobs, DeviceInventory({Worker("w-1", "a", 1, 2)}), false, kNow, kLease);
  EXPECT_THAT(plan.placements, IsEmpty());
  EXPECT_THAT(plan.waiting_message,
              HasSubstr("workers were lost: start more workers or cancel"));
}

TEST(PlanScheduleTest, RestartWaitsOutALease) {
  JobTable jobs(10);
  Job* restart = jobs.Create(Spec(1), kNow);
  restart->set_restart_of("job-0");
  restart->set_not_before(kNow + kLease);
  const DeviceInventory devices({Worker("w-1", "a", 1, 1)});
  SchedulePlan plan = PlanSchedule(jobs, devices, false, kNow, kLease);
  EXPECT_THAT(plan.placements, IsEmpty());
  EXPECT_EQ(plan.waiting_job, restart->id());
  EXPECT_THAT(plan.waiting_message,
              HasSubstr("restarts job-0 once a lease (5s) has passed"));
  plan = PlanSchedule(jobs, devices, false, kNow + kLease, kLease);
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_TRUE(plan.waiting_job.empty());
}

TEST(PlanScheduleTest, JobNeedingShards_WaitsForAParameterServer) {
  JobTable jobs(10);
  Job* job = jobs.Create(Spec(1), kNow);
  job->AddSwitchRequest(SYNC_MODE_PS);
  EXPECT_TRUE(JobNeedsShardsNow(*job));
  const DeviceInventory devices({Worker("w-1", "a", 1, 1)});
  SchedulePlan plan =
      PlanSchedule(jobs, devices, /*ps_live=*/false, kNow, kLease);
  EXPECT_THAT(plan.placements, IsEmpty());
  EXPECT_THAT(plan.waiting_message,
              HasSubstr("waiting for a parameter server"));
  plan = PlanSchedule(jobs, devices, /*ps_live=*/true, kNow, kLease);
  EXPECT_EQ(plan.placements.size(), 1u);
}

TEST(PlanScheduleTest, EndedJobsInTheQueue_AreStale) {
  JobTable jobs(10);
  Job* cancelled = jobs.Create(Spec(1), kNow);
  ASSERT_TRUE(cancelled->TransitionTo(JOB_STATE_CANCELLED, "", kNow).ok());
  Job* next = jobs.Create(Spec(1), kNow);
  const SchedulePlan plan = PlanSchedule(
      jobs, DeviceInventory({Worker("w-1", "a", 1, 1)}), false, kNow, kLease);
  EXPECT_THAT(plan.stale, ElementsAre(cancelled->id()));
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].job_id, next->id());
}

PsRecord Server(const std::string& id, int64_t number) {
  PsRecord record;
  record.id = id;
  record.number = number;
  record.address = id + ":7000";
  return record;
}

TEST(PsPlacementTest, LeastLoadedFirstThenRegistrationOrder_WrapsAround) {
  const PsRecord a = Server("ps-1", 1), b = Server("ps-2", 2),
                 c = Server("ps-3", 3);
  absl::flat_hash_map<std::string, int> load = {{"ps-1", 2}, {"ps-3", 1}};
  std::vector<ShardPlacement> shards = PlaceShards(4, {&a, &b, &c}, load);
  std::vector<std::string> ids;
  for (const ShardPlacement& s : shards) ids.push_back(s.ps_id);
  EXPECT_THAT(ids, ElementsAre("ps-2", "ps-3", "ps-1", "ps-2"));
  EXPECT_EQ(shards[0].address, "ps-2:7000");
  // 0 shards asked for: one per live server.
  EXPECT_EQ(PlaceShards(0, {&a, &b, &c}, {}).size(), 3u);
}

TEST(PsPlacementTest, ShardLoadCountsOtherJobsThatHaveNotEnded) {
  JobTable jobs(10);
  Job* running = jobs.Create(Spec(1), kNow);
  running->SetPsShards({{"ps-1", "a:1"}, {"ps-1", "a:1"}, {"ps-2", "b:1"}});
  Job* ended = jobs.Create(Spec(1), kNow);
  ended->SetPsShards({{"ps-2", "b:1"}});
  ASSERT_TRUE(ended->TransitionTo(JOB_STATE_CANCELLED, "", kNow).ok());
  absl::flat_hash_map<std::string, int> load = ShardLoad(jobs, nullptr);
  EXPECT_EQ(load["ps-1"], 2);
  EXPECT_EQ(load["ps-2"], 1);
  EXPECT_TRUE(ShardLoad(jobs, running).empty());
}

}  // namespace
}  // namespace gradsync
