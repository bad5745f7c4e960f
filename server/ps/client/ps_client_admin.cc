// PsClient's shard management for mode switches: CreateAndSeedShard and
// ReleaseShards (see ps_client.h).
#include <grpcpp/client_context.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "proto/ps.grpc.pb.h"
#include "server/ps/client/ps_client.h"

namespace gradsync {

absl::Status PsClient::CreateAndSeedShard(size_t k,
                                          const ps::CreateShardRequest& base,
                                          const ParameterState& state) {
  if (k >= shards_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("CreateAndSeedShard: shard ",
                                                   k, " is outside [0, ",
                                                   shards_.size(), ")"));
  }
  if (state.params.size() != total_ || state.optimizer.size != total_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CreateAndSeedShard needs the state of all ", total_, " elements; got ",
        state.params.size(), " parameters and an optimizer state of ",
        state.optimizer.size));
  }
  RETURN_IF_ERROR(ValidateOptimizerState(state.optimizer));
  calls_.fetch_add(1);
  const absl::Status connected = ConnectShard(k);
  if (!connected.ok()) return CancelledOr(NameShard(k, connected));
  const PsShardLocation& location = shards_[k].location;
  const absl::Time deadline = absl::Now() + options_.timeout;
  ps::CreateShardRequest request = base;
  request.set_job_id(job_id_);
  request.set_token(options_.token);
  request.set_shard(location.shard);
  request.set_num_shards(static_cast<int32_t>(shards_.size()));
  request.set_total_elements(static_cast<int64_t>(total_));
  request.set_begin(static_cast<int64_t>(location.begin));
  request.set_end(static_cast<int64_t>(location.end));
  request.set_first_step(state.step);
  request.set_seeded(true);
  std::unique_ptr<ps::ParameterServer::Stub> stub =
      ps::ParameterServer::NewStub(shards_[k].channel);
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    LiveCall live(this, &context);
    if (!live.status().ok()) return live.status();
    ps::CreateShardResponse response;
    const absl::Status created =
        FromGrpcStatus(stub->CreateShard(&context, request, &response));
    if (!created.ok()) return CancelledOr(NameShard(k, created));
  }
  const absl::Status seeded = SeedShard(k, state, deadline);
  if (seeded.ok()) return absl::OkStatus();
  // Leave no half-made shard behind: a retry creates it again. (A
  // cancelled client skips it: the coordinator releases the shards of
  // jobs that end.)
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + options_.timeout));
  LiveCall live(this, &context);
  if (live.status().ok()) {
    ps::ReleaseShardRequest release;
    release.set_job_id(job_id_);
    release.set_token(options_.token);
    release.set_shard(location.shard);
    ps::ReleaseShardResponse released;
    (void)stub->ReleaseShard(&context, release, &released);
  }
  return CancelledOr(NameShard(k, seeded));
}

absl::Status PsClient::ReleaseShards() {
  const absl::Time deadline = absl::Now() + options_.timeout;
  return ForEachShard([&](size_t k) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    ps::ReleaseShardRequest request;
    request.set_job_id(job_id_);
    request.set_token(options_.token);
    request.set_shard(shards_[k].location.shard);
    ps::ReleaseShardResponse response;
    const absl::Status status =
        FromGrpcStatus(ps::ParameterServer::NewStub(shards_[k].channel)
                           ->ReleaseShard(&context, request, &response));
    // Gone already (released by the coordinator or an earlier call).
    if (status.code() == absl::StatusCode::kNotFound) return absl::OkStatus();
    return status;
  });
}

}  // namespace gradsync
