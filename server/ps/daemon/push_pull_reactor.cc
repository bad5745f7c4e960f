#include "server/ps/daemon/push_pull_reactor.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "jobspec/grad_dtype.h"
#include "server/ps/daemon/call_waits.h"
#include "server/ps/daemon/ps_proto.h"

namespace gradsync {
namespace {

// Takes one message's chunk of the gradient into `push` without copying
// it: the push holds the message's receive buffers until the step is
// applied. Chunks tile the gradient from its start up (ascending) or from
// its end down (descending), each ascending inside.
[[nodiscard]] absl::Status TakeGradientChunk(DecodedTensorMessage& message,
                                             DataType wire_dtype,
                                             PsShard::Push* push) {
  const size_t n = message.data_size();
  if (n == 0) return absl::OkStatus();
  if (message.tensor() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a gradient chunk names tensor ", message.tensor(),
                     "; PushPull carries tensor 0 only"));
  }
  // fp32, or 2-byte elements for a 16-bit job (the shard's wire type).
  const size_t element = WireElementBytes(wire_dtype);
  if (n % element != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a chunk of ", n, " bytes is not whole ",
                     GradDtypeName(wire_dtype), " values"));
  }
  const size_t size = push->size_bytes();
  const size_t elements = size / element;
  const int64_t offset = message.offset();
  if (offset < 0 || static_cast<uint64_t>(offset) > elements ||
      n / element > elements - static_cast<size_t>(offset)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a gradient chunk of ", n / element, " elements at element ", offset,
        " is outside the shard's ", elements,
        " elements; the sender's sizes do not match the shard's"));
  }
  const size_t filled = push->filled_bytes();
  const size_t at = static_cast<size_t>(offset) * element;
  if (!push->descending() && at != filled) {
    return absl::InvalidArgumentError(
        absl::StrCat("a gradient chunk starts at element ", offset,
                     ", expected ", filled / element,
                     "; ascending chunks must follow each other "
                     "without gaps or overlaps"));
  }
  if (push->descending() && at + n != size - filled) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a descending gradient chunk covers elements [", offset, ", ",
        (at + n) / element, "), expected one that ends at element ",
        (size - filled) / element,
        "; descending chunks must precede each other without gaps or "
        "overlaps"));
  }
  std::vector<absl::Span<const char>> segments;
  std::shared_ptr<const void> holder = message.DetachData(&segments);
  if (push->descending()) std::reverse(segments.begin(), segments.end());
  for (absl::Span<const char> segment : segments) {
    RETURN_IF_ERROR(push->AppendExternal(segment, holder));
    holder = nullptr;  // held once is enough
  }
  return absl::OkStatus();
}

// The trailer after the gradient: a header holding the step scalars only.
[[nodiscard]] absl::Status TakeTrailer(DecodedTensorMessage& message,
                                       PsShard::Push* push) {
  if (!message.has_header() || message.data_size() != 0) {
    return absl::InvalidArgumentError(
        "more data arrived after the whole gradient where the trailer of "
        "step scalars was expected; the sender's sizes do not match the "
        "shard's");
  }
  ps::PushHeader trailer;
  RETURN_IF_ERROR(Annotate(message.ParseHeader(&trailer), "the trailer"));
  if (!trailer.job_id().empty() || trailer.shard() != 0 ||
      trailer.rank() != 0 || trailer.step() != 0 ||
      trailer.trailer_scalars() != 0 || trailer.switch_epoch() != 0) {
    return absl::InvalidArgumentError("the trailer may hold step scalars only");
  }
  return push->SetScalars(
      std::vector<double>(trailer.scalars().begin(), trailer.scalars().end()));
}

}  // namespace

PushPullReactor::PushPullReactor(const Env& env,
                                 grpc::CallbackServerContext* context)
    : env_(env), context_(context) {
  StartRead(&in_);
}

absl::Status PushPullReactor::Alive() const {
  return CheckCallAlive(*context_, *env_.shutting_down);
}

void PushPullReactor::OnReadDone(bool ok) {
  absl::Status status;
  switch (phase_) {
    case Phase::kHeader:
      if (!ok) {
        return Fail(absl::InvalidArgumentError(
            "PushPull: the stream ended before its header"));
      }
      status = first_.Parse(in_);
      if (status.ok())
        status = Annotate(first_.ParseHeader(&header_), "PushPull");
      if (!status.ok()) return Fail(status);
      env_.executor->Schedule([this] { Begin(); });
      return;
    case Phase::kGradient:
      if (!ok) return Fail(ReceiveError(StreamEnded()));
      status = message_.Parse(in_);
      if (status.ok() && message_.has_header()) {
        status = absl::InvalidArgumentError(
            "a second header arrived in the middle of the stream");
      }
      if (status.ok())
        status =
            TakeGradientChunk(message_, shard_->config().wire_dtype, &*push_);
      if (!status.ok()) return Fail(ReceiveError(status));
      phase_ = PhaseAfterChunk();
      StartRead(&in_);
      return;
    case Phase::kTrailer:
      if (!ok) return Fail(ReceiveError(StreamEnded()));
      status = message_.Parse(in_);
      if (status.ok()) status = TakeTrailer(message_, &*push_);
      if (!status.ok()) return Fail(ReceiveError(status));
      phase_ = Phase::kEnd;
      StartRead(&in_);
      return;
    case Phase::kEnd:
      if (ok) {
        return Fail(ReceiveError(absl::InvalidArgumentError(absl::StrCat(
            "more data arrived after the whole gradient (", push_->size_bytes(),
            " bytes); the sender's sizes do not match the shard's"))));
      }
      if (context_->IsCancelled()) return Fail(ReceiveError(StreamEnded()));
      env_.executor->Schedule([this] { CommitAndPull(); });
      return;
    case Phase::kReply:
      return;  // no read is started in this phase
  }
}

