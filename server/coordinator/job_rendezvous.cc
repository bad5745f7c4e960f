#include "server/coordinator/job_rendezvous.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace gradsync {
namespace {

[[nodiscard]] absl::Status CheckKey(absl::string_view key) {
  if (!key.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "store key is empty; name the value, e.g. \"tcp/addr/0\"");
}

// The deadline of a call that waits `timeout_ms` from now, never later than
// the caller's `deadline`.
absl::Time WaitDeadline(int64_t timeout_ms, absl::Time deadline) {
  return std::min(deadline, absl::Now() + absl::Milliseconds(std::max<int64_t>(
                                              timeout_ms, 0)));
}

// The rank a key belongs to: its last '/'-separated part, when that is a
// rank of a job of `world_size` ranks ("tcp/addr/2" is rank 2's).
std::optional<int> KeyOwner(absl::string_view key, int world_size) {
  const size_t slash = key.rfind('/');
  const absl::string_view last =
      slash == absl::string_view::npos ? key : key.substr(slash + 1);
  if (last.empty() || last.size() > 9 ||
      !std::all_of(last.begin(), last.end(), absl::ascii_isdigit)) {
    return std::nullopt;
  }
  int rank = 0;
  if (!absl::SimpleAtoi(last, &rank) || rank >= world_size) return std::nullopt;
  return rank;
}

std::string Seconds(absl::Duration d) {
  return absl::StrFormat("%.1f s", absl::ToDoubleSeconds(d));
}

}  // namespace

absl::StatusOr<Job*> JobRendezvous::CheckScopeLocked(
    const StoreScope& scope) const {
  RETURN_IF_ERROR(
      state_.workers.Authenticate(scope.worker_id(), scope.credential()));
  ASSIGN_OR_RETURN(Job * job, state_.FindJobLocked(scope.job_id()));
  if (job->RanksOn(scope.worker_id()).empty()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "worker '", scope.worker_id(), "' hosts no rank of job ", job->id(),
        job->world_size() == 0
            ? " (the job has no ranks placed yet)"
            : absl::StrCat(" (its ranks are on ",
                           absl::StrJoin(job->WorkerIds(), ", "), ")"),
        "; only a job's own workers may use its store and barriers"));
  }
  if (IsFinal(job->state())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job->id(), " has ended (", JobStateName(job->state()),
        job->message().empty() ? "" : ": ", job->message(),
        "); stop this rank"));
  }
  if (scope.generation() != job->generation()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job->id(), " is at rendezvous generation ", job->generation(),
        ", not ", scope.generation(),
        "; this rank is stale: stop it and follow the worker's latest "
        "assignment"));
  }
  return job;
}

absl::Status JobRendezvous::StoreSet(const StoreSetRequest& request) {
  RETURN_IF_ERROR(CheckKey(request.key()));
  // state_.mu stays held so that a job ending now cannot erase its keys between
  // the check and the write (and leave this one behind).
  absl::MutexLock lock(&state_.mu);
  ASSIGN_OR_RETURN(Job * job, CheckScopeLocked(request.scope()));
  const std::optional<int> owner = KeyOwner(request.key(), job->world_size());
  if (owner.has_value() &&
      !job->HostsRank(request.scope().worker_id(), *owner)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "store key '", request.key(), "' of job ", job->id(),
        " belongs to rank ", *owner, ", and worker '",
        request.scope().worker_id(), "' holds ranks ",
        absl::StrJoin(job->RanksOn(request.scope().worker_id()), ", "),
        "; a key that ends in a rank may be set only by that rank's worker"));
  }
  std::string key =
      absl::StrCat(JobStorePrefix(job->id(), job->generation()), request.key());
  RETURN_IF_ERROR(state_.store.Set(key, request.value()));
  state_.saver.SetKey(std::move(key), request.value());
  return absl::OkStatus();
}

