#include "server/ps/ps_step.h"

#include <grpcpp/client_context.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/grpc_connect.h"
#include "common/status_macros.h"
#include "common/sync_bandwidth.h"
#include "proto/ps.pb.h"
#include "server/ps/ps_client.h"
#include "server/ps/ps_client_stream.h"
#include "server/ps/ps_transport.h"
#include "server/ps/raw_tensor_rpc.h"
#include "server/ps/tensor_codec.h"
#include "server/ps/tensor_stream.h"

namespace gradsync {
namespace {

// Gaps listed in errors about elements never marked ready.
constexpr size_t kMaxGapsNamed = 4;
// Partitions of one server a rank may have pushed without their parameters
// back yet (WaitPushTurn).
constexpr size_t kPipelineDepth = 4;

}  // namespace

struct PsStep::ShardCall {
  // Made before the thread starts (so that Cancel can reach the call
  // early) and destroyed by the thread once the call is over: gRPC keeps
  // the last messages it sent referenced until then. Guarded by mu_
  // (the pointer; the thread uses the object while it runs).
  std::unique_ptr<grpc::ClientContext> context;
  std::thread thread;
  absl::Status status;  // written by the thread, read after the join
  ps::PullHeader reply;
  // When the stream was busy (not waiting for Ready); written by the
  // thread, read after the join.
  std::vector<TimeInterval> busy;
  bool done = false;  // guarded by PsStep::mu_
};

PsStep::PsStep(PsClient* client, int64_t step, absl::Span<const float> grads,
               absl::Span<float> params, PsStepControl control,
               absl::Time call_deadline)
    : client_(client),
      step_(step),
      grads_(grads),
      params_(params),
      control_(std::move(control)),
      call_deadline_(call_deadline) {
  push_written_.assign(client_->shards_.size(), false);
  for (size_t k = 0; k < client_->shards_.size(); ++k) {
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
  for (size_t k = 0; k < calls_.size(); ++k) {
    calls_[k]->thread = std::thread([this, k]() { ShardDone(k, RunShard(k)); });
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
  ready_[begin] = end;
  ready_count_ += count;
  return absl::OkStatus();
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
        "rank ", client_->rank_, ", step ", step_,
        ": the step's scalars were never given (SetScalars) before the "
        "client's timeout"));
  }
  RETURN_IF_ERROR(StoppedLocked());
  return *late_scalars_;
}

absl::Status PsStep::WaitPushTurn(size_t k) {
  const size_t before = k + 1;
  if (before >= client_->shards_.size() ||
      client_->shards_[before].location.address !=
          client_->shards_[k].location.address) {
    return absl::OkStatus();
  }
  // The partition kPipelineDepth turns back must have its reply: no rank
  // runs further ahead of the server's applied partitions than that (see
  // the top of ps_step.h).
  const size_t credit = k + kPipelineDepth;
  const bool wait_credit = credit < client_->shards_.size() &&
                           client_->shards_[credit].location.address ==
                               client_->shards_[k].location.address;
  auto go = [this, before, credit, wait_credit]() {
    return !cancelled_.ok() || failed_shard_ >= 0 ||
           (push_written_[before] && (!wait_credit || calls_[credit]->done));
  };
  absl::MutexLock lock(&mu_);
  if (!mu_.AwaitWithDeadline(absl::Condition(&go), call_deadline_)) {
    return absl::DeadlineExceededError(
        absl::StrCat("rank ", client_->rank_, ", step ", step_, ": partition ",
                     before, " on ", client_->shards_[k].location.address,
                     " did not finish its push before the client's timeout"));
  }
  return StoppedLocked();
}

void PsStep::PushWritten(size_t k) {
  absl::MutexLock lock(&mu_);
  push_written_[k] = true;
}

absl::StatusOr<size_t> PsStep::WaitReady(size_t k, size_t sent_begin) {
  const size_t floor = client_->shards_[k].location.begin;
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
        "rank ", client_->rank_, ", step ", step_, ": gradient elements ",
        MissingLocked(),
        " were never marked ready before the client's timeout; did "
        "backward report every bucket?"));
  }
  RETURN_IF_ERROR(StoppedLocked());
  return run_begin();
}

