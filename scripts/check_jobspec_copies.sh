#!/usr/bin/env bash
# What a job spec means is defined once, in jobspec/ (issue 42): this
# fails when a copy of one of its definitions reappears elsewhere in the
# C++ sources under ROOT (default: the repository this script sits in):
#
#   - the PS partition default (4 MiB) as a literal beside a partition
#     (use kDefaultPsPartitionBytes or PsPartitionBytes, job_spec.h);
#   - the optimizer's defaults as constants of their own (kDefaultMomentum,
#     kDefaultBeta1, ...: job_spec.h);
#   - the sync mode's names written as a ternary on SYNC_MODE_PS and
#     "ps" (SyncModeName and ParseSyncModeName, sync_mode_name.h);
#   - a JSON parser of JobSpec (JsonStringToMessage beside a JobSpec:
#     ParseJobSpecJson, job_spec_json.h).
#
# tests/ may spell values out (that is what they check), and gradsync
# bench's own --ps-partition flag (cli/bench/) runs no job spec.
#
# Usage: scripts/check_jobspec_copies.sh [ROOT]
# Prints each copy as "file:line: ..." and exits 1 when there is one;
# prints a one-line summary and exits 0 otherwise.
set -euo pipefail
ROOT=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
cd "$ROOT"

files=$(for dir in common security observability collectives study models server worker cli python; do
  if [ -d "$dir" ]; then
    find "$dir" -type f \( -name '*.h' -o -name '*.cc' -o -name '*.cu' \
      -o -name '*.cuh' \)
  fi
done | grep -v '^cli/bench/' | sort)
if [ -z "$files" ]; then
  echo "check_jobspec_copies: no sources found under $ROOT" >&2
  exit 1
fi

copies=0
report() {  # PATTERN WHAT: every line of $files matching PATTERN
  local hits
  # shellcheck disable=SC2086
  hits=$(grep -nE "$1" $files || true)
  if [ -n "$hits" ]; then
    while IFS= read -r hit; do
      echo "${hit%%:[^0-9]*}: $2"
    done < <(sed -E 's/^([^:]*:[0-9]*):.*/\1/' <<<"$hits")
    copies=$((copies + $(wc -l <<<"$hits")))
  fi
}

report '[Pp]artition.*(\b4 << 20\b|\b4194304\b|\{4\} << 20)' \
  "the PS partition default, copied; use kDefaultPsPartitionBytes or PsPartitionBytes (jobspec/job_spec.h)"
report 'constexpr +double +kDefault(Adam)?(Momentum|Beta1|Beta2|Epsilon)\b' \
  "an optimizer default, copied; use jobspec/job_spec.h's (or OptimizerConfigFromSpec, jobspec/optimizer_spec.h)"
report 'SYNC_MODE_PS[^;]*\?[^;]*"ps"|"ps"[^;]*\?[^;]*SYNC_MODE_PS' \
  "the sync mode's name, mapped by hand; use SyncModeName or ParseSyncModeName (jobspec/sync_mode_name.h)"

# A JobSpec parsed from JSON anywhere but jobspec/job_spec_json.cc.
# shellcheck disable=SC2086
for file in $(grep -lE 'JsonStringToMessage' $files || true); do
  if grep -qE '\bJobSpec\b' "$file"; then
    line=$(grep -nE 'JsonStringToMessage' "$file" | head -1 | cut -d: -f1)
    echo "$file:$line: a JobSpec JSON parser of its own; use ParseJobSpecJson (jobspec/job_spec_json.h)"
    copies=$((copies + 1))
  fi
done

if [ "$copies" -gt 0 ]; then
  echo "check_jobspec_copies: $copies copy(ies) of jobspec/'s definitions; define it once, in jobspec/"
  exit 1
fi
echo "check_jobspec_copies: $(wc -l <<<"$files") files, no copy of jobspec/'s definitions"
