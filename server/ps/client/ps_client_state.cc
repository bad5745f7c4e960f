// PsClient's state transfer for mode switches: FetchState gathers every
// shard's parameters and optimizer state, SeedShards writes them back (see
// ps_client.h).
#include <grpcpp/client_context.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/optimizer.h"
#include "common/status_macros.h"
#include "proto/ps.pb.h"
#include "server/ps/client/ps_client.h"
#include "server/ps/client/ps_client_stream.h"
#include "server/ps/transport/raw_tensor_rpc.h"
#include "server/ps/transport/tensor_stream.h"

namespace gradsync {

absl::StatusOr<ParameterState> PsClient::FetchState() { return FetchState(0); }

absl::StatusOr<ParameterState> PsClient::FetchState(int64_t step) {
  if (step < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FetchState: step ", step, " is negative; use 0 for the current one"));
  }
  const absl::Time deadline = absl::Now() + core_.options.timeout;
  std::vector<ParameterState> parts(core_.shards.size());
  RETURN_IF_ERROR(ForEachShard([&](size_t k) -> absl::Status {
    ASSIGN_OR_RETURN(parts[k], FetchShard(k, step, deadline));
    return absl::OkStatus();
  }));
  ParameterState state;
  state.step = parts[0].step;
  state.params.reserve(core_.total);
  std::vector<OptimizerState> optimizer_parts;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (parts[k].step != state.step) {
      return absl::FailedPreconditionError(
          absl::StrCat("the shards are at different steps: shard ",
                       core_.shards[0].location.shard, " at ", state.step,
                       ", shard ", core_.shards[k].location.shard, " at ",
                       parts[k].step, "; fetch the state at a step boundary"));
    }
    state.params.insert(state.params.end(), parts[k].params.begin(),
                        parts[k].params.end());
    optimizer_parts.push_back(std::move(parts[k].optimizer));
  }
  ASSIGN_OR_RETURN(state.optimizer, ConcatOptimizerStates(optimizer_parts));
  return state;
}

absl::StatusOr<ParameterState> PsClient::FetchShard(size_t k, int64_t step,
                                                    absl::Time deadline) {
  const PsShardLocation& location = core_.shards[k].location;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline));
  LiveCall live(&core_, &context);
  if (!live.status().ok()) return live.status();
  ps::FetchStateRequest request;
  request.set_job_id(core_.job_id);
  request.set_token(core_.options.token);
  request.set_shard(location.shard);
  request.set_chunk_bytes(static_cast<int64_t>(core_.options.chunk_bytes));
  request.set_step(step);
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader =
      StartFetchState(core_.shards[k].channel.get(), &context, request);

  ParameterState part;
  std::unique_ptr<TensorReceiver> receiver;
  grpc::ByteBuffer buffer;
  DecodedTensorMessage message;
  absl::Status status;
  while (status.ok() && reader->Read(&buffer)) {
    status = message.Parse(buffer);
    if (status.ok() && message.has_header()) {
      ps::FetchStateHeader header;
      status = message.ParseHeader(&header);
      absl::StatusOr<std::unique_ptr<TensorReceiver>> started =
          status.ok() ? StartStateReceiver(header, location, &part)
                      : absl::StatusOr<std::unique_ptr<TensorReceiver>>(status);
      if (!started.ok()) {
        status = started.status();
        break;
      }
      receiver = *std::move(started);
    } else if (status.ok() && receiver == nullptr) {
      status = absl::DataLossError("the state did not start with a header");
    }
    if (status.ok()) status = receiver->Take(message);
    if (status.ok()) core_.bytes_received.fetch_add(message.data_size());
  }
  const bool ours = !status.ok();
  if (ours) context.TryCancel();
  const grpc::Status finished = reader->Finish();
  if (ours) return status;
  RETURN_IF_ERROR(StreamOutcome(finished, absl::OkStatus()));
  if (receiver == nullptr || !receiver->complete()) {
    return absl::DataLossError(
        absl::StrCat("the server ended the state after ",
                     receiver == nullptr ? "no header" : receiver->Progress()));
  }
  return part;
}

absl::Status PsClient::SeedShards(const ParameterState& state) {
  if (state.params.size() != core_.total ||
      state.optimizer.size != core_.total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SeedShards needs the state of all ", core_.total, " elements; got ",
        state.params.size(), " parameters and an optimizer state of ",
        state.optimizer.size));
  }
  RETURN_IF_ERROR(ValidateOptimizerState(state.optimizer));
  const absl::Time deadline = absl::Now() + core_.options.timeout;
  return ForEachShard([&](size_t k) { return SeedShard(k, state, deadline); });
}

absl::Status PsClient::SeedShard(size_t k, const ParameterState& state,
                                 absl::Time deadline) {
  const PsShardLocation& location = core_.shards[k].location;
  const size_t size = location.end - location.begin;
  SendPin pin;
  absl::Status status;
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    LiveCall live(&core_, &context);
    if (!live.status().ok()) return live.status();
    ps::SeedShardResponse response;
    std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> writer =
        StartSeedShard(core_.shards[k].channel.get(), &context, &response);
    ps::SeedShardHeader header = SeedHeader(core_.job_id, location, state);
    header.set_token(core_.options.token);
    const std::vector<absl::Span<const float>> tensors =
        ShardSlices(location, state);
    if (WriteTensors(writer.get(), &header, tensors, core_.options.chunk_bytes,
                     pin.pin())) {
      core_.bytes_sent.fetch_add(size * sizeof(float) * tensors.size());
      writer->WritesDone();
    }
    status = StreamOutcome(writer->Finish(), absl::OkStatus());
  }
  RETURN_IF_ERROR(pin.Release());
  return status;
}

}  // namespace gradsync
