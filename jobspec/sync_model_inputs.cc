#include "jobspec/sync_model_inputs.h"

#include "jobspec/job_spec.h"

namespace gradsync {

SyncModelInputs SyncModelInputsFromSpec(const JobSpec& spec,
                                        const SyncPlacement& placement,
                                        int64_t sync_bytes) {
  return SyncModelInputsOf(placement, sync_bytes, PsPartitionBytes(spec.ps()));
}

}  // namespace gradsync
