#include "server/coordinator/coordinator_state.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "security/secret.h"

namespace gradsync {

std::string JobStorePrefix(absl::string_view job_id, int64_t generation) {
  return absl::StrCat("job/", job_id, "/gen/", generation, "/");
}

std::string SwitchDirectiveKey(int64_t epoch) {
  return absl::StrCat("switch/", epoch);
}

CoordinatorState::CoordinatorState(CoordinatorConfig coordinator_config,
                                   const SavedMeta& saved)
    : config(std::move(coordinator_config)),
      shard_key(saved.shard_key().empty() ? RandomSecret() : saved.shard_key()),
      incarnation(saved.incarnation() + 1),
      jobs(config.retained_ended_jobs),
      saver(config.state_store),
      links{config.link_alpha_s, config.link_bandwidth_Bps} {
  if (config.link_bandwidth_Bps > 0) {
    links_source = "the coordinator's --link-gbps";
  } else if (saved.link_facts().link_gbps() > 0) {
    links = {saved.link_facts().link_alpha_us() * 1e-6,
             saved.link_facts().link_gbps() * 1e9};
    links_source = saved.link_facts().source();
  }
}

void CoordinatorState::SaveLocked() {
  const absl::Status status =
      saver.SaveChanges(MetaLocked(), workers, servers, jobs);
  if (status.ok()) {
    if (save_failing) {
      LogLocked(absl::StrCat("saving to the ", saver.store()->Describe(),
                             " works again; every change so far is saved"));
    }
    save_failing = false;
    return;
  }
  if (!save_failing) {
    LogLocked(absl::StrCat(
        "could not save to the ", saver.store()->Describe(), ": ",
        status.message(),
        "; changes stay in effect but a restart would lose them (each later "
        "call tries again). Check the disk and the file's permissions"));
  }
  save_failing = true;
}

SavedMeta CoordinatorState::MetaLocked() const {
  SavedMeta meta;
  meta.set_next_worker(workers.next_number());
  meta.set_next_ps(servers.next_number());
  meta.set_next_job(jobs.next_number());
  meta.set_shard_key(shard_key);
  meta.set_incarnation(incarnation);
  if (links.bandwidth_Bps > 0) {
    ClusterLinkFacts& facts = *meta.mutable_link_facts();
    facts.set_link_gbps(links.bandwidth_Bps / 1e9);
    facts.set_link_alpha_us(links.alpha_s * 1e6);
    facts.set_source(links_source);
  }
  return meta;
}

absl::Status CoordinatorState::AwaitLocked(absl::FunctionRef<bool()> ready,
                                           absl::Time deadline,
                                           CancelledFn cancelled) {
  auto wake = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return shutting_down || ready();
  };
  for (;;) {
    if (ready()) return absl::OkStatus();
    if (shutting_down) {
      return absl::UnavailableError(
          "the coordinator is shutting down; retry against its replacement");
    }
    if (cancelled()) {
      return absl::CancelledError("the caller cancelled the call or went away");
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError("the deadline passed");
    }
    mu.AwaitWithDeadline(absl::Condition(&wake),
                         std::min(deadline, now + config.wait_slice));
  }
}

absl::StatusOr<Job*> CoordinatorState::FindJobLocked(
    absl::string_view job_id) const {
  Job* job = const_cast<JobTable&>(jobs).Find(job_id);
  if (job == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "unknown job '", job_id,
        "'; `gradsync status` lists the jobs the coordinator knows (it keeps "
        "the last ",
        config.retained_ended_jobs, " ended jobs)"));
  }
  return job;
}

void CoordinatorState::LogLocked(absl::string_view line) const {
  if (config.event_log) config.event_log(line);
}

}  // namespace gradsync