PushPullReactor::Phase PushPullReactor::PhaseAfterChunk() const {
  if (push_->filled_bytes() != push_->size_bytes()) return Phase::kGradient;
  return header_.trailer_scalars() > 0 ? Phase::kTrailer : Phase::kEnd;
}

absl::Status PushPullReactor::StreamEnded() const {
  std::string progress = push_.has_value()
                             ? absl::StrCat(push_->filled_bytes(), " of ",
                                            push_->size_bytes(), " bytes")
                             : "its header";
  if (phase_ == Phase::kTrailer) {
    progress = absl::StrCat("the whole gradient, without the trailer of ",
                            header_.trailer_scalars(),
                            " step scalars its header announced");
  }
  if (context_->IsCancelled()) {
    return absl::CancelledError(
        absl::StrCat("the client went away after ", progress));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("the stream ended after ", progress,
                   "; the sender's sizes do not match the shard's"));
}

void PushPullReactor::Begin() {
  const absl::Status status = DoBegin();
  if (!status.ok()) Fail(status);
}

absl::Status PushPullReactor::DoBegin() {
  ASSIGN_OR_RETURN(chunk_bytes_, ResolveChunkBytes(header_.chunk_bytes()));
  RETURN_IF_ERROR(env_.service->CheckToken(header_.job_id(), header_.token()));
  ASSIGN_OR_RETURN(shard_,
                   env_.service->FindShard(header_.job_id(), header_.shard()));
  deadline_ = CallDeadline(*context_, *shard_);
  if (header_.pull_only()) {
    if (first_.data_size() != 0) {
      return absl::InvalidArgumentError(
          "PushPull: a pull-only request carries gradient data");
    }
    pull_step_ = header_.step();
    return PullAndReply();
  }
  PushOptions options;
  options.descending = header_.descending();
  ASSIGN_OR_RETURN(options.scalars, PushScalarsFromHeader(header_));
  options.switch_epoch = header_.switch_epoch();
  ASSIGN_OR_RETURN(options.learning_rate, PushLearningRate(header_));
  const int rank = header_.rank();
  const int64_t step = header_.step();
  ASSIGN_OR_RETURN(PsShard::Push push,
                   WaitInSlices(
                       deadline_, [this] { return Alive(); },
                       [&](absl::Time d) {
                         return shard_->BeginPush(rank, step, d, options);
                       }));
  push_.emplace(std::move(push));
  RETURN_IF_ERROR(ReceiveError(
      TakeGradientChunk(first_, shard_->config().wire_dtype, &*push_)));
  pull_step_ = step + 1;
  phase_ = PhaseAfterChunk();
  StartRead(&in_);
  return absl::OkStatus();
}

void PushPullReactor::CommitAndPull() {
  const absl::Status status = DoCommitAndPull();
  if (!status.ok()) Fail(status);
}

absl::Status PushPullReactor::DoCommitAndPull() {
  PsShard::Push push = std::move(*push_);
  push_.reset();
  RETURN_IF_ERROR(shard_->Commit(std::move(push), deadline_));
  return PullAndReply();
}

absl::Status PushPullReactor::PullAndReply() {
  const int rank = header_.rank();
  ASSIGN_OR_RETURN(view_, WaitInSlices(
                              deadline_, [this] { return Alive(); },
                              [&](absl::Time d) {
                                return shard_->Pull(rank, pull_step_, d);
                              }));
  reply_ = PullHeaderFromView(*view_, *shard_);
  phase_ = Phase::kReply;
  // A 16-bit job's pull sends the parameters rounded once on the shard.
  const DataType wire = shard_->config().wire_dtype;
  reply_messages_.emplace(
      &reply_, std::vector<absl::Span<const char>>{view_->PullBytes()},
      WireElementBytes(wire), chunk_bytes_, view_);
  WriteNext();
  return absl::OkStatus();
}

void PushPullReactor::WriteNext() {
  out_ = reply_messages_->Next();
  if (reply_messages_->done()) {
    StartWriteAndFinish(&out_, grpc::WriteOptions(), grpc::Status::OK);
  } else {
    StartWrite(&out_);
  }
}

void PushPullReactor::OnWriteDone(bool ok) {
  if (ok) return WriteNext();
  absl::Status status = Alive();
  if (status.ok()) {
    status = absl::UnavailableError(
        "PushPull: the client stopped reading the parameters");
  }
  Fail(status);
}

void PushPullReactor::Fail(const absl::Status& status) {
  push_.reset();  // abandons an unfinished push: the shard is unchanged
  Finish(ToGrpcStatus(status));
}

absl::Status PushPullReactor::ReceiveError(const absl::Status& status) const {
  return Annotate(status, absl::StrCat("PushPull from rank ", header_.rank(),
                                       " for step ", header_.step()));
}

}  // namespace gradsync
