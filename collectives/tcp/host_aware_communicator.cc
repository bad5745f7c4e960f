#include "collectives/tcp/host_aware_communicator.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "collectives/algorithms/hierarchical_communicator.h"
#include "collectives/all_reduce_algorithm.h"
#include "collectives/host_identity.h"

namespace gradsync {

absl::StatusOr<std::unique_ptr<Communicator>> CreateHostAwareCommunicator(
    Store* store, int rank, int size, const HierarchicalOptions& options) {
  if (size < 1 || rank < 0 || rank >= size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " is not in a world of size ", size));
  }
  // Forced flat: the caller's options as they are, no host exchange.
  if (!MayChooseHierarchical(options.tcp.algorithm)) {
    return CreateTcpCommunicator(store, rank, size, options.tcp);
  }
  HierarchicalSettings settings;
  settings.algorithm = options.tcp.algorithm;
  settings.min_bytes = options.min_bytes;
  settings.halving_doubling_max_bytes = options.tcp.halving_doubling_max_bytes;
  settings.host_id = !options.host_id.empty()       ? options.host_id
                     : !options.tcp.host_id.empty() ? options.tcp.host_id
                                                    : LocalHostIdentity();
  settings.connect_timeout = options.tcp.connect_timeout;
  settings.cancelled = options.tcp.cancelled;
  settings.on_placement = options.on_placement;
  TcpOptions flat = options.tcp;
  flat.algorithm = AllReduceAlgorithm::kAuto;
  // One identity for both: shared memory carries exactly the pairs the
  // hierarchy puts on one host.
  flat.host_id = settings.host_id;
  TcpOptions inner = flat;
  inner.listen_port = 0;
  // Peers there are sub-ranks; the flat communicator reports every pair.
  inner.on_transport = nullptr;
  return CreateHierarchicalCommunicator(
      store, rank, size, settings,
      [&](Store* s, int r, int n, absl::string_view name)
          -> absl::StatusOr<std::unique_ptr<Communicator>> {
        if (name.empty()) return CreateTcpCommunicator(s, r, n, flat);
        TcpOptions named = inner;
        named.job_id = absl::StrCat(options.tcp.job_id, "/", name);
        return CreateTcpCommunicator(s, r, n, named);
      });
}

}  // namespace gradsync
