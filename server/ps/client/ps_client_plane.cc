// PsClient's tensor plane connections (ps_client.h, options.tensor_plane):
// where each server's tensor plane is, and one connection per server's
// partitions or per solo shard, kept between steps.
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
  if (planes_resolved_) return absl::OkStatus();
  for (const ServerRun& run : ServerRuns()) {
    // A server's partitions share the first one's connection and port.
    const size_t k = run.first;
    const Shard& shard = shards_[k];
    RETURN_IF_ERROR(CancelledOr(NameShard(k, ConnectShard(k))));
    ps::GetShardStatsRequest request;
    request.set_job_id(job_id_);
    request.set_shard(shard.location.shard);
    request.set_token(options_.token);
    ps::GetShardStatsResponse response;
    int port = 0;
    {
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + options_.timeout));
      LiveCall live(this, &context);
      if (!live.status().ok()) return live.status();
      const absl::Status asked =
          FromGrpcStatus(ps::ParameterServer::NewStub(shard.channel)
                             ->GetShardStats(&context, request, &response));
      if (!asked.ok()) return CancelledOr(NameShard(k, asked));
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
      for (size_t j = run.first; j <= run.last; ++j) shards_[j].plane = false;
      continue;
    }
    const std::string& address = shard.location.address;
    const std::string tensor_address =
        absl::StrCat(address.substr(0, address.rfind(':')), ":", port);
    for (size_t j = run.first; j <= run.last; ++j) {
      shards_[j].plane_slot = k;
      shards_[j].tensor_address = tensor_address;
      shards_[j].plane = true;
    }
  }
  planes_resolved_ = true;
  absl::MutexLock lock(&plane_mu_);
  planes_.resize(shards_.size());
  return absl::OkStatus();
}

std::string PsClient::transport() const {
  if (!options_.tensor_plane) return "grpc";
  if (!planes_resolved_) return "";
  size_t on_plane = 0;
  for (const Shard& shard : shards_) on_plane += shard.plane ? 1 : 0;
  if (on_plane == shards_.size()) return "plane";
  return on_plane == 0 ? "grpc" : "mixed";
}

absl::StatusOr<TensorPlaneChannel*> PsClient::PlaneChannel(
    size_t k, absl::Time deadline) {
  const Shard& shard = shards_[k];
  absl::MutexLock lock(&plane_mu_);
  std::unique_ptr<TensorPlaneChannel>& channel = planes_[shard.plane_slot];
  if (channel == nullptr) {
    PlaneIdentity identity;
    identity.job_id = job_id_;
    identity.rank = rank_;
    identity.token = options_.token;
    absl::StatusOr<std::unique_ptr<TensorPlaneChannel>> connected =
        TensorPlaneChannel::Connect(shard.tensor_address,
                                    options_.transport.congestion_control,
                                    identity, deadline, &cancel_flag_);
    if (!connected.ok()) return CancelledOr(connected.status());
    channel = *std::move(connected);
  }
  return channel.get();
}

void PsClient::ShutdownPlanes() {
  absl::MutexLock lock(&plane_mu_);
  for (const std::unique_ptr<TensorPlaneChannel>& channel : planes_) {
    if (channel != nullptr) channel->Shutdown();
  }
}

void PsClient::DropClosedPlanes() {
  absl::MutexLock lock(&plane_mu_);
  for (std::unique_ptr<TensorPlaneChannel>& channel : planes_) {
    if (channel != nullptr && channel->PeerClosed()) channel.reset();
  }
}

void PsClient::DropPlanes() {
  absl::MutexLock lock(&plane_mu_);
  for (std::unique_ptr<TensorPlaneChannel>& channel : planes_) channel.reset();
}

}  // namespace gradsync
