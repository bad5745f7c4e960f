// PsRpc's tensor streams: SeedShard, FetchState, and PushPull's reactor.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "server/ps/daemon/call_waits.h"
#include "server/ps/daemon/ps_rpc.h"
#include "server/ps/daemon/push_pull_reactor.h"
#include "server/ps/transport/tensor_codec.h"
#include "server/ps/transport/tensor_stream.h"

namespace gradsync {
namespace {

// Reads the stream's first message into `message` and its header.
template <typename Reader, typename Header>
[[nodiscard]] absl::Status ReadHeader(Reader* reader, const char* rpc,
                                      DecodedTensorMessage* message,
                                      Header* header) {
  grpc::ByteBuffer buffer;
  if (!reader->Read(&buffer)) {
    return absl::InvalidArgumentError(
        absl::StrCat(rpc, ": the stream ended before its header"));
  }
  RETURN_IF_ERROR(message->Parse(buffer));
  return Annotate(message->ParseHeader(header), rpc);
}

// Receives the rest of the stream into `receiver` (whose first message,
// `first`, was read already) and checks that it ends exactly there.
// `on_data` is called with the bytes each message delivered.
template <typename Reader, typename OnData>
[[nodiscard]] absl::Status ReceiveTensors(grpc::ServerContext* context,
                                          Reader* reader,
                                          const DecodedTensorMessage& first,
                                          TensorReceiver* receiver,
                                          OnData&& on_data) {
  RETURN_IF_ERROR(receiver->Take(first));
  on_data(first.data_size());
  grpc::ByteBuffer buffer;
  DecodedTensorMessage message;
  while (!receiver->complete()) {
    if (!reader->Read(&buffer)) {
      if (context->IsCancelled()) {
        return absl::CancelledError(
            absl::StrCat("the client went away after ", receiver->Progress()));
      }
      return absl::InvalidArgumentError(
          absl::StrCat("the stream ended after ", receiver->Progress(),
                       "; the sender's sizes do not match the shard's"));
    }
    RETURN_IF_ERROR(message.Parse(buffer));
    if (message.has_header()) {
      return absl::InvalidArgumentError(
          "a second header arrived in the middle of the stream");
    }
    RETURN_IF_ERROR(receiver->Take(message));
    on_data(message.data_size());
  }
  if (reader->Read(&buffer)) {
    return absl::InvalidArgumentError(
        absl::StrCat("more data arrived after ", receiver->Progress(),
                     "; the sender's sizes do not match the shard's"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status PsRpc::CheckAlive(const grpc::ServerContextBase& context) const {
  return CheckCallAlive(context, shutting_down_);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* PsRpc::PushPull(
    grpc::CallbackServerContext* context) {
  return new PushPullReactor(
      PushPullReactor::Env{service_, &executor_, &shutting_down_}, context);
}

grpc::Status PsRpc::SeedShard(grpc::ServerContext* context,
                              grpc::ServerReader<grpc::ByteBuffer>* reader,
                              ps::SeedShardResponse* response) {
  return ToGrpcStatus(DoSeedShard(context, reader));
}

absl::Status PsRpc::DoSeedShard(grpc::ServerContext* context,
                                grpc::ServerReader<grpc::ByteBuffer>* reader) {
  DecodedTensorMessage first;
  ps::SeedShardHeader header;
  RETURN_IF_ERROR(ReadHeader(reader, "SeedShard", &first, &header));
  RETURN_IF_ERROR(service_->CheckToken(header.job_id(), header.token()));
  ASSIGN_OR_RETURN(std::shared_ptr<PsShard> shard,
                   service_->FindShard(header.job_id(), header.shard()));
  ASSIGN_OR_RETURN(const OptimizerKind kind,
                   ParseOptimizerKind(header.optimizer()));
  const size_t num_buffers = NumStateBuffers(kind);
  if (header.num_state_buffers() < 0 ||
      static_cast<size_t>(header.num_state_buffers()) != num_buffers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SeedShard: optimizer ", header.optimizer(), " has ", num_buffers,
        " state buffers, the header announces ", header.num_state_buffers()));
  }
  ParameterState state;
  state.step = header.step();
  state.params.resize(shard->size());
  state.optimizer.kind = kind;
  state.optimizer.step = header.optimizer_step();
  state.optimizer.size = shard->size();
  state.optimizer.buffers.assign(num_buffers,
                                 std::vector<float>(shard->size()));
  std::vector<absl::Span<char>> tensors = {
      AsWritableBytes(absl::MakeSpan(state.params))};
  for (std::vector<float>& buffer : state.optimizer.buffers) {
    tensors.push_back(AsWritableBytes(absl::MakeSpan(buffer)));
  }
  TensorReceiver receiver(std::move(tensors));
  RETURN_IF_ERROR(
      Annotate(ReceiveTensors(context, reader, first, &receiver, [](size_t) {}),
               "SeedShard"));
  return shard->ImportState(std::move(state), CallDeadline(*context, *shard));
}

grpc::Status PsRpc::FetchState(grpc::ServerContext* context,
                               const ps::FetchStateRequest* request,
                               grpc::ServerWriter<grpc::ByteBuffer>* writer) {
  return ToGrpcStatus(DoFetchState(context, *request, writer));
}

absl::Status PsRpc::DoFetchState(grpc::ServerContext* context,
                                 const ps::FetchStateRequest& request,
                                 grpc::ServerWriter<grpc::ByteBuffer>* writer) {
  ASSIGN_OR_RETURN(const size_t chunk_bytes,
                   ResolveChunkBytes(request.chunk_bytes()));
  RETURN_IF_ERROR(service_->CheckToken(request.job_id(), request.token()));
  ASSIGN_OR_RETURN(std::shared_ptr<PsShard> shard,
                   service_->FindShard(request.job_id(), request.shard()));
  auto alive = [this, context]() { return CheckAlive(*context); };
  ASSIGN_OR_RETURN(
      ShardViewRef view,
      WaitInSlices(CallDeadline(*context, *shard), alive, [&](absl::Time d) {
        return shard->AcquireState(d, request.step());
      }));
  ps::FetchStateHeader header;
  header.set_step(view->version);
  header.set_begin(static_cast<int64_t>(shard->config().begin));
  header.set_end(static_cast<int64_t>(shard->config().end));
  header.set_optimizer(std::string(OptimizerKindName(view->optimizer_kind)));
  header.set_optimizer_step(view->optimizer_step);
  header.set_num_state_buffers(static_cast<int32_t>(view->state.size()));
  std::vector<absl::Span<const float>> tensors = {view->params};
  tensors.insert(tensors.end(), view->state.begin(), view->state.end());
  if (!WriteTensors(writer, &header, tensors, chunk_bytes, view)) {
    RETURN_IF_ERROR(CheckAlive(*context));
    return absl::UnavailableError(
        "FetchState: the client stopped reading the state");
  }
  return absl::OkStatus();
}

}  // namespace gradsync
