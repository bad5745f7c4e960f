// The ParameterServer service of proto/ps.proto, registered by hand so that
// its tensor streams (PushPull, SeedShard, FetchState) carry grpc::ByteBuffer
// messages, which tensor_codec.h encodes and decodes without protobuf
// copies, while the small calls keep their generated protobuf types.
//
// gRPC's generated code offers ByteBuffer ("raw") methods only for the
// async and callback APIs, and a service of its own kind only per API. So
// RawParameterServerService does what the generated code does, method by
// method under the same names: PushPull on the callback API (the hot path,
// see push_pull_reactor.h), the other methods as blocking sync-API
// handlers (a handler waits for a shard with a plain deadline), with
// ByteBuffer for the streamed tensor messages. The Start* functions open
// the streams as the generated stub would. Peers using the generated
// classes interoperate (the bytes on the wire are the same).
//
// Threading: as gRPC's sync API (one thread per call), except PushPull.
#ifndef GRADSYNC_SERVER_PS_TRANSPORT_RAW_TENSOR_RPC_H_
#define GRADSYNC_SERVER_PS_TRANSPORT_RAW_TENSOR_RPC_H_

#include <grpcpp/client_context.h>
#include <grpcpp/impl/service_type.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>
#include <grpcpp/support/sync_stream.h>

#include <memory>

#include "proto/ps.grpc.pb.h"

namespace gradsync {

inline constexpr char kCreateShardMethod[] =
    "/gradsync.ps.ParameterServer/CreateShard";
inline constexpr char kSeedShardMethod[] =
    "/gradsync.ps.ParameterServer/SeedShard";
inline constexpr char kPushPullMethod[] =
    "/gradsync.ps.ParameterServer/PushPull";
inline constexpr char kFetchStateMethod[] =
    "/gradsync.ps.ParameterServer/FetchState";
inline constexpr char kReleaseShardMethod[] =
    "/gradsync.ps.ParameterServer/ReleaseShard";
inline constexpr char kGetShardStatsMethod[] =
    "/gradsync.ps.ParameterServer/GetShardStats";

using RawServerStream =
    grpc::ServerReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;
using RawClientStream =
    grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>;

class RawParameterServerService : public grpc::Service {
 public:
  // Registers the six methods of ParameterServer.
  RawParameterServerService();
  ~RawParameterServerService() override = default;

  virtual grpc::Status CreateShard(grpc::ServerContext* context,
                                   const ps::CreateShardRequest* request,
                                   ps::CreateShardResponse* response) = 0;
  virtual grpc::Status SeedShard(grpc::ServerContext* context,
                                 grpc::ServerReader<grpc::ByteBuffer>* reader,
                                 ps::SeedShardResponse* response) = 0;
  // The hot path, on the callback API: returns the call's reactor.
  virtual grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* PushPull(
      grpc::CallbackServerContext* context) = 0;
  virtual grpc::Status FetchState(
      grpc::ServerContext* context, const ps::FetchStateRequest* request,
      grpc::ServerWriter<grpc::ByteBuffer>* writer) = 0;
  virtual grpc::Status ReleaseShard(grpc::ServerContext* context,
                                    const ps::ReleaseShardRequest* request,
                                    ps::ReleaseShardResponse* response) = 0;
  virtual grpc::Status GetShardStats(grpc::ServerContext* context,
                                     const ps::GetShardStatsRequest* request,
                                     ps::GetShardStatsResponse* response) = 0;
};

// Client side: open one stream on `channel` under `context` (which must
// outlive the stream).
std::unique_ptr<RawClientStream> StartPushPull(grpc::ChannelInterface* channel,
                                               grpc::ClientContext* context);
std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> StartSeedShard(
    grpc::ChannelInterface* channel, grpc::ClientContext* context,
    ps::SeedShardResponse* response);
std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> StartFetchState(
    grpc::ChannelInterface* channel, grpc::ClientContext* context,
    const ps::FetchStateRequest& request);

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_TRANSPORT_RAW_TENSOR_RPC_H_
