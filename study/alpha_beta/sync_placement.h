// The inputs of the alpha-beta model (sync_model.h) for a placed job: where
// its ranks and parameter-server shards run, and its ring and its PS as the
// model counts them. `--mode auto` on the coordinator and `gradsync
// explain` both predict from these (through jobspec/sync_model_inputs.h,
// which reads the partition size from the job's spec), so that they
// predict the same job the same way.
//
//   SyncPlacement placement = SyncPlacementOf(rank_hosts, shard_servers);
//   SyncModelInputs in = SyncModelInputsOf(placement, bytes, partition);
//   if (ValidateSyncCase(in.ps).ok()) ... PredictSeconds(in.ps, links) ...
//
// The model counts hosts, not ranks: ranks that share a host share its
// link. Pure functions; thread-safe.
#ifndef GRADSYNC_STUDY_ALPHA_BETA_SYNC_PLACEMENT_H_
#define GRADSYNC_STUDY_ALPHA_BETA_SYNC_PLACEMENT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "study/alpha_beta/sync_model.h"

namespace gradsync {

// Where a job's ranks and parameter-server shards run.
struct SyncPlacement {
  // The distinct hosts of the ranks, in order of first appearance: the
  // model's N is their count.
  std::vector<std::string> hosts;
  // The distinct servers of the shards, in order of first appearance: K.
  std::vector<std::string> servers;
  // Every server runs on one of the ranks' hosts (and there is one).
  bool colocated = false;
};

// The placement of ranks on `rank_hosts` (one entry per rank) and of
// shards on `shard_servers` (one (server id, its host) per shard; a host
// "" is unknown, and not one of the ranks').
SyncPlacement SyncPlacementOf(
    const std::vector<std::string>& rank_hosts,
    const std::vector<std::pair<std::string, std::string>>& shard_servers);

struct SyncModelInputs {
  SyncCase ring;  // the ring all-reduce over the hosts
  SyncCase ps;    // the PS: separate or colocated, pipelined
};

// The model's cases for a step of `sync_bytes` placed as `placement`: the
// ring over its hosts; the PS with K = its servers (at most one per host
// when colocated, at least 1), pipelined in partitions of
// `partition_bytes`. A case may still be invalid (no host, no bytes):
// check it with ValidateSyncCase.
SyncModelInputs SyncModelInputsOf(const SyncPlacement& placement,
                                  int64_t sync_bytes, int64_t partition_bytes);

}  // namespace gradsync

#endif  // GRADSYNC_STUDY_ALPHA_BETA_SYNC_PLACEMENT_H_