absl::StatusOr<StoreAddResponse> JobRendezvous::StoreAdd(
    const StoreAddRequest& request) {
  RETURN_IF_ERROR(CheckKey(request.key()));
  absl::MutexLock lock(&state_.mu);
  ASSIGN_OR_RETURN(Job * job, CheckScopeLocked(request.scope()));
  std::string key =
      absl::StrCat(JobStorePrefix(job->id(), job->generation()), request.key());
  ASSIGN_OR_RETURN(const int64_t value, state_.store.Add(key, request.delta()));
  if (absl::StatusOr<std::string> stored =
          state_.store.Get(key, absl::InfinitePast());
      stored.ok()) {
    state_.saver.SetKey(std::move(key), *std::move(stored));
  }
  StoreAddResponse response;
  response.set_value(value);
  return response;
}

absl::StatusOr<StoreGetResponse> JobRendezvous::StoreGet(
    const StoreGetRequest& request, absl::Time deadline,
    CancelledFn cancelled) {
  RETURN_IF_ERROR(CheckKey(request.key()));
  const absl::Time start = absl::Now();
  deadline = WaitDeadline(request.timeout_ms(), deadline);
  for (;;) {
    std::string key;
    {
      absl::MutexLock lock(&state_.mu);
      ASSIGN_OR_RETURN(Job * job, CheckScopeLocked(request.scope()));
      if (state_.shutting_down) {
        return absl::UnavailableError(
            "the coordinator is shutting down; retry against its replacement");
      }
      key = absl::StrCat(JobStorePrefix(job->id(), job->generation()),
                         request.key());
    }
    if (cancelled()) {
      return absl::CancelledError("the caller cancelled the store get");
    }
    const absl::Time slice_end =
        std::min(deadline, absl::Now() + state_.config.wait_slice);
    absl::StatusOr<std::string> value = state_.store.Get(key, slice_end);
    if (value.ok()) {
      StoreGetResponse response;
      response.set_value(*std::move(value));
      return response;
    }
    if (value.status().code() != absl::StatusCode::kDeadlineExceeded) {
      return value.status();
    }
    if (slice_end >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "store key '", request.key(), "' of job ", request.scope().job_id(),
          " (generation ", request.scope().generation(),
          ") was not set within ", Seconds(absl::Now() - start),
          "; the rank that publishes it has not got that far or has failed: "
          "check `gradsync status ",
          request.scope().job_id(), "` and the workers' logs"));
    }
  }
}

absl::Status JobRendezvous::StoreWait(const StoreWaitRequest& request,
                                      absl::Time deadline,
                                      CancelledFn cancelled) {
  for (const std::string& key : request.keys()) RETURN_IF_ERROR(CheckKey(key));
  const absl::Time start = absl::Now();
  deadline = WaitDeadline(request.timeout_ms(), deadline);
  for (;;) {
    std::vector<std::string> keys;
    {
      absl::MutexLock lock(&state_.mu);
      ASSIGN_OR_RETURN(Job * job, CheckScopeLocked(request.scope()));
      if (state_.shutting_down) {
        return absl::UnavailableError(
            "the coordinator is shutting down; retry against its replacement");
      }
      const std::string prefix = JobStorePrefix(job->id(), job->generation());
      for (const std::string& key : request.keys()) {
        keys.push_back(absl::StrCat(prefix, key));
      }
    }
    if (cancelled()) {
      return absl::CancelledError("the caller cancelled the store wait");
    }
    const absl::Time slice_end =
        std::min(deadline, absl::Now() + state_.config.wait_slice);
    absl::Status status = state_.store.Wait(keys, slice_end);
    if (status.code() != absl::StatusCode::kDeadlineExceeded) return status;
    if (slice_end >= deadline) {
      std::vector<std::string> missing;
      for (int i = 0; i < request.keys_size(); ++i) {
        if (!state_.store.Get(keys[i], absl::InfinitePast()).ok()) {
          missing.push_back(absl::StrCat("'", request.keys(i), "'"));
        }
      }
      return absl::DeadlineExceededError(absl::StrCat(
          "store keys ", absl::StrJoin(missing, ", "), " of job ",
          request.scope().job_id(), " (generation ",
          request.scope().generation(), ") were not set within ",
          Seconds(absl::Now() - start),
          "; the ranks that publish them have not got that far or have "
          "failed: check `gradsync status ",
          request.scope().job_id(), "` and the workers' logs"));
    }
  }
}

