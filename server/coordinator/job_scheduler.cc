#include "server/coordinator/job_scheduler.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "jobspec/job_memory.h"
#include "jobspec/job_spec.h"
#include "models/link_probe/link_probe_spec.h"
#include "server/coordinator/ps_placement.h"

namespace gradsync {

bool JobNeedsShardsNow(const Job& job) {
  return JobNeedsPs(job.spec()) || job.requested_mode() == SYNC_MODE_PS;
}

SchedulePlan PlanSchedule(const JobTable& jobs, DeviceInventory devices,
                          bool ps_live, absl::Time now, absl::Duration lease) {
  SchedulePlan plan;
  for (const std::string& id : jobs.pending()) {
    const Job* job = jobs.Find(id);
    if (job == nullptr || job->state() != JOB_STATE_PENDING) {
      plan.stale.push_back(id);
      continue;
    }
    if (now < job->not_before()) {
      // The lease check plans again, and places it after the wait.
      plan.waiting_job = id;
      plan.waiting_message = absl::StrCat(
          "restarts ", job->restart_of(), " once a lease (",
          absl::FormatDuration(lease),
          ") has passed since it failed, so that the daemons that failed it "
          "are known lost by then");
      return plan;
    }
    if (JobNeedsShardsNow(*job) && !ps_live) {
      plan.waiting_job = id;
      plan.waiting_message = absl::StrCat(
          "waiting for a parameter server (every registered one was lost): ",
          kNoParameterServerMessage, "; it starts when one registers");
      return plan;
    }
    const JobSpec& spec = job->spec();
    const RankMemoryEstimate rank = EstimateRankMemory(spec);
    const bool per_host = IsLinkProbe(spec);
    std::optional<std::vector<DeviceSlot>> slots =
        devices.Take(spec.device(), spec.num_workers(), rank.total(), per_host);
    if (!slots.has_value() && per_host) {
      plan.waiting_job = id;
      plan.waiting_message = absl::StrCat(
          "waiting for a free ", spec.device(), " device on each of ",
          spec.num_workers(), " hosts (a link probe runs one rank per host; ",
          devices.Describe(spec.device()),
          "); it starts when earlier jobs end, or start workers on more "
          "hosts");
      return plan;
    }
    if (!slots.has_value() &&
        devices.Free(spec.device()) >= spec.num_workers()) {
      plan.waiting_job = id;
      plan.waiting_message = absl::StrCat(
          "waiting for memory: the devices are free, but its ranks need about ",
          rank.Describe(),
          ", more than the workers' --max-job-memory has "
          "left beside the jobs there (",
          devices.DescribeMemory(), "); it starts when earlier jobs end");
      return plan;
    }
    if (!slots.has_value()) {
      const int total = devices.Total(spec.device());
      plan.waiting_job = id;
      plan.waiting_message = absl::StrCat(
          "waiting for ", spec.num_workers(), " free ", spec.device(),
          " devices (", devices.Free(spec.device()), " free of ", total, ": ",
          devices.Describe(spec.device()), ")",
          total < spec.num_workers()
              ? "; workers were lost: start more workers or cancel the job"
              : "; it starts when earlier jobs end");
      return plan;
    }
    plan.placements.push_back({id, *std::move(slots)});
  }
  return plan;
}

}  // namespace gradsync
