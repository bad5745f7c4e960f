// A fixture of scripts/check_layering.sh (tests/repo/CMakeLists.txt):
// jobspec/ may include common/, collectives/, proto/ and itself, and
// nothing of the servers or the study. Not compiled.
#include "collectives/types.h"
#include "common/units.h"
#include "jobspec/job_spec.h"
#include "proto/job.pb.h"
#include "server/coordinator/auto_mode.h"
#include "study/sim/trace.h"
