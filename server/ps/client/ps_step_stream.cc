// PsStep's streams: one shard's push and pull, and the two threads that
// run a partitioned server's shards (ps_step.h).
#include <grpcpp/client_context.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/grpc_connect.h"
#include "common/status_macros.h"
#include "proto/ps.pb.h"
#include "server/ps/client/ps_client_core.h"
#include "server/ps/client/ps_client_stream.h"
#include "server/ps/client/ps_step.h"
#include "server/ps/client/ps_step_call.h"
#include "server/ps/transport/raw_tensor_rpc.h"
#include "server/ps/transport/tensor_codec.h"
#include "server/ps/transport/tensor_stream.h"

namespace gradsync {
namespace {

// How long past the call's deadline a lane's reader waits for its writer
// before it ends the step (RunLaneReader).
constexpr absl::Duration kLaneGrace = absl::Seconds(5);

}  // namespace

absl::Status PsStep::RunShard(size_t k) {
  Push(k);
  return Pull(k);
}

ps::PushHeader PsStep::HeaderFor(size_t k) const {
  const PsShardLocation& location = core_.shards[k].location;
  ps::PushHeader header;
  header.set_job_id(core_.job_id);
  header.set_token(core_.options.token);
  header.set_shard(location.shard);
  header.set_rank(core_.rank);
  header.set_step(step_);
  header.set_chunk_bytes(static_cast<int64_t>(core_.options.chunk_bytes));
  header.set_descending(true);
  header.mutable_scalars()->Add(control_.scalars.begin(),
                                control_.scalars.end());
  // Shard 0's reply carries the step control the ranks act on, and its
  // range is what backward finishes last: the late scalars go there.
  if (CarriesTrailer(k)) {
    header.set_trailer_scalars(static_cast<int32_t>(control_.late_scalars));
  }
  header.set_switch_epoch(control_.switch_epoch);
  header.set_learning_rate(control_.learning_rate);
  return header;
}

void PsStep::Push(size_t k) {
  if (core_.shards[k].plane) return PushPlane(k);
  const PsShardLocation& location = core_.shards[k].location;
  const PsClientOptions& options = core_.options;
  ShardCall& call = *calls_[k];
  grpc::ClientContext* context;
  {
    absl::MutexLock lock(&mu_);
    context = call.context.get();
  }
  // A connection attempt that gRPC fails spuriously must not fail the step
  // (see ConnectChannel); a cancelled step stops waiting.
  call.status = ConnectChannel(core_.shards[k].channel.get(), call_deadline_,
                               [this]() -> absl::Status {
                                 {
                                   absl::MutexLock lock(&mu_);
                                   if (!cancelled_.ok()) return cancelled_;
                                 }
                                 return core_.cancelled();
                               });
  if (!call.status.ok()) return;
  call.pin = std::make_unique<SendPin>();
  call.stream = StartPushPull(core_.shards[k].channel.get(), context);
  const ps::PushHeader header = HeaderFor(k);
  const bool trailer = CarriesTrailer(k);
  // The header goes at once: the shard starts the push (and checks it)
  // while backward still runs.
  bool& open = call.open;
  absl::Status& status = call.status;
  open = call.stream->Write(EncodeTensorMessage(&header, 0, 0, {}, nullptr));
  const size_t chunk_elements =
      std::max<size_t>(1, options.chunk_bytes / element_bytes());
  size_t sent_begin = location.end;
  // The previous partition on this server goes first (see the top).
  if (open) status = WaitPushTurn(k);
  absl::Time& busy_since = call.busy_since;
  busy_since = absl::Now();
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
      const size_t n = std::min(chunk_elements, sent_begin - *low);
      const size_t at = sent_begin - n;
      open = call.stream->Write(EncodeTensorMessage(
          nullptr, 0, static_cast<int64_t>(at - location.begin),
          GradBytes(at, n), call.pin->pin()));
      if (open) {
        sent_begin = at;
        bytes_sent_.fetch_add(n * element_bytes());
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
      open = call.stream->Write(EncodeTensorMessage(&last, 0, 0, {}, nullptr));
    } else {
      status = scalars.status();
    }
  }
  if (open && status.ok()) {
    call.stream->WritesDone();
    PushWritten(k);
  }
}

absl::Status PsStep::Pull(size_t k) {
  if (core_.shards[k].plane) return PullPlane(k);
  ShardCall& call = *calls_[k];
  if (call.stream == nullptr) return call.status;  // never connected
  const PsShardLocation& location = core_.shards[k].location;
  grpc::ClientContext* context;
  {
    absl::MutexLock lock(&mu_);
    context = call.context.get();
  }
  const size_t size = location.end - location.begin;
  bool complete = false;
  absl::Status status = std::move(call.status);
  if (call.open && status.ok()) {
    status = ReadPullReply(call.stream.get(), location,
                           ReplyBytes(location.begin, size), element_bytes(),
                           &call.reply, &bytes_received_, &complete);
  }
  status = FinishPushPull(context, call.stream.get(), std::move(status),
                          call.open, complete, location);
  if (status.ok()) WidenReply(location.begin, size);
  call.busy.push_back({call.busy_since, absl::Now()});
  call.stream.reset();
  {
    absl::MutexLock lock(&mu_);
    call.context.reset();
  }
  RETURN_IF_ERROR(call.pin->Release());
  return status;
}

void PsStep::RunLaneWriter(size_t first, size_t last) {
  for (size_t k = last + 1; k-- > first;) {
    Push(k);
    absl::MutexLock lock(&mu_);
    pushed_[k] = true;
  }
}

void PsStep::RunLaneReader(size_t first, size_t last) {
  for (size_t k = last + 1; k-- > first;) {
    auto pushed = [this, k]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return static_cast<bool>(pushed_[k]);
    };
    {
      absl::MutexLock lock(&mu_);
      // Push(k) ends by the call's deadline (every wait in it and the
      // stream have it); past it, end the step, then wait for the writer.
      if (!mu_.AwaitWithDeadline(absl::Condition(&pushed),
                                 call_deadline_ + kLaneGrace)) {
        mu_.Unlock();
        Cancel(absl::DeadlineExceededError(absl::StrCat(
            "rank ", core_.rank, ", step ", step_, ": the push of ps shard ", k,
            " did not end by the client's timeout")));
        mu_.Lock();
        mu_.Await(absl::Condition(&pushed));
      }
    }
    ShardDone(k, Pull(k));
  }
}

}  // namespace gradsync
