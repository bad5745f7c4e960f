// PsAdminClient: the control calls of one parameter server (CreateShard,
// ReleaseShard, GetShardStats in proto/ps.proto), for whoever places a
// job's shards (the coordinator, tests, the bench). Each call has a
// deadline of `timeout` from its start.
//
//   std::unique_ptr<PsAdminClient> admin = PsAdminClient::Connect(address);
//   ps::CreateShardRequest request;   // job, shard, range, optimizer ...
//   RETURN_IF_ERROR(admin->CreateShard(request));
//   ASSIGN_OR_RETURN(std::vector<ps::ShardStats> stats,
//                    admin->GetShardStats("job-1", /*shard=*/-1));
//
// Errors: the server's status (ps_rpc.h), prefixed with its address;
// UNAVAILABLE when it cannot be reached; DEADLINE_EXCEEDED.
// Thread-safe.
#ifndef GRADSYNC_SERVER_PS_CLIENT_PS_ADMIN_CLIENT_H_
#define GRADSYNC_SERVER_PS_CLIENT_PS_ADMIN_CLIENT_H_

#include <grpcpp/channel.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/ps.grpc.pb.h"
#include "security/tls.h"

namespace gradsync {

class PsAdminClient {
 public:
  // Connects lazily to the PS at `address` ("host:port"), secured as
  // `security` says.
  static std::unique_ptr<PsAdminClient> Connect(
      const std::string& address, absl::Duration timeout = absl::Seconds(60),
      const GrpcSecurity& security = {});

  [[nodiscard]] absl::Status CreateShard(const ps::CreateShardRequest& request);
  // One shard, or all of the job's (shard -1); returns how many went.
  [[nodiscard]] absl::StatusOr<int> ReleaseShard(const std::string& job_id,
                                                 int shard);
  // One shard's counters, or all of the job's (shard -1).
  [[nodiscard]] absl::StatusOr<std::vector<ps::ShardStats>> GetShardStats(
      const std::string& job_id, int shard);

  const std::string& address() const { return address_; }

 private:
  PsAdminClient(std::string address, absl::Duration timeout,
                const GrpcSecurity& security);

  // A deadline of timeout_ from now, once the channel is READY (see
  // ConnectChannel); the error names the server.
  [[nodiscard]] absl::StatusOr<absl::Time> Connected();

  const std::string address_;
  const absl::Duration timeout_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<ps::ParameterServer::Stub> stub_;
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_PS_CLIENT_PS_ADMIN_CLIENT_H_
