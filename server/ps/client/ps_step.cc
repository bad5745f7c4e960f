#include "server/ps/client/ps_step.h"

#include <grpcpp/client_context.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collectives/half.h"
#include "common/status_macros.h"
#include "proto/ps.pb.h"
#include "server/ps/client/ps_client_core.h"
#include "server/ps/client/ps_step_call.h"
#include "server/ps/transport/tensor_codec.h"
#include "study/alpha_beta/sync_bandwidth.h"

namespace gradsync {
namespace {

// Gaps listed in errors about elements never marked ready.
constexpr size_t kMaxGapsNamed = 4;
// Partitions of one server a rank may have pushed without their parameters
// back yet (WaitPushTurn).
constexpr size_t kPipelineDepth = 4;

}  // namespace

std::unique_ptr<PsStep> PsStep::Launch(PsClientCore& core, int64_t step,
                                       absl::Span<const float> grads,
                                       absl::Span<float> params,
                                       PsStepControl control,
                                       absl::Time call_deadline) {
  std::unique_ptr<PsStep> ps_step(
      new PsStep(core, step, grads, params, std::move(control), call_deadline));
  ps_step->Start();
  return ps_step;
}

PsStep::PsStep(PsClientCore& core, int64_t step, absl::Span<const float> grads,
               absl::Span<float> params, PsStepControl control,
               absl::Time call_deadline)
    : core_(core),
      step_(step),
      grads_(grads),
      params_(params),
      control_(std::move(control)),
      call_deadline_(call_deadline),
      wire_dtype_(core.options.wire_dtype),
      element_bytes_(DataTypeSize(core.options.wire_dtype)) {
  if (element_bytes_ == sizeof(uint16_t)) {
    wire_grads_.resize(grads.size());
    wire_params_.resize(params.size());
  }
  push_written_.assign(core_.shards.size(), false);
  pushed_.assign(core_.shards.size(), false);
  for (size_t k = 0; k < core_.shards.size(); ++k) {
    calls_.push_back(std::make_unique<ShardCall>());
    calls_.back()->context = std::make_unique<grpc::ClientContext>();
    calls_.back()->context->set_deadline(absl::ToChronoTime(call_deadline));
  }
}

PsStep::~PsStep() {
  Cancel(absl::CancelledError(
      absl::StrCat("step ", step_, " was dropped before Finish")));
  Join();
}

void PsStep::Start() {
  for (const PsClientCore::ServerRun& run : core_.ServerRuns()) {
    const size_t first = run.first;
    const size_t last = run.last;
    if (first == last) {
      calls_[first]->thread =
          std::thread([this, k = first]() { ShardDone(k, RunShard(k)); });
    } else {
      // A server's partitions: one thread pushes them in turn, another
      // reads their replies in the same order (see the top of ps_step.h).
      lanes_.emplace_back(
          [this, first, last]() { RunLaneWriter(first, last); });
      lanes_.emplace_back(
          [this, first, last]() { RunLaneReader(first, last); });
    }
  }
}

void PsStep::Ready(size_t begin, size_t end) {
  const absl::Status status = MarkReady(begin, end);
  if (!status.ok()) Cancel(status);
}

absl::Status PsStep::MarkReady(size_t begin, size_t end) {
  const size_t total = grads_.size();
  if (begin >= end || end > total) {
    return absl::InvalidArgumentError(
        absl::StrCat("Ready(", begin, ", ", end,
                     ") is not a non-empty range inside the gradient's ", total,
                     " elements; check the bucket ranges backward reports"));
  }
  const size_t count = end - begin;
  const size_t first = begin;
  absl::MutexLock lock(&mu_);
  auto next = ready_.upper_bound(begin);
  if (next != ready_.end() && next->first < end) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Ready(", begin, ", ", end, ") overlaps [", next->first, ", ",
        next->second, "), marked ready before; mark each element once"));
  }
  if (next != ready_.begin()) {
    auto prev = std::prev(next);
    if (prev->second > begin) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Ready(", begin, ", ", end, ") overlaps [", prev->first, ", ",
          prev->second, "), marked ready before; mark each element once"));
    }
    if (prev->second == begin) {
      begin = prev->first;
      ready_.erase(prev);
    }
  }
  if (next != ready_.end() && next->first == end) {
    end = next->second;
    ready_.erase(next);
  }
  if (!wire_grads_.empty()) {
    // Rounded (once) before the range is marked: no stream reads it
    // until then.
    if (wire_dtype_ == DataType::kBFloat16) {
      FloatsToBFloat16(grads_.data() + first, wire_grads_.data() + first,
                       count);
    } else {
      FloatsToFloat16(grads_.data() + first, wire_grads_.data() + first, count);
    }
  }
  ready_[begin] = end;
  ready_count_ += count;
  return absl::OkStatus();
}

