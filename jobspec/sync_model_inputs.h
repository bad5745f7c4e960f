// The inputs of the alpha-beta model (study/alpha_beta/sync_model.h) for a
// placed job, with the partition size its spec asks for: `--mode auto` on
// the coordinator (server/coordinator/job_auto.h) and `gradsync explain`
// (cli/lab/explain_command.h, for study/explain.h) both predict from
// these, so that they predict the same job the same way. The placement
// and the cases themselves are the study's
// (study/alpha_beta/sync_placement.h).
//
//   SyncPlacement placement = SyncPlacementOf(rank_hosts, shard_servers);
//   SyncModelInputs in = SyncModelInputsFromSpec(spec, placement, bytes);
//   if (ValidateSyncCase(in.ps).ok()) ... PredictSeconds(in.ps, links) ...
//
// Pure functions; thread-safe.
#ifndef GRADSYNC_JOBSPEC_SYNC_MODEL_INPUTS_H_
#define GRADSYNC_JOBSPEC_SYNC_MODEL_INPUTS_H_

#include <cstdint>

#include "proto/job.pb.h"
#include "study/alpha_beta/sync_placement.h"

namespace gradsync {

// The model's cases for a step of `sync_bytes` of `spec`'s job placed as
// `placement` (SyncModelInputsOf), pipelined in the spec's partitions
// (PsPartitionBytes, jobspec/job_spec.h). A case may still be invalid (no
// host, no bytes): check it with ValidateSyncCase.
SyncModelInputs SyncModelInputsFromSpec(const JobSpec& spec,
                                        const SyncPlacement& placement,
                                        int64_t sync_bytes);

}  // namespace gradsync

#endif  // GRADSYNC_JOBSPEC_SYNC_MODEL_INPUTS_H_
