// A fixture of scripts/check_layering.sh: the servers include jobspec/.
// Not compiled.
#include "jobspec/job_spec.h"
