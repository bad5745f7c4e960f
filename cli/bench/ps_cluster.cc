#include "cli/bench/ps_cluster.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/ps/client/ps_admin_client.h"

namespace gradsync {
namespace cli {
namespace bench {

absl::StatusOr<std::vector<std::unique_ptr<PsServer>>> StartLocalPsServers(
    int count, const std::string& tcp_congestion, bool tensor_plane) {
  PsServerOptions options;
  options.transport.congestion_control = tcp_congestion;
  if (tensor_plane) options.tensor_port = 0;
  std::vector<std::unique_ptr<PsServer>> servers;
  for (int k = 0; k < count; ++k) {
    absl::StatusOr<std::unique_ptr<PsServer>> server =
        PsServer::Start("127.0.0.1:0", options);
    if (!server.ok()) {
      return Annotate(
          server.status(),
          absl::StrCat("starting local parameter server ", k, " of ", count));
    }
    servers.push_back(*std::move(server));
  }
  return servers;
}

std::vector<std::string> PsServerAddresses(
    const std::vector<std::unique_ptr<PsServer>>& servers) {
  std::vector<std::string> addresses;
  addresses.reserve(servers.size());
  for (const std::unique_ptr<PsServer>& server : servers) {
    addresses.push_back(server->address());
  }
  return addresses;
}

absl::Status ProbePsServers(const std::vector<std::string>& addresses,
                            absl::Duration timeout) {
  for (const std::string& address : addresses) {
    std::unique_ptr<PsAdminClient> admin =
        PsAdminClient::Connect(address, timeout);
    const absl::Status status =
        admin->GetShardStats("gradsync-bench-probe", -1).status();
    if (status.ok() || absl::IsNotFound(status)) continue;
    return absl::Status(
        status.code(),
        absl::StrCat("cannot use the parameter server at ", address,
                     " (--ps-addresses): ", status.message(),
                     "; is gradsync-ps running and listening there?"));
  }
  return absl::OkStatus();
}

}  // namespace bench
}  // namespace cli
}  // namespace gradsync
