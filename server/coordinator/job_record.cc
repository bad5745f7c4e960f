// Job::Save and Job::Restore: a job as the state store keeps it
// (proto/coordinator_state.proto), for a coordinator that survives its own
// restart (state_saver.h).
#include <utility>

#include "server/coordinator/job.h"

namespace gradsync {
namespace {

int64_t Micros(absl::Time t) { return absl::ToUnixMicros(t); }
absl::Time FromMicros(int64_t us) { return absl::FromUnixMicros(us); }

}  // namespace

SavedJob Job::Save(int64_t number, bool pending, bool ended) const {
  SavedJob saved;
  saved.set_id(id_);
  saved.set_number(number);
  *saved.mutable_spec() = spec_;
  saved.set_secret(secret_);
  saved.set_state(state_);
  saved.set_message(message_);
  saved.set_generation(generation_);
  saved.set_submit_time_us(Micros(submit_time_));
  saved.set_start_time_us(Micros(start_time_));
  saved.set_end_time_us(Micros(end_time_));
  saved.set_test_accuracy(test_accuracy_);
  saved.set_test_loss(test_loss_);
  for (const LinkMeasurement& link : links_) *saved.add_links() = link;
  for (const RankRecord& rank : ranks_) {
    SavedRank* r = saved.add_ranks();
    r->set_worker_id(rank.slot.worker_id);
    r->set_host(rank.slot.host);
    *r->mutable_device() = rank.slot.device;
    r->set_ready(rank.ready);
    r->set_succeeded(rank.succeeded);
  }
  for (const ShardPlacement& shard : ps_shards_) {
    SavedShard* s = saved.add_ps_shards();
    s->set_ps_id(shard.ps_id);
    s->set_address(shard.address);
  }
  saved.set_switch_requests(switch_requests_);
  saved.set_requested_mode(requested_mode_);
  for (const auto& [epoch, reason] : switch_reasons_) {
    (*saved.mutable_switch_reasons())[epoch] = reason;
  }
  saved.set_restart_of(restart_of_);
  saved.set_restarted_as(restarted_as_);
  saved.set_not_before_us(Micros(not_before_));
  for (const auto& [shard, stats] : shard_stats_) {
    (*saved.mutable_shard_stats())[shard] = stats;
  }
  saved.set_pending(pending);
  saved.set_ended(ended);
  return saved;
}

std::unique_ptr<Job> Job::Restore(const SavedJob& saved,
                                  const std::vector<StepMetrics>& metrics) {
  std::unique_ptr<Job> job(new Job(saved.id(), saved.spec(), saved.secret(),
                                   FromMicros(saved.submit_time_us())));
  job->state_ = saved.state();
  job->message_ = saved.message();
  job->generation_ = saved.generation();
  job->start_time_ = FromMicros(saved.start_time_us());
  job->end_time_ = FromMicros(saved.end_time_us());
  job->test_accuracy_ = saved.test_accuracy();
  job->test_loss_ = saved.test_loss();
  job->links_.assign(saved.links().begin(), saved.links().end());
  for (const SavedRank& r : saved.ranks()) {
    RankRecord rank;
    rank.slot = DeviceSlot{r.worker_id(), r.host(), r.device()};
    rank.ready = r.ready();
    rank.succeeded = r.succeeded();
    job->ranks_.push_back(std::move(rank));
  }
  for (const SavedShard& s : saved.ps_shards()) {
    job->ps_shards_.push_back(ShardPlacement{s.ps_id(), s.address()});
  }
  job->switch_requests_ = saved.switch_requests();
  job->requested_mode_ = saved.requested_mode();
  for (const auto& [epoch, reason] : saved.switch_reasons()) {
    job->switch_reasons_[epoch] = reason;
  }
  job->restart_of_ = saved.restart_of();
  job->restarted_as_ = saved.restarted_as();
  job->not_before_ = FromMicros(saved.not_before_us());
  for (const auto& [shard, stats] : saved.shard_stats()) {
    job->shard_stats_[shard] = stats;
  }
  if (job->generation_ > 0) job->MakeAutoMode();
  google::protobuf::RepeatedPtrField<StepMetrics> steps;
  for (const StepMetrics& step : metrics) {
    if (step.rank() < 0 || step.rank() >= job->world_size()) continue;
    *steps.Add() = step;
  }
  job->AddMetrics(steps);
  return job;
}

}  // namespace gradsync