absl::Status PsStep::RunShard(size_t k) {
  const PsShardLocation& location = client_->shards_[k].location;
  const PsClientOptions& options = client_->options_;
  ShardCall& call = *calls_[k];
  grpc::ClientContext* context;
  {
    absl::MutexLock lock(&mu_);
    context = call.context.get();
  }
  // A connection attempt that gRPC fails spuriously must not fail the step
  // (see ConnectChannel); a cancelled step stops waiting.
  RETURN_IF_ERROR(ConnectChannel(client_->shards_[k].channel.get(),
                                 call_deadline_, [this]() -> absl::Status {
                                   {
                                     absl::MutexLock lock(&mu_);
                                     if (!cancelled_.ok()) return cancelled_;
                                   }
                                   absl::MutexLock lock(&client_->cancel_mu_);
                                   return client_->cancelled_;
                                 }));
  SendPin pin;
  absl::Status status;
  {
    std::unique_ptr<RawClientStream> stream =
        StartPushPull(client_->shards_[k].channel.get(), context);
    ps::PushHeader header;
    header.set_job_id(client_->job_id_);
    header.set_shard(location.shard);
    header.set_rank(client_->rank_);
    header.set_step(step_);
    header.set_chunk_bytes(static_cast<int64_t>(options.chunk_bytes));
    header.set_descending(true);
    header.mutable_scalars()->Add(control_.scalars.begin(),
                                  control_.scalars.end());
    // Shard 0's reply carries the step control the ranks act on, and its
    // range is what backward finishes last: the late scalars go there.
    const bool trailer = k == 0 && control_.late_scalars > 0;
    if (trailer) {
      header.set_trailer_scalars(static_cast<int32_t>(control_.late_scalars));
    }
    header.set_switch_epoch(control_.switch_epoch);
    // The header goes at once: the shard starts the push (and checks it)
    // while backward still runs.
    bool open = stream->Write(EncodeTensorMessage(&header, 0, 0, {}, nullptr));
    const size_t chunk_floats =
        std::max<size_t>(1, options.chunk_bytes / sizeof(float));
    size_t sent_begin = location.end;
    // The previous partition on this server goes first (see the top).
    if (open) status = WaitPushTurn(k);
    absl::Time busy_since = absl::Now();
    while (open && status.ok() && sent_begin > location.begin) {
      const absl::Time waiting = absl::Now();
      absl::StatusOr<size_t> low = WaitReady(k, sent_begin);
      call.busy.push_back({busy_since, waiting});
      busy_since = absl::Now();
      if (!low.ok()) {
        status = low.status();
        break;
      }
      while (open && sent_begin > *low) {
        const size_t n = std::min(chunk_floats, sent_begin - *low);
        const size_t at = sent_begin - n;
        open = stream->Write(EncodeTensorMessage(
            nullptr, 0, static_cast<int64_t>(at - location.begin),
            AsBytes(grads_.subspan(at, n)), pin.pin()));
        if (open) {
          sent_begin = at;
          bytes_sent_.fetch_add(n * sizeof(float));
        }
      }
    }
    if (open && status.ok() && trailer) {
      const absl::Time waiting = absl::Now();
      absl::StatusOr<std::vector<double>> scalars = WaitScalars();
      call.busy.push_back({busy_since, waiting});
      busy_since = absl::Now();
      if (scalars.ok()) {
        ps::PushHeader last;
        last.mutable_scalars()->Add(scalars->begin(), scalars->end());
        open = stream->Write(EncodeTensorMessage(&last, 0, 0, {}, nullptr));
      } else {
        status = scalars.status();
      }
    }
    const size_t size = location.end - location.begin;
    bool complete = false;
    if (open && status.ok()) {
      stream->WritesDone();
      PushWritten(k);
      status = ReadPullReply(stream.get(), location,
                             params_.subspan(location.begin, size), &call.reply,
                             &bytes_received_, &complete);
    }
    status = FinishPushPull(context, stream.get(), std::move(status), open,
                            complete, location);
    call.busy.push_back({busy_since, absl::Now()});
  }
  {
    absl::MutexLock lock(&mu_);
    call.context.reset();
  }
  RETURN_IF_ERROR(pin.Release());
  return status;
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
  client_->step_in_flight_.store(false);
}

absl::Status PsStep::ErrorLocked() const {
  if (!cancelled_.ok()) {
    return Annotate(cancelled_,
                    absl::StrCat("rank ", client_->rank_, ", step ", step_));
  }
  if (failed_shard_ < 0) return absl::OkStatus();
  const size_t k = static_cast<size_t>(failed_shard_);
  return ShardError(client_->shards_[k].location,
                    absl::StrCat("rank ", client_->rank_, ", step ", step_),
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
        const PsShardLocation& l = client_->shards_[k].location;
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
    client_->last_versions_[k] = calls_[k]->reply.version();
    busy.insert(busy.end(), calls_[k]->busy.begin(), calls_[k]->busy.end());
  }
  result.busy = BusyTime(std::move(busy));
  client_->bytes_sent_.fetch_add(result.bytes_sent);
  client_->bytes_received_.fetch_add(result.bytes_received);
  return result;
}

}  // namespace gradsync
