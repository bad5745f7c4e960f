// PsClient's tensor plane (ps_client.h, options.tensor_plane): where each
// server's tensor plane is. The connections, one per server's partitions or
// per solo shard, kept between steps, are the core's (ps_client_core.h).
#include <grpcpp/client_context.h>

#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "proto/ps.grpc.pb.h"
#include "server/ps/client/ps_client.h"
#include "server/ps/transport/tensor_plane_wire.h"

namespace gradsync {

absl::Status PsClient::ResolveTensorPlanes() {
  if (core_.planes_resolved) return absl::OkStatus();
  for (const ServerRun& run : core_.ServerRuns()) {
    // A server's partitions share the first one's connection and port.
    const size_t k = run.first;
    const Shard& shard = core_.shards[k];
    RETURN_IF_ERROR(core_.CancelledOr(NameShard(k, ConnectShard(k))));
    ps::GetShardStatsRequest request;
    request.set_job_id(core_.job_id);
    request.set_shard(shard.location.shard);
    request.set_token(core_.options.token);
    ps::GetShardStatsResponse response;
    int port = 0;
    {
      grpc::ClientContext context;
      context.set_deadline(
          absl::ToChronoTime(absl::Now() + core_.options.timeout));
      LiveCall live(&core_, &context);
      if (!live.status().ok()) return live.status();
      const absl::Status asked =
          FromGrpcStatus(ps::ParameterServer::NewStub(shard.channel)
                             ->GetShardStats(&context, request, &response));
      if (!asked.ok()) return core_.CancelledOr(NameShard(k, asked));
      const auto& metadata = context.GetServerInitialMetadata();
      const auto found = metadata.find(tensor_plane::kTensorPortMetadata);
      if (found == metadata.end() ||
          !absl::SimpleAtoi(
              absl::string_view(found->second.data(), found->second.size()),
              &port)) {
        port = 0;
      }
    }
    if (port <= 0 || port > 65535) {
      // A server without a plane: its shards take the gRPC streams.
      for (size_t j = run.first; j <= run.last; ++j) {
        core_.shards[j].plane = false;
      }
      continue;
    }
    const std::string& address = shard.location.address;
    const std::string tensor_address =
        absl::StrCat(address.substr(0, address.rfind(':')), ":", port);
    for (size_t j = run.first; j <= run.last; ++j) {
      core_.shards[j].plane_slot = k;
      core_.shards[j].tensor_address = tensor_address;
      core_.shards[j].plane = true;
    }
  }
  core_.planes_resolved = true;
  core_.SetPlaneSlots(core_.shards.size());
  return absl::OkStatus();
}

std::string PsClient::transport() const {
  if (!core_.options.tensor_plane) return "grpc";
  if (!core_.planes_resolved) return "";
  size_t on_plane = 0;
  for (const Shard& shard : core_.shards) on_plane += shard.plane ? 1 : 0;
  if (on_plane == core_.shards.size()) return "plane";
  return on_plane == 0 ? "grpc" : "mixed";
}

}  // namespace gradsync
