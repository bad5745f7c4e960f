#include "server/store/sync_server.h"

#include <grpcpp/resource_quota.h>

namespace gradsync {

void ConfigureSyncServer(grpc::ServerBuilder& builder,
                         const std::string& quota_name, int max_threads) {
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  grpc::ResourceQuota quota(quota_name);  // the builder keeps a reference
  quota.SetMaxThreads(max_threads);
  builder.SetResourceQuota(quota);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS,
                              1);
  builder.SetSyncServerOption(
      grpc::ServerBuilder::SyncServerOption::MIN_POLLERS,
      kSyncServerMinPollers);
  builder.SetSyncServerOption(
      grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
      kSyncServerMaxPollers);
}

}  // namespace gradsync
