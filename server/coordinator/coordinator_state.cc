#include "server/coordinator/coordinator_state.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/secret.h"

namespace gradsync {

std::string JobStorePrefix(absl::string_view job_id, int64_t generation) {
  return absl::StrCat("job/", job_id, "/gen/", generation, "/");
}

std::string SwitchDirectiveKey(int64_t epoch) {
  return absl::StrCat("switch/", epoch);
}

CoordinatorState::CoordinatorState(CoordinatorConfig coordinator_config)
    : config(std::move(coordinator_config)),
      shard_key(RandomSecret()),
      jobs(config.retained_ended_jobs) {}

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