absl::Span<const char> PsStep::GradBytes(size_t at, size_t n) const {
  if (wire_grads_.empty()) return AsBytes(grads_.subspan(at, n));
  return absl::Span<const char>(
      reinterpret_cast<const char*>(wire_grads_.data() + at),
      n * sizeof(uint16_t));
}

absl::Span<char> PsStep::ReplyBytes(size_t begin, size_t n) {
  if (wire_params_.empty()) {
    return absl::Span<char>(reinterpret_cast<char*>(params_.data() + begin),
                            n * sizeof(float));
  }
  return absl::Span<char>(reinterpret_cast<char*>(wire_params_.data() + begin),
                          n * sizeof(uint16_t));
}

void PsStep::WidenReply(size_t begin, size_t n) {
  if (wire_params_.empty()) return;
  if (wire_dtype_ == DataType::kBFloat16) {
    BFloat16ToFloats(wire_params_.data() + begin, params_.data() + begin, n);
  } else {
    Float16ToFloats(wire_params_.data() + begin, params_.data() + begin, n);
  }
}

std::string PsStep::MissingLocked() const {
  std::vector<std::string> gaps;
  size_t at = 0;
  size_t more = 0;
  auto gap = [&](size_t b, size_t e) {
    if (b >= e) return;
    if (gaps.size() < kMaxGapsNamed) {
      gaps.push_back(absl::StrCat("[", b, ", ", e, ")"));
    } else {
      ++more;
    }
  };
  for (const auto& [b, e] : ready_) {
    gap(at, b);
    at = e;
  }
  gap(at, grads_.size());
  std::string text = absl::StrJoin(gaps, ", ");
  if (more > 0) absl::StrAppend(&text, " and ", more, " more");
  return text;
}

void PsStep::Cancel(const absl::Status& reason) {
  {
    absl::MutexLock lock(&mu_);
    if (!cancelled_.ok()) return;
    cancelled_ = reason.ok() ? absl::CancelledError(absl::StrCat(
                                   "step ", step_, " was cancelled"))
                             : reason;
  }
  CancelStreams(calls_.size());
}

void PsStep::CancelStreams(size_t except) {
  absl::MutexLock lock(&mu_);
  for (size_t k = 0; k < calls_.size(); ++k) {
    if (k != except && calls_[k]->context != nullptr) {
      calls_[k]->context->TryCancel();
    }
    // A tensor plane connection carries its server's other partitions
    // too: shutting it ends them all (the step has failed anyway).
    if (k != except && calls_[k]->plane != nullptr) {
      calls_[k]->plane->Shutdown();
    }
  }
}

absl::Status PsStep::StoppedLocked() const {
  if (!cancelled_.ok()) return cancelled_;
  if (failed_shard_ >= 0) {
    return absl::CancelledError(
        absl::StrCat("ps shard ", failed_shard_, " failed first"));
  }
  return absl::OkStatus();
}

void PsStep::SetScalars(std::vector<double> scalars) {
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    if (control_.late_scalars == 0) {
      status = absl::FailedPreconditionError(
          "SetScalars on a step started without late_scalars");
    } else if (late_scalars_.has_value()) {
      status = absl::FailedPreconditionError("SetScalars was called twice");
    } else if (scalars.size() != control_.late_scalars) {
      status = absl::InvalidArgumentError(absl::StrCat(
          "SetScalars got ", scalars.size(),
          " scalars, but the step was started for ", control_.late_scalars));
    } else {
      late_scalars_ = std::move(scalars);
    }
  }
  if (!status.ok()) Cancel(status);
}

