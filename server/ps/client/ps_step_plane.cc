// PsStep over the tensor plane (ps_client.h, options.tensor_plane): one
// shard's push and pull on the client's connection to its server
// (tensor_plane_client.h), with the same order, turns and waits as the
// gRPC streams of ps_step_stream.cc.
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "proto/ps.pb.h"
#include "server/ps/client/ps_client_core.h"
#include "server/ps/client/ps_step.h"
#include "server/ps/client/ps_step_call.h"

namespace gradsync {

void PsStep::PushPlane(size_t k) {
  const PsShardLocation& location = core_.shards[k].location;
  ShardCall& call = *calls_[k];
  absl::Status& status = call.status;
  absl::StatusOr<TensorPlaneChannel*> channel =
      core_.PlaneChannel(k, call_deadline_);
  if (!channel.ok()) {
    status = channel.status();
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    call.plane = *channel;
    status = StoppedLocked();  // a Cancel before the channel was known
  }
  if (!status.ok()) return;
  TensorPlaneChannel& plane = **channel;
  // The header goes at once: the shard starts the push (and checks it)
  // while backward still runs.
  // The connection's handshake proved the token: it never crosses the
  // plane.
  ps::PushHeader header = HeaderFor(k);
  header.clear_token();
  status = plane.SendHeader(header, call_deadline_);
  call.open = status.ok();
  const size_t chunk_elements =
      std::max<size_t>(1, core_.options.chunk_bytes / element_bytes());
  size_t sent_begin = location.end;
  // The previous partition on this server goes first (see ps_step.h).
  if (status.ok()) status = WaitPushTurn(k);
  call.busy_since = absl::Now();
  while (status.ok() && sent_begin > location.begin) {
    const absl::Time waiting = absl::Now();
    absl::StatusOr<size_t> low = WaitReady(k, sent_begin);
    call.busy.push_back({call.busy_since, waiting});
    call.busy_since = absl::Now();
    if (!low.ok()) {
      status = low.status();
      break;
    }
    while (status.ok() && sent_begin > *low) {
      const size_t n = std::min(chunk_elements, sent_begin - *low);
      const size_t at = sent_begin - n;
      status = plane.SendChunk(static_cast<int64_t>(at - location.begin),
                               GradBytes(at, n), call_deadline_);
      if (status.ok()) {
        sent_begin = at;
        bytes_sent_.fetch_add(n * element_bytes());
      }
    }
  }
  if (status.ok() && CarriesTrailer(k)) {
    const absl::Time waiting = absl::Now();
    absl::StatusOr<std::vector<double>> scalars = WaitScalars();
    call.busy.push_back({call.busy_since, waiting});
    call.busy_since = absl::Now();
    status = scalars.ok() ? plane.SendTrailer(*scalars, call_deadline_)
                          : scalars.status();
  }
  if (status.ok()) PushWritten(k);
}

absl::Status PsStep::PullPlane(size_t k) {
  ShardCall& call = *calls_[k];
  const PsShardLocation& location = core_.shards[k].location;
  absl::Status status = std::move(call.status);
  TensorPlaneChannel* plane;
  {
    absl::MutexLock lock(&mu_);
    plane = call.plane;
  }
  if (plane == nullptr) return status;  // never connected
  const size_t size = location.end - location.begin;
  if (status.ok()) {
    // Straight into the parameters: the reply is this shard's range.
    status = plane->ReadReply(&call.reply, ReplyBytes(location.begin, size),
                              call_deadline_);
  }
  if (status.ok() &&
      (call.reply.begin() != static_cast<int64_t>(location.begin) ||
       call.reply.end() != static_cast<int64_t>(location.end))) {
    status = absl::InternalError(absl::StrCat(
        "the reply covers [", call.reply.begin(), ", ", call.reply.end(),
        "), not the shard's [", location.begin, ", ", location.end,
        "); the server's shards do not match the job's layout"));
  }
  if (status.ok()) {
    WidenReply(location.begin, size);
    bytes_received_.fetch_add(size * element_bytes());
  }
  call.busy.push_back({call.busy_since, absl::Now()});
  return status;
}

}  // namespace gradsync
