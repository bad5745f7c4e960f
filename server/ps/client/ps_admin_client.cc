#include "server/ps/client/ps_admin_client.h"

#include <grpcpp/client_context.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_connect.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"
#include "server/ps/transport/ps_transport.h"

namespace gradsync {

PsAdminClient::PsAdminClient(std::string address, absl::Duration timeout,
                             const GrpcSecurity& security)
    : address_(std::move(address)),
      timeout_(timeout),
      channel_(CreatePsControlChannel(address_, security)),
      stub_(ps::ParameterServer::NewStub(channel_)) {}

absl::StatusOr<absl::Time> PsAdminClient::Connected() {
  const absl::Time deadline = absl::Now() + timeout_;
  RETURN_IF_ERROR(Annotate(ConnectChannel(channel_.get(), deadline),
                           absl::StrCat("parameter server ", address_)));
  return deadline;
}

std::unique_ptr<PsAdminClient> PsAdminClient::Connect(
    const std::string& address, absl::Duration timeout,
    const GrpcSecurity& security) {
  return std::unique_ptr<PsAdminClient>(
      new PsAdminClient(address, timeout, security));
}

absl::Status PsAdminClient::CreateShard(const ps::CreateShardRequest& request) {
  ASSIGN_OR_RETURN(const absl::Time deadline, Connected());
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline));
  ps::CreateShardResponse response;
  return Annotate(
      FromGrpcStatus(stub_->CreateShard(&context, request, &response)),
      absl::StrCat("parameter server ", address_));
}

absl::StatusOr<int> PsAdminClient::ReleaseShard(const std::string& job_id,
                                                int shard) {
  ASSIGN_OR_RETURN(const absl::Time deadline, Connected());
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline));
  ps::ReleaseShardRequest request;
  request.set_job_id(job_id);
  request.set_shard(shard);
  ps::ReleaseShardResponse response;
  RETURN_IF_ERROR(Annotate(
      FromGrpcStatus(stub_->ReleaseShard(&context, request, &response)),
      absl::StrCat("parameter server ", address_)));
  return response.released();
}

absl::StatusOr<std::vector<ps::ShardStats>> PsAdminClient::GetShardStats(
    const std::string& job_id, int shard) {
  ASSIGN_OR_RETURN(const absl::Time deadline, Connected());
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline));
  ps::GetShardStatsRequest request;
  request.set_job_id(job_id);
  request.set_shard(shard);
  ps::GetShardStatsResponse response;
  RETURN_IF_ERROR(Annotate(
      FromGrpcStatus(stub_->GetShardStats(&context, request, &response)),
      absl::StrCat("parameter server ", address_)));
  return std::vector<ps::ShardStats>(response.shards().begin(),
                                     response.shards().end());
}

}  // namespace gradsync
