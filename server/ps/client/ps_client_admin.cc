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
  if (k >= core_.shards.size()) {
    return absl::InvalidArgumentError(absl::StrCat("CreateAndSeedShard: shard ",
                                                   k, " is outside [0, ",
                                                   core_.shards.size(), ")"));
  }
  if (state.params.size() != core_.total ||
      state.optimizer.size != core_.total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CreateAndSeedShard needs the state of all ", core_.total,
        " elements; got ", state.params.size(),
        " parameters and an optimizer state of ", state.optimizer.size));
  }
  RETURN_IF_ERROR(ValidateOptimizerState(state.optimizer));
  core_.calls.fetch_add(1);
  const absl::Status connected = ConnectShard(k);
  if (!connected.ok()) return core_.CancelledOr(NameShard(k, connected));
  const PsShardLocation& location = core_.shards[k].location;
  const absl::Time deadline = absl::Now() + core_.options.timeout;
  ps::CreateShardRequest request = base;
  request.set_job_id(core_.job_id);
  request.set_token(core_.options.token);
  request.set_shard(location.shard);
  request.set_num_shards(static_cast<int32_t>(core_.shards.size()));
  request.set_total_elements(static_cast<int64_t>(core_.total));
  request.set_begin(static_cast<int64_t>(location.begin));
  request.set_end(static_cast<int64_t>(location.end));
  request.set_first_step(state.step);
  request.set_seeded(true);
  std::unique_ptr<ps::ParameterServer::Stub> stub =
      ps::ParameterServer::NewStub(core_.shards[k].channel);
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    LiveCall live(&core_, &context);
    if (!live.status().ok()) return live.status();
    ps::CreateShardResponse response;
    const absl::Status created =
        FromGrpcStatus(stub->CreateShard(&context, request, &response));
    if (!created.ok()) return core_.CancelledOr(NameShard(k, created));
  }
  const absl::Status seeded = SeedShard(k, state, deadline);
  if (seeded.ok()) return absl::OkStatus();
  // Leave no half-made shard behind: a retry creates it again. (A
  // cancelled client skips it: the coordinator releases the shards of
  // jobs that end.)
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + core_.options.timeout));
  LiveCall live(&core_, &context);
  if (live.status().ok()) {
    ps::ReleaseShardRequest release;
    release.set_job_id(core_.job_id);
    release.set_token(core_.options.token);
    release.set_shard(location.shard);
    ps::ReleaseShardResponse released;
    (void)stub->ReleaseShard(&context, release, &released);
  }
  return core_.CancelledOr(NameShard(k, seeded));
}

absl::Status PsClient::ReleaseShards() {
  const absl::Time deadline = absl::Now() + core_.options.timeout;
  return ForEachShard([&](size_t k) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    ps::ReleaseShardRequest request;
    request.set_job_id(core_.job_id);
    request.set_token(core_.options.token);
    request.set_shard(core_.shards[k].location.shard);
    ps::ReleaseShardResponse response;
    const absl::Status status =
        FromGrpcStatus(ps::ParameterServer::NewStub(core_.shards[k].channel)
                           ->ReleaseShard(&context, request, &response));
    // Gone already (released by the coordinator or an earlier call).
    if (status.code() == absl::StatusCode::kNotFound) return absl::OkStatus();
    return status;
  });
}

}  // namespace gradsync
