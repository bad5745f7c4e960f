#include "server/ps/client/ps_client_stream.h"

#include <grpcpp/support/byte_buffer.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/grpc_status.h"
#include "common/optimizer.h"
#include "common/status_macros.h"
#include "server/ps/client/ps_client_core.h"
#include "server/ps/transport/tensor_codec.h"
#include "server/ps/transport/tensor_stream.h"

namespace gradsync {
namespace {

// How long a finished call may take to let go of the memory it sent (gRPC
// drops its references as soon as the bytes are on the socket or the
// stream is cancelled; this is a bound, not an expected delay).
constexpr absl::Duration kReleaseTimeout = absl::Seconds(10);

}  // namespace

SendPin::SendPin()
    : pin_(&released_, [this](const void*) { released_.Notify(); }) {}

absl::Status SendPin::Release() {
  pin_.reset();
  if (!released_.WaitForNotificationWithTimeout(kReleaseTimeout)) {
    return absl::InternalError(absl::StrCat(
        "gRPC still referenced the sent tensor ",
        absl::FormatDuration(kReleaseTimeout), " after the call ended"));
  }
  return absl::OkStatus();
}

absl::Status StreamOutcome(const grpc::Status& finished, absl::Status ours) {
  if (!finished.ok()) return FromGrpcStatus(finished);
  return ours;
}

absl::Status CheckShardRange(const char* what, int64_t begin, int64_t end,
                             const PsShardLocation& location) {
  if (begin != static_cast<int64_t>(location.begin) ||
      end != static_cast<int64_t>(location.end)) {
    return absl::DataLossError(absl::StrCat(
        what, " covers elements [", begin, ", ", end,
        "), but the client expects [", location.begin, ", ", location.end,
        "); do client and server agree on the shard layout?"));
  }
  return absl::OkStatus();
}

absl::Status ReadPullReply(RawClientStream* stream,
                           const PsShardLocation& location,
                           absl::Span<float> params, ps::PullHeader* reply,
                           std::atomic<uint64_t>* bytes_received,
                           bool* complete) {
  return ReadPullReply(stream, location, AsWritableBytes(params), sizeof(float),
                       reply, bytes_received, complete);
}

absl::Status ReadPullReply(RawClientStream* stream,
                           const PsShardLocation& location,
                           absl::Span<char> bytes, size_t element_bytes,
                           ps::PullHeader* reply,
                           std::atomic<uint64_t>* bytes_received,
                           bool* complete) {
  TensorReceiver receiver({bytes}, element_bytes);
  grpc::ByteBuffer buffer;
  DecodedTensorMessage message;
  bool have_header = false;
  absl::Status status;
  while (status.ok() && stream->Read(&buffer)) {
    status = message.Parse(buffer);
    if (status.ok() && message.has_header()) {
      status = message.ParseHeader(reply);
      if (status.ok()) {
        status = CheckShardRange("the reply", reply->begin(), reply->end(),
                                 location);
      }
      have_header = true;
    } else if (status.ok() && !have_header) {
      status = absl::DataLossError("the reply did not start with a header");
    }
    if (status.ok()) status = receiver.Take(message);
    if (status.ok()) bytes_received->fetch_add(message.data_size());
  }
  *complete = receiver.complete();
  return status;
}

absl::Status ShortReplyError(const PsShardLocation& location) {
  return absl::DataLossError(absl::StrCat(
      "the server ended the reply before all parameters of elements [",
      location.begin, ", ", location.end, ") arrived"));
}

absl::Status FinishPushPull(grpc::ClientContext* context,
                            RawClientStream* stream, absl::Status status,
                            bool sent, bool complete,
                            const PsShardLocation& location) {
  const bool ours = !status.ok();
  // Stop the server's writes; Finish would wait for them otherwise.
  if (ours) context->TryCancel();
  const grpc::Status finished = stream->Finish();
  if (ours) return status;
  status = StreamOutcome(finished, absl::OkStatus());
  if (status.ok() && !sent) {
    return absl::UnavailableError(
        "the stream broke while the gradient was being sent");
  }
  if (status.ok() && !complete) return ShortReplyError(location);
  return status;
}

absl::Status ShardError(const PsShardLocation& location,
                        absl::string_view context, const absl::Status& status) {
  std::string message =
      absl::StrCat("ps shard ", location.shard, " at ", location.address,
                   context.empty() ? "" : " (", context,
                   context.empty() ? "" : ")", ": ", status.message());
  if (status.code() == absl::StatusCode::kUnavailable) {
    absl::StrAppend(&message,
                    "; the parameter server may be down: check that "
                    "gradsync-ps runs at ",
                    location.address, " and its log");
  }
  return absl::Status(status.code(), message);
}

absl::StatusOr<std::unique_ptr<TensorReceiver>> StartStateReceiver(
    const ps::FetchStateHeader& header, const PsShardLocation& location,
    ParameterState* part) {
  RETURN_IF_ERROR(
      CheckShardRange("the state", header.begin(), header.end(), location));
  ASSIGN_OR_RETURN(OptimizerKind kind, ParseOptimizerKind(header.optimizer()));
  if (header.num_state_buffers() < 0 ||
      static_cast<size_t>(header.num_state_buffers()) !=
          NumStateBuffers(kind)) {
    return absl::DataLossError(
        "the state's buffer count does not match its optimizer");
  }
  const size_t size = location.end - location.begin;
  part->step = header.step();
  part->params.resize(size);
  part->optimizer.kind = kind;
  part->optimizer.step = header.optimizer_step();
  part->optimizer.size = size;
  part->optimizer.buffers.assign(NumStateBuffers(kind),
                                 std::vector<float>(size));
  std::vector<absl::Span<char>> tensors = {
      AsWritableBytes(absl::MakeSpan(part->params))};
  for (std::vector<float>& b : part->optimizer.buffers) {
    tensors.push_back(AsWritableBytes(absl::MakeSpan(b)));
  }
  return std::make_unique<TensorReceiver>(std::move(tensors));
}

ps::SeedShardHeader SeedHeader(const std::string& job_id,
                               const PsShardLocation& location,
                               const ParameterState& state) {
  ps::SeedShardHeader header;
  header.set_job_id(job_id);
  header.set_shard(location.shard);
  header.set_step(state.step);
  header.set_optimizer(std::string(OptimizerKindName(state.optimizer.kind)));
  header.set_optimizer_step(state.optimizer.step);
  header.set_num_state_buffers(
      static_cast<int32_t>(state.optimizer.buffers.size()));
  return header;
}

std::vector<absl::Span<const float>> ShardSlices(
    const PsShardLocation& location, const ParameterState& state) {
  const size_t size = location.end - location.begin;
  std::vector<absl::Span<const float>> slices = {
      absl::MakeConstSpan(state.params).subspan(location.begin, size)};
  for (const std::vector<float>& b : state.optimizer.buffers) {
    slices.push_back(absl::MakeConstSpan(b).subspan(location.begin, size));
  }
  return slices;
}

}  // namespace gradsync
