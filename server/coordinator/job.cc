#include "server/coordinator/job.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "jobspec/auto_mode_spec.h"
#include "models/link_probe/link_probe_spec.h"
#include "security/secret.h"

namespace gradsync {
namespace {

constexpr absl::string_view kJobIdPrefix = "job-";

}  // namespace

bool IsFinal(JobState state) {
  return state == JOB_STATE_SUCCEEDED || state == JOB_STATE_FAILED ||
         state == JOB_STATE_CANCELLED;
}

absl::string_view JobStateName(JobState state) {
  switch (state) {
    case JOB_STATE_PENDING:
      return "PENDING";
    case JOB_STATE_RENDEZVOUS:
      return "RENDEZVOUS";
    case JOB_STATE_RUNNING:
      return "RUNNING";
    case JOB_STATE_SUCCEEDED:
      return "SUCCEEDED";
    case JOB_STATE_FAILED:
      return "FAILED";
    case JOB_STATE_CANCELLED:
      return "CANCELLED";
    default:
      return "UNSPECIFIED";
  }
}

absl::Status JobEndedError(const Job& job, absl::string_view consequence) {
  return absl::FailedPreconditionError(absl::StrCat(
      "job ", job.id(), " already ended (", JobStateName(job.state()),
      job.message().empty() ? "" : ": ", job.message(), "); ", consequence));
}

absl::Status CheckTransition(JobState from, JobState to) {
  bool allowed = false;
  switch (from) {
    case JOB_STATE_PENDING:
      allowed = to == JOB_STATE_RENDEZVOUS || to == JOB_STATE_CANCELLED;
      break;
    case JOB_STATE_RENDEZVOUS:
      allowed = to == JOB_STATE_RUNNING || to == JOB_STATE_FAILED ||
                to == JOB_STATE_CANCELLED;
      break;
    case JOB_STATE_RUNNING:
      allowed = to == JOB_STATE_SUCCEEDED || to == JOB_STATE_FAILED ||
                to == JOB_STATE_CANCELLED;
      break;
    default:
      break;
  }
  if (allowed) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "a job cannot go from ", JobStateName(from), " to ", JobStateName(to)));
}

Job::Job(std::string id, JobSpec spec, absl::Time submit_time)
    : Job(std::move(id), std::move(spec), RandomSecret(), submit_time) {}

Job::Job(std::string id, JobSpec spec, std::string secret,
         absl::Time submit_time)
    : id_(std::move(id)),
      spec_(std::move(spec)),
      secret_(std::move(secret)),
      submit_time_(submit_time),
      modes_(spec_.mode()) {}

absl::Status Job::TransitionTo(JobState to, std::string message,
                               absl::Time now) {
  if (absl::Status status = CheckTransition(state_, to); !status.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", id_, ": ", status.message()));
  }
  state_ = to;
  message_ = std::move(message);
  if ((to == JOB_STATE_FAILED || to == JOB_STATE_CANCELLED) &&
      !last_checkpoint_.empty() && restarted_as_.empty()) {
    absl::StrAppend(&message_, "; its last checkpoint is ", last_checkpoint_,
                    " (", last_checkpoint_steps_,
                    " steps done): go on from there with `gradsync resume ",
                    id_, "` (or submit with --resume-from ", last_checkpoint_,
                    ")");
  }
  if (to == JOB_STATE_RUNNING) start_time_ = now;
  if (IsFinal(to)) end_time_ = now;
  ++version_;
  return absl::OkStatus();
}

absl::Status Job::Place(std::vector<DeviceSlot> slots, absl::Time now) {
  if (absl::Status status =
          TransitionTo(JOB_STATE_RENDEZVOUS, std::string(), now);
      !status.ok()) {
    return status;
  }
  ranks_.clear();
  ranks_.reserve(slots.size());
  for (DeviceSlot& slot : slots) {
    RankRecord rank;
    rank.slot = std::move(slot);
    ranks_.push_back(std::move(rank));
  }
  generation_ = 1;
  MakeAutoMode();
  return absl::OkStatus();
}

void Job::MakeAutoMode() {
  if (!spec_.auto_mode().enabled()) return;
  // Validated at submit time; the defaults stand in should it not be.
  absl::StatusOr<AutoModeConfig> config =
      AutoModeConfigFromSpec(spec_.auto_mode());
  auto_mode_.reset(
      new AutoMode{AutoStepCollector(world_size()),
                   AutoModePolicy(config.ok() ? *config : AutoModeConfig())});
}

void Job::SetMessage(std::string message) {
  if (message == message_) return;
  message_ = std::move(message);
  ++version_;
}

bool Job::HostsRank(absl::string_view worker_id, int rank) const {
  return rank >= 0 && rank < world_size() &&
         ranks_[rank].slot.worker_id == worker_id;
}

std::vector<int> Job::RanksOn(absl::string_view worker_id) const {
  std::vector<int> ranks;
  for (int r = 0; r < world_size(); ++r) {
    if (ranks_[r].slot.worker_id == worker_id) ranks.push_back(r);
  }
  return ranks;
}

