// The inputs of the alpha-beta model (study/alpha_beta/sync_model.h) for a
// placed job: its ring and its PS as the model counts them. `--mode auto` on
// the coordinator (server/coordinator/job_auto.h) and `gradsync explain`
// (cli/lab/explain.h) both predict from these, so that they predict the
// same job the same way.
//
//   SyncPlacement placement = SyncPlacementOf(rank_hosts, shard_servers);
//   SyncModelInputs in = SyncModelInputsFromSpec(spec, placement, bytes);
//   if (ValidateSyncCase(in.ps).ok()) ... PredictSeconds(in.ps, links) ...
//
// The model counts hosts, not ranks: ranks that share a host share its
// link. Pure functions; thread-safe.
#ifndef GRADSYNC_JOBSPEC_SYNC_MODEL_INPUTS_H_
#define GRADSYNC_JOBSPEC_SYNC_MODEL_INPUTS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "proto/job.pb.h"
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

// The model's cases for a step of `sync_bytes` of `spec`'s job placed as
// `placement`: the ring over its hosts; the PS with K = its servers (at
// most one per host when colocated, at least 1), pipelined in the spec's
// partitions (PsPartitionBytes, jobspec/job_spec.h). A case may still be
// invalid (no host, no bytes): check it with ValidateSyncCase.
SyncModelInputs SyncModelInputsFromSpec(const JobSpec& spec,
                                        const SyncPlacement& placement,
                                        int64_t sync_bytes);

}  // namespace gradsync

#endif  // GRADSYNC_JOBSPEC_SYNC_MODEL_INPUTS_H_
