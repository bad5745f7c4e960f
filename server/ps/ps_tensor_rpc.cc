// PsRpc's tensor streams: PushPull, SeedShard, FetchState.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/ps/ps_rpc.h"
#include "server/ps/tensor_codec.h"
#include "server/ps/tensor_stream.h"
#include "server/store/grpc_status.h"

namespace gradsync {
namespace {

template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

// The end of a wait on `shard` for this call: the client's deadline or the
// shard's max_wait, whichever comes first.
absl::Time CallDeadline(const grpc::ServerContext& context,
                        const PsShard& shard) {
  return std::min(absl::FromChrono(context.deadline()),
                  absl::Now() + shard.config().max_wait);
}

// Reads the stream's first message into `message` and its header.
template <typename Reader, typename Header>
absl::Status ReadHeader(Reader* reader, const char* rpc,
                        DecodedTensorMessage* message, Header* header) {
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
absl::Status ReceiveTensors(grpc::ServerContext* context, Reader* reader,
                            const DecodedTensorMessage& first,
                            TensorReceiver* receiver, OnData&& on_data) {
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

// Takes one message's chunk of the gradient into `push` without copying
// it: the push holds the message's receive buffers until the step is
// applied. Chunks tile the gradient from its start up (ascending) or from
// its end down (descending), each ascending inside.
absl::Status TakeGradientChunk(DecodedTensorMessage& message,
                               PsShard::Push* push) {
  const size_t n = message.data_size();
  if (n == 0) return absl::OkStatus();
  if (message.tensor() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a gradient chunk names tensor ", message.tensor(),
                     "; PushPull carries tensor 0 only"));
  }
  if (n % sizeof(float) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a chunk of ", n, " bytes is not whole fp32 values"));
  }
  const size_t size = push->size_bytes();
  const size_t floats = size / sizeof(float);
  const int64_t offset = message.offset();
  if (offset < 0 || static_cast<uint64_t>(offset) > floats ||
      n / sizeof(float) > floats - static_cast<size_t>(offset)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a gradient chunk of ", n / sizeof(float), " elements at element ",
        offset, " is outside the shard's ", floats,
        " elements; the sender's sizes do not match the shard's"));
  }
  const size_t filled = push->filled_bytes();
  const size_t at = static_cast<size_t>(offset) * sizeof(float);
  if (!push->descending() && at != filled) {
    return absl::InvalidArgumentError(
        absl::StrCat("a gradient chunk starts at element ", offset,
                     ", expected ", filled / sizeof(float),
                     "; ascending chunks must follow each other "
                     "without gaps or overlaps"));
  }
  if (push->descending() && at + n != size - filled) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a descending gradient chunk covers elements [", offset, ", ",
        (at + n) / sizeof(float), "), expected one that ends at element ",
        (size - filled) / sizeof(float),
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

// Receives the rest of rank's gradient (after `first`) and checks that the
// stream ends right after it.
template <typename Reader>
absl::Status ReceiveGradient(grpc::ServerContext* context, Reader* reader,
                             DecodedTensorMessage& first, PsShard::Push* push) {
  RETURN_IF_ERROR(TakeGradientChunk(first, push));
  grpc::ByteBuffer buffer;
  DecodedTensorMessage message;
  while (push->filled_bytes() < push->size_bytes()) {
    if (!reader->Read(&buffer)) {
      if (context->IsCancelled()) {
        return absl::CancelledError(absl::StrCat("the client went away after ",
                                                 push->filled_bytes(), " of ",
                                                 push->size_bytes(), " bytes"));
      }
      return absl::InvalidArgumentError(
          absl::StrCat("the stream ended after ", push->filled_bytes(), " of ",
                       push->size_bytes(),
                       " bytes; the sender's sizes do not match the "
                       "shard's"));
    }
    RETURN_IF_ERROR(message.Parse(buffer));
    if (message.has_header()) {
      return absl::InvalidArgumentError(
          "a second header arrived in the middle of the stream");
    }
    RETURN_IF_ERROR(TakeGradientChunk(message, push));
  }
  if (reader->Read(&buffer)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "more data arrived after the whole gradient (", push->size_bytes(),
        " bytes); the sender's sizes do not match the shard's"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status PsRpc::CheckAlive(grpc::ServerContext* context) const {
  if (context->IsCancelled()) {
    return absl::CancelledError(
        "the client cancelled the call or went away while it waited");
  }
  if (shutting_down_.load()) {
    return absl::UnavailableError(
        "the parameter server is shutting down; its shards are gone");
  }
  return absl::OkStatus();
}

namespace {

// Calls `wait(slice_deadline)` with successive slice deadlines until it
// returns anything but DEADLINE_EXCEEDED, `deadline` passes, or `alive`
// says the call is over.
template <typename Wait, typename Alive>
auto WaitInSlices(absl::Time deadline, Alive&& alive, Wait&& wait)
    -> decltype(wait(deadline)) {
  const absl::Time start = absl::Now();
  for (;;) {
    const absl::Time slice_end =
        std::min(deadline, absl::Now() + PsRpc::kCancelCheckInterval);
    auto result = wait(slice_end);
    const absl::Status& status = StatusOf(result);
    if (status.code() != absl::StatusCode::kDeadlineExceeded) return result;
    if (slice_end >= deadline) {
      return Annotate(status,
                      absl::StrCat("gave up after ",
                                   absl::FormatDuration(absl::Now() - start)));
    }
    RETURN_IF_ERROR(alive());
  }
}

}  // namespace

grpc::Status PsRpc::PushPull(grpc::ServerContext* context,
                             RawServerStream* stream) {
  return ToGrpcStatus(DoPushPull(context, stream));
}

absl::Status PsRpc::DoPushPull(grpc::ServerContext* context,
                               RawServerStream* stream) {
  DecodedTensorMessage first;
  ps::PushHeader header;
  RETURN_IF_ERROR(ReadHeader(stream, "PushPull", &first, &header));
  ASSIGN_OR_RETURN(const size_t chunk_bytes,
                   ResolveChunkBytes(header.chunk_bytes()));
  ASSIGN_OR_RETURN(std::shared_ptr<PsShard> shard,
                   service_->FindShard(header.job_id(), header.shard()));
  const absl::Time deadline = CallDeadline(*context, *shard);
  auto alive = [this, context]() { return CheckAlive(context); };
  const int rank = header.rank();
  int64_t pull_step = header.step();
  if (!header.pull_only()) {
    PushOptions options;
    options.descending = header.descending();
    options.scalars.assign(header.scalars().begin(), header.scalars().end());
    options.switch_epoch = header.switch_epoch();
    ASSIGN_OR_RETURN(PsShard::Push push,
                     WaitInSlices(deadline, alive, [&](absl::Time d) {
                       return shard->BeginPush(rank, header.step(), d, options);
                     }));
    RETURN_IF_ERROR(Annotate(ReceiveGradient(context, stream, first, &push),
                             absl::StrCat("PushPull from rank ", rank,
                                          " for step ", header.step())));
    RETURN_IF_ERROR(shard->Commit(std::move(push), deadline));
    pull_step = header.step() + 1;
  } else if (first.data_size() != 0) {
    return absl::InvalidArgumentError(
        "PushPull: a pull-only request carries gradient data");
  }
  ASSIGN_OR_RETURN(ShardViewRef view,
                   WaitInSlices(deadline, alive, [&](absl::Time d) {
                     return shard->Pull(rank, pull_step, d);
                   }));
  ps::PullHeader reply;
  reply.set_version(view->version);
  reply.set_begin(static_cast<int64_t>(shard->config().begin));
  reply.set_end(static_cast<int64_t>(shard->config().end));
  reply.mutable_scalar_sums()->Add(view->scalar_sums.begin(),
                                   view->scalar_sums.end());
  reply.set_switch_epoch(view->decision.epoch);
  reply.set_switch_step(view->decision.step);
  const absl::Span<const float> tensors[] = {view->params};
  if (!WriteTensors(stream, &reply, tensors, chunk_bytes, view)) {
    RETURN_IF_ERROR(CheckAlive(context));
    return absl::UnavailableError(
        "PushPull: the client stopped reading the parameters");
  }
  return absl::OkStatus();
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
  ASSIGN_OR_RETURN(std::shared_ptr<PsShard> shard,
                   service_->FindShard(request.job_id(), request.shard()));
  auto alive = [this, context]() { return CheckAlive(context); };
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
    RETURN_IF_ERROR(CheckAlive(context));
    return absl::UnavailableError(
        "FetchState: the client stopped reading the state");
  }
  return absl::OkStatus();
}

}  // namespace gradsync
