// A fixture of scripts/check_layering.sh: the tests include anything.
// Not compiled.
#include "jobspec/job_spec.h"
#include "server/coordinator/job_auto.h"