std::vector<std::string> Job::WorkerIds() const {
  std::vector<std::string> ids;
  for (const RankRecord& rank : ranks_) {
    if (std::find(ids.begin(), ids.end(), rank.slot.worker_id) == ids.end()) {
      ids.push_back(rank.slot.worker_id);
    }
  }
  return ids;
}

void Job::AddMetrics(
    const google::protobuf::RepeatedPtrField<StepMetrics>& steps) {
  for (const StepMetrics& step : steps) {
    RankRecord& rank = ranks_[step.rank()];
    rank.last_step = std::max(rank.last_step, step.step());
    if (step.rank() == 0) {
      if (first_step_ < 0 || step.step() < first_step_) {
        first_step_ = step.step();
      }
      modes_.Record(step.step(), step.mode(), step.switch_epoch(),
                    step.switch_s());
      if (!step.checkpoint().empty() &&
          step.step() + 1 >= last_checkpoint_steps_) {
        last_checkpoint_ = step.checkpoint();
        last_checkpoint_steps_ = step.step() + 1;
      }
    }
    if (auto_mode_ != nullptr) auto_mode_->steps.Add(step);
    metrics_.push_back(step);
  }
  ++version_;
}

int64_t Job::MinStep() const {
  if (ranks_.empty()) return 0;
  int64_t min_step = ranks_[0].last_step;
  for (const RankRecord& rank : ranks_) {
    min_step = std::min(min_step, rank.last_step);
  }
  return std::max<int64_t>(min_step, 0);
}

void Job::SetPsShards(std::vector<ShardPlacement> shards) {
  ps_shards_ = std::move(shards);
  ++version_;
}

std::vector<int> Job::ShardsOn(absl::string_view ps_id) const {
  std::vector<int> shards;
  for (int k = 0; k < static_cast<int>(ps_shards_.size()); ++k) {
    if (ps_shards_[k].ps_id == ps_id) shards.push_back(k);
  }
  return shards;
}

int64_t Job::AddSwitchRequest(SyncMode mode, std::string reason) {
  requested_mode_ = mode;
  ++version_;
  ++switch_requests_;
  if (!reason.empty()) switch_reasons_[switch_requests_] = std::move(reason);
  return switch_requests_;
}

void Job::SetShardStats(const ps::ShardStats& stats) {
  shard_stats_[stats.shard()] = stats;
}

void Job::SetResult(double test_accuracy, double test_loss) {
  test_accuracy_ = test_accuracy;
  test_loss_ = test_loss;
  ++version_;
}

absl::Status Job::AddLinks(
    int rank,
    const google::protobuf::RepeatedPtrField<LinkMeasurement>& links) {
  if (!IsLinkProbe(spec_)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", rank, " of job ", id_,
        " reported link measurements, but the job is not a link probe"));
  }
  std::vector<const LinkMeasurement*> before;
  for (const LinkMeasurement& link : links_) {
    if (link.from_rank() == rank) before.push_back(&link);
  }
  if (!before.empty()) {  // a retried report is fine, another one is not
    bool same = static_cast<int>(before.size()) == links.size();
    for (int i = 0; same && i < links.size(); ++i) {
      same = before[i]->SerializeAsString() == links[i].SerializeAsString();
    }
    if (same) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", rank, " of job ", id_,
        " reported other links than it reported before; nothing changed"));
  }
  int to_ranks = 0;
  std::set<std::pair<std::string, bool>> to_servers;
  for (const LinkMeasurement& link : links) {
    const bool numbers_ok =
        std::isfinite(link.goodput_bytes_per_s()) &&
        link.goodput_bytes_per_s() >= 0 &&
        std::isfinite(link.rtt_median_us()) && link.rtt_median_us() >= 0 &&
        std::isfinite(link.rtt_min_us()) && link.rtt_min_us() >= 0 &&
        link.stream_bytes() >= 0 && link.round_trips() >= 0;
    bool ends_ok;
    if (link.ps_id().empty()) {  // to another rank
      ++to_ranks;
      ends_ok = link.to_rank() >= 0 && link.to_rank() < world_size() &&
                link.to_rank() != rank && link.ps_host().empty() &&
                !link.from_ps();
    } else {  // with a parameter server, once each way
      ends_ok = link.ps_id().size() <= kMaxLinkPsIdBytes &&
                !link.ps_host().empty() &&
                link.ps_host().size() <= kMaxLinkPsHostBytes &&
                to_servers.insert({link.ps_id(), link.from_ps()}).second;
    }
    if (link.from_rank() != rank || !ends_ok || !numbers_ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "rank ", rank, " of job ", id_, " reported a bad link (",
          link.ShortDebugString(),
          "): it must run from the reporting rank to another rank of the "
          "job, or to and from a parameter server once each (its id and "
          "host named), with finite figures >= 0"));
    }
  }
  if (to_ranks >= world_size() ||
      static_cast<int>(to_servers.size()) > 2 * kMaxLinkProbeServers) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " of job ", id_, " reported ", to_ranks,
                     " links to ranks and ", to_servers.size(),
                     " to and from parameter servers; a rank has at most ",
                     world_size() - 1, " and ", 2 * kMaxLinkProbeServers));
  }
  links_.insert(links_.end(), links.begin(), links.end());
  ++version_;
  return absl::OkStatus();
}

