#include "server/store/sync_server.h"

#include <grpcpp/resource_quota.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gradsync {

absl::StatusOr<std::string> ListenHost(const std::string& address,
                                       absl::string_view what,
                                       absl::string_view examples) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(absl::string_view(address).substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " listen address '", address,
                     "' is not host:port (for example ", examples, ")"));
  }
  return address.substr(0, colon);
}

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
