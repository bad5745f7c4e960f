#include "server/ps/transport/raw_tensor_rpc.h"

#include <grpcpp/impl/codegen/server_callback_handlers.h>
#include <grpcpp/impl/rpc_method.h>
#include <grpcpp/impl/rpc_service_method.h>
#include <grpcpp/support/method_handler.h>

namespace gradsync {

using grpc::internal::RpcMethod;
using grpc::internal::RpcServiceMethod;

using Self = RawParameterServerService;
using grpc::ByteBuffer;
using grpc::protobuf::MessageLite;

// PushPull's position among the methods added below.
constexpr int kPushPullIndex = 2;

RawParameterServerService::RawParameterServerService() {
  AddMethod(new RpcServiceMethod(
      kCreateShardMethod, RpcMethod::NORMAL_RPC,
      new grpc::internal::RpcMethodHandler<Self, ps::CreateShardRequest,
                                           ps::CreateShardResponse, MessageLite,
                                           MessageLite>(
          [](Self* self, grpc::ServerContext* context,
             const ps::CreateShardRequest* request,
             ps::CreateShardResponse* response) {
            return self->CreateShard(context, request, response);
          },
          this)));
  AddMethod(new RpcServiceMethod(
      kSeedShardMethod, RpcMethod::CLIENT_STREAMING,
      new grpc::internal::ClientStreamingHandler<Self, ByteBuffer,
                                                 ps::SeedShardResponse>(
          [](Self* self, grpc::ServerContext* context,
             grpc::ServerReader<ByteBuffer>* reader,
             ps::SeedShardResponse* response) {
            return self->SeedShard(context, reader, response);
          },
          this)));
  AddMethod(new RpcServiceMethod(kPushPullMethod, RpcMethod::BIDI_STREAMING,
                                 /*handler=*/nullptr));
  MarkMethodRawCallback(
      kPushPullIndex,
      new grpc::internal::CallbackBidiHandler<ByteBuffer, ByteBuffer>(
          [this](grpc::CallbackServerContext* context) {
            return PushPull(context);
          }));
  AddMethod(new RpcServiceMethod(
      kFetchStateMethod, RpcMethod::SERVER_STREAMING,
      new grpc::internal::ServerStreamingHandler<Self, ps::FetchStateRequest,
                                                 ByteBuffer>(
          [](Self* self, grpc::ServerContext* context,
             const ps::FetchStateRequest* request,
             grpc::ServerWriter<ByteBuffer>* writer) {
            return self->FetchState(context, request, writer);
          },
          this)));
  AddMethod(new RpcServiceMethod(
      kReleaseShardMethod, RpcMethod::NORMAL_RPC,
      new grpc::internal::RpcMethodHandler<Self, ps::ReleaseShardRequest,
                                           ps::ReleaseShardResponse,
                                           MessageLite, MessageLite>(
          [](Self* self, grpc::ServerContext* context,
             const ps::ReleaseShardRequest* request,
             ps::ReleaseShardResponse* response) {
            return self->ReleaseShard(context, request, response);
          },
          this)));
  AddMethod(new RpcServiceMethod(
      kGetShardStatsMethod, RpcMethod::NORMAL_RPC,
      new grpc::internal::RpcMethodHandler<Self, ps::GetShardStatsRequest,
                                           ps::GetShardStatsResponse,
                                           MessageLite, MessageLite>(
          [](Self* self, grpc::ServerContext* context,
             const ps::GetShardStatsRequest* request,
             ps::GetShardStatsResponse* response) {
            return self->GetShardStats(context, request, response);
          },
          this)));
}

std::unique_ptr<RawClientStream> StartPushPull(grpc::ChannelInterface* channel,
                                               grpc::ClientContext* context) {
  return std::unique_ptr<RawClientStream>(
      grpc::internal::
          ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(
              channel, RpcMethod(kPushPullMethod, RpcMethod::BIDI_STREAMING),
              context));
}

std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> StartSeedShard(
    grpc::ChannelInterface* channel, grpc::ClientContext* context,
    ps::SeedShardResponse* response) {
  return std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>>(
      grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(
          channel, RpcMethod(kSeedShardMethod, RpcMethod::CLIENT_STREAMING),
          context, response));
}

std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> StartFetchState(
    grpc::ChannelInterface* channel, grpc::ClientContext* context,
    const ps::FetchStateRequest& request) {
  return std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>>(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(
          channel, RpcMethod(kFetchStateMethod, RpcMethod::SERVER_STREAMING),
          context, request));
}

}  // namespace gradsync
