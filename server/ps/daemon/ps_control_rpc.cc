// PsRpc's control calls: CreateShard, ReleaseShard, GetShardStats.
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "server/ps/daemon/ps_proto.h"
#include "server/ps/daemon/ps_rpc.h"
#include "server/ps/transport/tensor_plane_wire.h"

namespace gradsync {

grpc::Status PsRpc::CreateShard(grpc::ServerContext* context,
                                const ps::CreateShardRequest* request,
                                ps::CreateShardResponse* response) {
  if (absl::Status allowed =
          service_->CheckToken(request->job_id(), request->token());
      !allowed.ok()) {
    return ToGrpcStatus(allowed);
  }
  absl::StatusOr<ShardSpec> spec = ShardSpecFromProto(*request);
  if (!spec.ok()) return ToGrpcStatus(spec.status());
  return ToGrpcStatus(service_->CreateShard(*spec));
}

grpc::Status PsRpc::ReleaseShard(grpc::ServerContext* context,
                                 const ps::ReleaseShardRequest* request,
                                 ps::ReleaseShardResponse* response) {
  if (absl::Status allowed =
          service_->CheckToken(request->job_id(), request->token());
      !allowed.ok()) {
    return ToGrpcStatus(allowed);
  }
  absl::StatusOr<int> released =
      service_->Release(request->job_id(), request->shard());
  if (!released.ok()) return ToGrpcStatus(released.status());
  response->set_released(*released);
  return grpc::Status::OK;
}

grpc::Status PsRpc::GetShardStats(grpc::ServerContext* context,
                                  const ps::GetShardStatsRequest* request,
                                  ps::GetShardStatsResponse* response) {
  if (absl::Status allowed =
          service_->CheckToken(request->job_id(), request->token());
      !allowed.ok()) {
    return ToGrpcStatus(allowed);
  }
  absl::StatusOr<std::vector<std::shared_ptr<PsShard>>> shards =
      service_->FindShards(request->job_id(), request->shard());
  if (!shards.ok()) return ToGrpcStatus(shards.status());
  for (const std::shared_ptr<PsShard>& shard : *shards) {
    ShardStatsToProto(*shard, response->add_shards());
  }
  if (const int port = tensor_port_.load(); port > 0) {
    context->AddInitialMetadata(tensor_plane::kTensorPortMetadata,
                                absl::StrCat(port));
  }
  return grpc::Status::OK;
}

}  // namespace gradsync
