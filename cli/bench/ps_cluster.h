// The parameter servers a `gradsync bench --backend ps` run talks to: the
// launcher starts K of its own (in its process, on 127.0.0.1, any free
// port, one shard each) unless --ps-addresses names running gradsync-ps
// servers, which are probed before any rank starts.
//
//   ASSIGN_OR_RETURN(std::vector<std::unique_ptr<PsServer>> servers,
//                    StartLocalPsServers(2));
//   RETURN_IF_ERROR(ProbePsServers({"10.0.0.5:29600"}, absl::Seconds(10)));
//
// Thread-compatible.
#ifndef GRADSYNC_CLI_BENCH_PS_CLUSTER_H_
#define GRADSYNC_CLI_BENCH_PS_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/ps/daemon/ps_server.h"

namespace gradsync {
namespace cli {
namespace bench {

// Starts `count` PsServers on 127.0.0.1:0, their connections under TCP
// congestion control policy `tcp_congestion` (common/tcp_congestion.h),
// each with a tensor plane on a free port when `tensor_plane`.
// Errors: PsServer::Start's (UNAVAILABLE when no port can be bound),
// naming which server.
[[nodiscard]] absl::StatusOr<std::vector<std::unique_ptr<PsServer>>>
StartLocalPsServers(int count, const std::string& tcp_congestion = "auto",
                    bool tensor_plane = false);

// The addresses the servers bound, in order.
std::vector<std::string> PsServerAddresses(
    const std::vector<std::unique_ptr<PsServer>>& servers);

// Asks each server for the counters of a job no one runs: NOT_FOUND means
// it answers. UNAVAILABLE (or DEADLINE_EXCEEDED after `timeout`) naming
// the first address that does not, and saying what to check.
[[nodiscard]] absl::Status ProbePsServers(
    const std::vector<std::string>& addresses, absl::Duration timeout);

}  // namespace bench
}  // namespace cli
}  // namespace gradsync

#endif  // GRADSYNC_CLI_BENCH_PS_CLUSTER_H_
