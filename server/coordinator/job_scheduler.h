// JobScheduler: which pending jobs the coordinator places now, as a pure
// function of the pending queue, the free devices (DeviceInventory) and
// whether a parameter server is live. The CoordinatorService applies the
// plan: it takes the devices, places the jobs' ranks and PS shards and
// mails the assignments.
//
// FIFO: jobs are placed oldest first while the oldest fits; the first one
// that does not fit stops the round (a later, smaller job never overtakes
// it), and the plan says why it waits:
//   - a restart waits out a lease after the failure that caused it
//     (Job::not_before), so that the daemons that failed it are known lost
//     by then;
//   - a job that needs PS shards now (JobNeedsShardsNow) waits while no
//     parameter server is live;
//   - a job waits for as many free devices of its kind as it has ranks.
//
// Pure functions; thread-compatible.
#ifndef GRADSYNC_SERVER_COORDINATOR_JOB_SCHEDULER_H_
#define GRADSYNC_SERVER_COORDINATOR_JOB_SCHEDULER_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "server/coordinator/device_inventory.h"
#include "server/coordinator/job.h"

namespace gradsync {

// True when `job` needs parameter-server shards now: its spec does
// (JobNeedsPs), or its newest runtime switch request goes to PS.
bool JobNeedsShardsNow(const Job& job);

// One job the plan places, and the devices its ranks take (slot i: rank i).
struct JobPlacement {
  std::string job_id;
  std::vector<DeviceSlot> slots;
};

struct SchedulePlan {
  // Queue entries that are not pending any more (drop them).
  std::vector<std::string> stale;
  // The jobs to place now, oldest first.
  std::vector<JobPlacement> placements;
  // The oldest job left waiting ("" when the queue drains), and the message
  // its status shows.
  std::string waiting_job;
  std::string waiting_message;
};

// Plans a scheduling round over `jobs`' pending queue at `now`; `devices`
// is the free devices before the round, `ps_live` whether a parameter
// server is live, `lease` the restart wait.
SchedulePlan PlanSchedule(const JobTable& jobs, DeviceInventory devices,
                          bool ps_live, absl::Time now, absl::Duration lease);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_JOB_SCHEDULER_H_
