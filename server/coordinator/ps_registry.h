// PsRegistry: the parameter servers (gradsync-ps daemons) the coordinator
// knows, and their leases. Which job's shards sit on which server is kept
// with the jobs (Job::ps_shards); the latest shard counters a server
// reports go to the jobs too (Job::SetShardStats), so that they outlive
// the server.
//
// Lifecycle of a parameter server, like a worker's:
//
//   Register ──► live (offered for shard placement, least loaded first)
//                  │ no PsHeartbeat for the lease time (CheckLeases), or a
//                  │ new server registered at its address
//                  ▼
//                LOST (kept for ListWorkers; its id is never reused; the
//                      daemon must register again under a new id)
//
// Not thread-safe: CoordinatorService owns one and guards it with its
// mutex.
#ifndef GRADSYNC_SERVER_COORDINATOR_PS_REGISTRY_H_
#define GRADSYNC_SERVER_COORDINATOR_PS_REGISTRY_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/coordinator.pb.h"

namespace gradsync {

struct PsRecord {
  std::string id;      // "ps-<number>"
  int64_t number = 0;  // registration order, from 1
  std::string host;
  std::string address;      // "host:port" that ranks connect to
  int32_t tensor_port = 0;  // its tensor plane's, on the host of address
  int32_t pid = 0;
  absl::Time last_heartbeat;
  // As WorkerRecord::lease_from.
  absl::Time lease_from = absl::InfinitePast();
  bool lost = false;
  absl::Time lost_time;
  // Handed to the server at registration: its heartbeats carry it.
  std::string credential;
};

// OK when `credential` is the one `server` was given at registration;
// otherwise PERMISSION_DENIED naming the server.
[[nodiscard]] absl::Status CheckCredential(const PsRecord& server,
                                           absl::string_view credential);

class PsRegistry {
 public:
  PsRegistry() = default;
  PsRegistry(const PsRegistry&) = delete;
  PsRegistry& operator=(const PsRegistry&) = delete;

  // Adds a live server with a new id, its lease starting at `now`.
  // INVALID_ARGUMENT (nothing added) when the host is empty or the address
  // is not "host:port" with a port in 1..65535.
  [[nodiscard]] absl::StatusOr<const PsRecord*> Register(
      const RegisterParameterServerRequest& request, absl::Time now);

  // The server with `id`, live or lost; null when unknown.
  PsRecord* Find(absl::string_view id);
  const PsRecord* Find(absl::string_view id) const;

  // The live server listening at `address`; null when none.
  const PsRecord* FindLiveByAddress(absl::string_view address) const;

  // Moves the lease of `server` to `now` (never backwards).
  static void Renew(PsRecord& server, absl::Time now);

  // Ids of live servers whose last heartbeat is more than `lease` before
  // `now`.
  std::vector<std::string> Expired(absl::Time now, absl::Duration lease) const;

  static void MarkLost(PsRecord& server, absl::Time now);

  // Live servers in registration order.
  std::vector<const PsRecord*> Live() const;

  // Every server, live and lost, in registration order.
  std::vector<const PsRecord*> All() const;

  // What a link probe measures (`gradsync links probe`): the first live
  // server with a tensor plane on each host outside `probed_hosts` (hosts
  // whose worker the probe measures already: one link per host).
  std::vector<ProbeServer> ProbeTargets(
      const std::set<std::string>& probed_hosts) const;

  // ---- persistence (state_saver.h) ----

  // The number of the next id.
  int64_t next_number() const { return next_number_; }
  // Adds a record read back from the state store under its own number and
  // id, and keeps next_number() above it.
  void Restore(PsRecord record) {
    const int64_t number = record.number;
    next_number_ = std::max(next_number_, number + 1);
    servers_[number] = std::move(record);
  }
  // Raises next_number() to `number` (never lowers it).
  void RaiseNextNumber(int64_t number) {
    next_number_ = std::max(next_number_, number);
  }

  // The public view of `server`, without its jobs and shard count (the
  // caller adds those from the job table).
  static ParameterServerInfo Info(const PsRecord& server);

 private:
  int64_t next_number_ = 1;
  std::map<int64_t, PsRecord> servers_;  // by number
};

}  // namespace gradsync

#endif  // GRADSYNC_SERVER_COORDINATOR_PS_REGISTRY_H_