JobStatus Job::Status() const {
  JobStatus status;
  status.set_job_id(id_);
  *status.mutable_spec() = spec_;
  status.set_state(state_);
  status.set_message(message_);
  for (int r = 0; r < world_size(); ++r) {
    RankPlacement* placement = status.add_ranks();
    placement->set_rank(r);
    placement->set_worker_id(ranks_[r].slot.worker_id);
    placement->set_host(ranks_[r].slot.host);
    *placement->mutable_device() = ranks_[r].slot.device;
  }
  status.set_step(MinStep());
  status.set_submit_time(UnixTimeSeconds(submit_time_));
  if (start_time_ != absl::UnixEpoch()) {
    status.set_start_time(UnixTimeSeconds(start_time_));
  }
  if (end_time_ != absl::UnixEpoch()) {
    status.set_end_time(UnixTimeSeconds(end_time_));
  }
  status.set_test_accuracy(test_accuracy_);
  status.set_test_loss(test_loss_);
  for (const LinkMeasurement& link : links_) *status.add_links() = link;
  status.set_mode(modes_.current());
  for (SwitchRecord& record : modes_.Switches()) {
    auto reason = switch_reasons_.find(record.epoch());
    if (record.epoch() > 0 && reason != switch_reasons_.end()) {
      record.set_reason(reason->second);
    }
    *status.add_switches() = std::move(record);
  }
  if (auto_mode_ != nullptr) {
    for (const AutoDecision& d : auto_mode_->policy.decisions()) {
      *status.add_mode_decisions() = ModeDecisionOf(d);
    }
  }
  for (const ShardPlacement& shard : ps_shards_) {
    status.add_ps_addresses(shard.address);
  }
  status.set_switch_requests(switch_requests_);
  status.set_last_checkpoint(last_checkpoint_);
  status.set_last_checkpoint_steps(last_checkpoint_steps_);
  status.set_restarted_as(restarted_as_);
  status.set_restart_of(restart_of_);
  status.set_first_step(std::max<int64_t>(first_step_, 0));
  return status;
}

Job* JobTable::Create(JobSpec spec, absl::Time now) {
  const int64_t number = next_number_++;
  std::string id = absl::StrCat(kJobIdPrefix, number);
  auto job = std::make_unique<Job>(id, std::move(spec), now);
  Job* raw = job.get();
  jobs_[number] = std::move(job);
  numbers_[id] = number;
  pending_.push_back(std::move(id));
  return raw;
}

Job* JobTable::Find(absl::string_view id) {
  auto it = numbers_.find(id);
  if (it == numbers_.end()) return nullptr;
  return jobs_.at(it->second).get();
}

const Job* JobTable::Find(absl::string_view id) const {
  return const_cast<JobTable*>(this)->Find(id);
}

void JobTable::RemovePending(absl::string_view id) {
  pending_.erase(std::remove(pending_.begin(), pending_.end(), id),
                 pending_.end());
}

std::vector<const Job*> JobTable::All() const {
  std::vector<const Job*> all;
  all.reserve(jobs_.size());
  for (const auto& [number, job] : jobs_) all.push_back(job.get());
  return all;
}

std::vector<Job*> JobTable::AllMutable() {
  std::vector<Job*> all;
  all.reserve(jobs_.size());
  for (auto& [number, job] : jobs_) all.push_back(job.get());
  return all;
}

int64_t JobTable::NumberOf(absl::string_view id) const {
  auto it = numbers_.find(id);
  return it == numbers_.end() ? 0 : it->second;
}

void JobTable::Restore(std::unique_ptr<Job> job, int64_t number, bool pending,
                       bool ended) {
  const std::string id = job->id();
  jobs_[number] = std::move(job);
  numbers_[id] = number;
  if (pending) pending_.push_back(id);
  if (ended) ended_.push_back(id);
  RaiseNextNumber(number + 1);
}

std::vector<std::string> JobTable::Retire(absl::string_view id) {
  RemovePending(id);
  ended_.emplace_back(id);
  std::vector<std::string> dropped;
  while (static_cast<int>(ended_.size()) > retained_ended_jobs_) {
    std::string old = std::move(ended_.front());
    ended_.pop_front();
    auto it = numbers_.find(old);
    if (it != numbers_.end()) {
      jobs_.erase(it->second);
      numbers_.erase(it);
    }
    dropped.push_back(std::move(old));
  }
  return dropped;
}

}  // namespace gradsync
