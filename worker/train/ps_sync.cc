#include "worker/train/ps_sync.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "study/alpha_beta/sync_bandwidth.h"
#include "worker/train/ring_sync.h"

namespace gradsync {

absl::StatusOr<std::unique_ptr<PsSync>> PsSync::Create(
    std::unique_ptr<PsClient> client, Communicator* comm,
    absl::Span<const float> grads, absl::Span<float> params, PsUpdate update,
    size_t step_scalars) {
  if (client == nullptr || comm == nullptr) {
    return absl::InvalidArgumentError(
        "ps sync needs a PS client and a communicator");
  }
  if (grads.size() != client->total_elements() ||
      params.size() != client->total_elements()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ps sync: the PS holds ", client->total_elements(),
                     " parameters but the model has ", params.size(),
                     " (gradients ", grads.size(), ")"));
  }
  return std::unique_ptr<PsSync>(
      new PsSync(std::move(client), comm, grads, params, update, step_scalars));
}

PsSync::PsSync(std::unique_ptr<PsClient> client, Communicator* comm,
               absl::Span<const float> grads, absl::Span<float> params,
               PsUpdate update, size_t step_scalars)
    : client_(std::move(client)),
      comm_(comm),
      grads_(grads),
      params_(params),
      update_(update),
      step_scalars_(step_scalars) {}

PsSync::~PsSync() {
  absl::MutexLock lock(&mu_);
  if (push_ != nullptr) {
    push_->Cancel(absl::CancelledError(
        absl::StrCat("ps sync destroyed during step ", step_)));
  }
  push_.reset();
}

absl::Status PsSync::BeginStep(int64_t step, int64_t switch_epoch) {
  if (in_step_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ps sync: step ", step, " begun before step ", step_, " was finished"));
  }
  {
    absl::MutexLock lock(&mu_);
    if (!aborted_.ok()) return aborted_;
    push_.reset();
  }
  step_ = step;
  switch_epoch_ = switch_epoch;
  in_step_ = true;
  error_ = absl::OkStatus();
  return absl::OkStatus();
}

void PsSync::OnGradReady(size_t begin, size_t end) {
  if (!error_.ok()) return;
  if (!in_step_) {
    error_ = absl::FailedPreconditionError(
        absl::StrCat("gradient range [", begin, ", ", end,
                     ") reported outside a step (BeginStep not called)"));
    return;
  }
  absl::MutexLock lock(&mu_);
  if (!aborted_.ok()) {
    error_ = aborted_;
    return;
  }
  if (push_ == nullptr) {
    // The streams start with the first ready range: the push overlaps the
    // rest of backward.
    PsStepControl control;
    control.switch_epoch = switch_epoch_;
    if (update_ == PsUpdate::kSync) control.late_scalars = step_scalars_;
    absl::StatusOr<std::unique_ptr<PsStep>> push =
        client_->StartStep(step_, grads_, params_, std::move(control));
    if (!push.ok()) {
      error_ = push.status();
      return;
    }
    push_ = *std::move(push);
  }
  push_->Ready(begin, end);
}

absl::StatusOr<SyncStats> PsSync::FinishStep(absl::Span<double> scalars,
                                             absl::Time deadline) {
  const absl::Time start = absl::Now();
  if (!in_step_) {
    return absl::FailedPreconditionError(
        "ps sync: FinishStep without BeginStep");
  }
  in_step_ = false;
  PsStep* push = nullptr;
  {
    absl::MutexLock lock(&mu_);
    push = push_.get();
  }
  if (error_.ok() && push == nullptr) {
    error_ = absl::InternalError(absl::StrCat(
        "step ", step_, ": backward reported no gradient to push"));
  }
  if (error_.ok() && scalars.size() != step_scalars_) {
    error_ = absl::InvalidArgumentError(absl::StrCat(
        "step ", step_, ": FinishStep got ", scalars.size(),
        " scalars, but the PS strategy was created for ", step_scalars_));
  }
  if (!error_.ok()) {
    if (push != nullptr) push->Cancel(error_);
    // The peers may wait for this rank's push: closing its connections
    // makes them fail at once, naming it.
    comm_->Abort(error_);
    return Annotate(error_, absl::StrCat("step ", step_, ": push to the PS"));
  }
  // Only this thread resets push_, so `push` stays valid.
  if (update_ == PsUpdate::kSync && step_scalars_ > 0) {
    push->SetScalars(std::vector<double>(scalars.begin(), scalars.end()));
  }
  absl::StatusOr<PsStepResult> result = push->Finish(deadline);
  if (!result.ok()) {
    comm_->Abort(result.status());
    return Annotate(result.status(),
                    absl::StrCat("step ", step_, ": push/pull with the PS"));
  }
  if (update_ == PsUpdate::kSync && result->version != step_ + 1) {
    const absl::Status s = absl::DataLossError(
        absl::StrCat("step ", step_,
                     ": the PS answered with the parameters "
                     "of step ",
                     result->version, " instead of ", step_ + 1));
    comm_->Abort(s);
    return s;
  }
  SyncStats stats;
  stats.bytes_sent = static_cast<int64_t>(result->bytes_sent);
  stats.bytes_received = static_cast<int64_t>(result->bytes_received);
  stats.operations = static_cast<int64_t>(client_->num_shards());
  // S: the gradient bytes that went, each element once (2 per element
  // for a 16-bit job, as the ring counts them).
  stats.payload_bytes = static_cast<int64_t>(result->bytes_sent);
  stats.busy = result->busy;
  stats.bus_factor = PsBusFactor(comm_->size(), client_->num_servers());
  stats.switch_epoch = result->switch_epoch;
  stats.switch_step = result->switch_step;
  if (update_ == PsUpdate::kSync && !scalars.empty()) {
    // Shard 0 summed every rank's scalars in rank order.
    if (result->scalar_sums.size() != scalars.size()) {
      const absl::Status s = absl::DataLossError(
          absl::StrCat("step ", step_, ": shard 0 answered with ",
                       result->scalar_sums.size(),
                       " step scalar sums instead of ", scalars.size()));
      comm_->Abort(s);
      return s;
    }
    std::copy(result->scalar_sums.begin(), result->scalar_sums.end(),
              scalars.begin());
  }
  stats.exposed = absl::Now() - start;
  return stats;
}

absl::Status PsSync::AllReduceScalars(absl::Span<double> values,
                                      absl::Time deadline) {
  if (in_step_) {
    return absl::FailedPreconditionError(
        "ps sync: AllReduceScalars during a step");
  }
  return SumOverRanks(comm_, values, deadline);
}

void PsSync::Abort(const absl::Status& reason) {
  {
    absl::MutexLock lock(&mu_);
    if (aborted_.ok()) {
      aborted_ = absl::AbortedError(
          absl::StrCat("ps sync aborted: ", reason.message()));
    }
    if (push_ != nullptr) push_->Cancel(reason);
  }
  // A FetchState or Pull outside a step (a switch back to the ring).
  client_->Cancel(reason);
  comm_->Abort(reason);
}

}  // namespace gradsync
