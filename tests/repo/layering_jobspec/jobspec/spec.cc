// A fixture of scripts/check_layering.sh (tests/repo/CMakeLists.txt):
// jobspec/ may include common/, collectives/, study/, proto/ and itself,
// and nothing of the servers or the workers. Not compiled.
#include "collectives/types.h"
#include "common/units.h"
#include "jobspec/job_spec.h"
#include "proto/job.pb.h"
#include "server/coordinator/job_auto.h"
#include "worker/train/trainer.h"
#include "study/alpha_beta/sync_model.h"