absl::StatusOr<std::vector<double>> PsStep::WaitScalars() {
  auto go = [this]() {
    return !cancelled_.ok() || failed_shard_ >= 0 || late_scalars_.has_value();
  };
  absl::MutexLock lock(&mu_);
  if (!mu_.AwaitWithDeadline(absl::Condition(&go), call_deadline_)) {
    return absl::DeadlineExceededError(absl::StrCat(
        "rank ", core_.rank, ", step ", step_,
        ": the step's scalars were never given (SetScalars) before the "
        "client's timeout"));
  }
  RETURN_IF_ERROR(StoppedLocked());
  return *late_scalars_;
}

absl::Status PsStep::WaitPushTurn(size_t k) {
  const size_t before = k + 1;
  if (before >= core_.shards.size() || core_.shards[before].location.address !=
                                           core_.shards[k].location.address) {
    return absl::OkStatus();
  }
  // The partition kPipelineDepth turns back must have its reply: no rank
  // runs further ahead of the server's applied partitions than that (see
  // the top of ps_step.h).
  const size_t credit = k + kPipelineDepth;
  const bool wait_credit =
      credit < core_.shards.size() &&
      core_.shards[credit].location.address == core_.shards[k].location.address;
  auto turn = [this, before]() {
    return !cancelled_.ok() || failed_shard_ >= 0 || push_written_[before];
  };
  auto go = [this, before, credit, wait_credit]() {
    return !cancelled_.ok() || failed_shard_ >= 0 ||
           (push_written_[before] && (!wait_credit || calls_[credit]->done));
  };
  absl::MutexLock lock(&mu_);
  // The turn, then the credit: a push the credit holds back is counted
  // (PsClientStats::credit_waits).
  const bool turn_came =
      mu_.AwaitWithDeadline(absl::Condition(&turn), call_deadline_);
  if (turn_came && !go()) core_.credit_waits.fetch_add(1);
  if (!turn_came ||
      !mu_.AwaitWithDeadline(absl::Condition(&go), call_deadline_)) {
    return absl::DeadlineExceededError(
        absl::StrCat("rank ", core_.rank, ", step ", step_, ": partition ",
                     before, " on ", core_.shards[k].location.address,
                     " did not finish its push before the client's timeout"));
  }
  return StoppedLocked();
}

void PsStep::PushWritten(size_t k) {
  absl::MutexLock lock(&mu_);
  push_written_[k] = true;
}

absl::StatusOr<size_t> PsStep::WaitReady(size_t k, size_t sent_begin) {
  const size_t floor = core_.shards[k].location.begin;
  // The start of the ready run that ends at sent_begin (sent_begin if
  // element sent_begin - 1 is not ready).
  auto run_begin = [this, sent_begin, floor]() {
    auto it = ready_.upper_bound(sent_begin - 1);
    if (it == ready_.begin()) return sent_begin;
    --it;
    if (it->second < sent_begin) return sent_begin;
    return std::max(it->first, floor);
  };
  auto go = [this, &run_begin, sent_begin]() {
    return !cancelled_.ok() || failed_shard_ >= 0 || run_begin() < sent_begin;
  };
  absl::MutexLock lock(&mu_);
  if (!mu_.AwaitWithDeadline(absl::Condition(&go), call_deadline_)) {
    return absl::DeadlineExceededError(absl::StrCat(
        "rank ", core_.rank, ", step ", step_, ": gradient elements ",
        MissingLocked(),
        " were never marked ready before the client's timeout; did "
        "backward report every bucket?"));
  }
  RETURN_IF_ERROR(StoppedLocked());
  return run_begin();
}

void PsStep::ShardDone(size_t k, absl::Status status) {
  bool first_failure = false;
  {
    absl::MutexLock lock(&mu_);
    calls_[k]->status = std::move(status);
    calls_[k]->done = true;
    ++done_;
    if (!calls_[k]->status.ok() && cancelled_.ok() && failed_shard_ < 0) {
      failed_shard_ = static_cast<int>(k);
      first_failure = true;
    }
  }
  // The step has failed: the other shards need not wait for it.
  if (first_failure) CancelStreams(k);
}