absl::Status JobRendezvous::Barrier(const BarrierRequest& request,
                                    absl::Time deadline,
                                    CancelledFn cancelled) {
  if (request.name().empty()) {
    return absl::InvalidArgumentError(
        "barrier name is empty; name the point the ranks meet at, e.g. "
        "\"start\"");
  }
  const StoreScope& scope = request.scope();
  const int rank = request.rank();
  const absl::Time start = absl::Now();
  deadline = WaitDeadline(request.timeout_ms(), deadline);

  absl::MutexLock lock(&state_.mu);
  ASSIGN_OR_RETURN(Job * job, CheckScopeLocked(scope));
  if (!job->HostsRank(scope.worker_id(), rank)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "rank ", rank, " of job ", job->id(), " is not hosted by worker ",
        scope.worker_id(), " (it hosts ranks ",
        absl::StrJoin(job->RanksOn(scope.worker_id()), ", "),
        "); a rank can only enter a barrier for itself"));
  }
  const std::string job_id = job->id();
  const int64_t generation = job->generation();
  BarrierRecord& barrier = job->Barrier(request.name());
  const int64_t round = barrier.round;
  barrier.arrived.insert(rank);
  if (static_cast<int>(barrier.arrived.size()) == job->world_size()) {
    ++barrier.round;
    barrier.arrived.clear();
    return absl::OkStatus();
  }

  // The job may end (and be dropped) while this rank waits: look it up
  // again on every wake-up rather than keeping pointers into it.
  auto still_waiting = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu) -> Job* {
    Job* j = state_.jobs.Find(job_id);
    if (j == nullptr || IsFinal(j->state()) || j->generation() != generation) {
      return nullptr;
    }
    BarrierRecord& b = j->Barrier(request.name());
    return b.round > round ? nullptr : j;
  };
  auto released = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_.mu) {
    return still_waiting() == nullptr;
  };
  absl::Status status = state_.AwaitLocked(released, deadline, cancelled);
  job = still_waiting();
  if (job == nullptr) {
    // Completed, or the job ended / moved on: the scope check says which.
    ASSIGN_OR_RETURN(job, CheckScopeLocked(scope));
    return absl::OkStatus();
  }
  BarrierRecord& barrier_now = job->Barrier(request.name());
  std::map<std::string, std::vector<int>> missing_by_worker;
  std::vector<int> missing;
  for (int r = 0; r < job->world_size(); ++r) {
    if (!barrier_now.arrived.contains(r)) {
      missing.push_back(r);
      missing_by_worker[job->ranks()[r].slot.worker_id].push_back(r);
    }
  }
  barrier_now.arrived.erase(rank);  // this rank gives up; it may retry
  if (status.code() != absl::StatusCode::kDeadlineExceeded) return status;
  std::vector<std::string> where;
  for (const auto& [worker_id, ranks] : missing_by_worker) {
    const WorkerRecord* worker = state_.workers.Find(worker_id);
    where.push_back(absl::StrCat("worker ", worker_id, " on host ",
                                 worker == nullptr ? "?" : worker->host, ": ",
                                 absl::StrJoin(ranks, ", ")));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "barrier '", request.name(), "' of job ", job_id, " (generation ",
      generation, ") timed out after ", Seconds(absl::Now() - start),
      " waiting for ", missing.size() == 1 ? "rank " : "ranks ",
      absl::StrJoin(missing, ", "), " (", absl::StrJoin(where, "; "),
      "); look at those workers' logs"));
}

}  // namespace gradsync