void PsStep::Join() {
  if (joined_) return;
  joined_ = true;
  for (const std::unique_ptr<ShardCall>& call : calls_) {
    if (call->thread.joinable()) call->thread.join();
  }
  for (std::thread& lane : lanes_) lane.join();
  bool failed;
  {
    absl::MutexLock lock(&mu_);
    failed = !cancelled_.ok() || failed_shard_ >= 0;
    // The connections are the client's, and its next step's: a Cancel
    // of this finished step must not reach them.
    for (const std::unique_ptr<ShardCall>& call : calls_) {
      call->plane = nullptr;
    }
  }
  // A failed step may leave its tensor plane connections in mid-request:
  // the next one connects again.
  if (failed && core_.options.tensor_plane) core_.DropPlanes();
  core_.step_in_flight.store(false);
}

absl::Status PsStep::ErrorLocked() const {
  if (!cancelled_.ok()) {
    return Annotate(cancelled_,
                    absl::StrCat("rank ", core_.rank, ", step ", step_));
  }
  if (failed_shard_ < 0) return absl::OkStatus();
  const size_t k = static_cast<size_t>(failed_shard_);
  return ShardError(core_.shards[k].location,
                    absl::StrCat("rank ", core_.rank, ", step ", step_),
                    calls_[k]->status);
}

absl::StatusOr<PsStepResult> PsStep::Finish(absl::Time deadline) {
  bool cancel = false;
  {
    absl::MutexLock lock(&mu_);
    if (finished_) {
      return absl::FailedPreconditionError(
          absl::StrCat("step ", step_, ": Finish was called already"));
    }
    finished_ = true;
    // A shard's failure explains the step best; else these do.
    if (ready_count_ != grads_.size() && cancelled_.ok() && failed_shard_ < 0) {
      cancelled_ = absl::FailedPreconditionError(absl::StrCat(
          "Finish was called before gradient elements ", MissingLocked(),
          " were marked ready; call Ready for every bucket first"));
    }
    if (control_.late_scalars > 0 && !late_scalars_.has_value() &&
        cancelled_.ok() && failed_shard_ < 0) {
      cancelled_ = absl::FailedPreconditionError(
          absl::StrCat("Finish was called before SetScalars gave the step's ",
                       control_.late_scalars, " late scalars"));
    }
    auto all_done = [this]() { return done_ == calls_.size(); };
    if (cancelled_.ok() &&
        !mu_.AwaitWithDeadline(absl::Condition(&all_done), deadline) &&
        cancelled_.ok() && failed_shard_ < 0) {
      std::vector<std::string> waiting;
      for (size_t k = 0; k < calls_.size(); ++k) {
        if (calls_[k]->done) continue;
        const PsShardLocation& l = core_.shards[k].location;
        waiting.push_back(absl::StrCat(l.shard, " at ", l.address));
      }
      cancelled_ = absl::DeadlineExceededError(absl::StrCat(
          "Finish timed out waiting for ps shards ",
          absl::StrJoin(waiting, ", "),
          "; look at those servers' logs and at the slowest rank"));
    }
    cancel = !cancelled_.ok();
  }
  if (cancel) CancelStreams(calls_.size());
  Join();

  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(ErrorLocked());
  PsStepResult result;
  const ps::PullHeader& reply = calls_[0]->reply;
  result.scalar_sums.assign(reply.scalar_sums().begin(),
                            reply.scalar_sums().end());
  result.switch_epoch = reply.switch_epoch();
  result.switch_step = reply.switch_step();
  result.version = reply.version();
  result.bytes_sent = bytes_sent_.load();
  result.bytes_received = bytes_received_.load();
  std::vector<TimeInterval> busy;
  for (size_t k = 0; k < calls_.size(); ++k) {
    core_.last_versions[k] = calls_[k]->reply.version();
    busy.insert(busy.end(), calls_[k]->busy.begin(), calls_[k]->busy.end());
  }
  result.busy = BusyTime(std::move(busy));
  core_.bytes_sent.fetch_add(result.bytes_sent);
  core_.bytes_received.fetch_add(result.bytes_received);
  return result;
}

}  // namespace gradsync
