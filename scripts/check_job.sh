#!/usr/bin/env bash
# Checks a finished gradsync job from its own records, as the switch tests
# do in-process: that it SUCCEEDED; that every rank ran every step once (no
# step lost or applied twice, the same steps on every rank); that each step
# ran in the mode the job's switch table says (`gradsync status`: the mode
# of step 0, then each switch from its step on); and that the parameters
# were bitwise the same on every rank after every step (the per-step
# param_hash of `gradsync metrics`). Prints one summary line, or what is
# wrong and exits 1.
#
#   scripts/check_job.sh job-3                 # any number of switches
#   scripts/check_job.sh job-3 --switches 2    # and at least 2 of them
#
# Uses $GRADSYNC (default: build/cli/gradsync, then gradsync on PATH) and
# the coordinator of $GRADSYNC_COORDINATOR, as the CLI does.
set -euo pipefail

usage() {
  echo "usage: $0 JOB [--switches K]" >&2
  exit 2
}

[[ $# -ge 1 ]] || usage
job="$1"
shift
min_switches=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --switches)
      [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || usage
      min_switches=$2
      shift 2
      ;;
    *) usage ;;
  esac
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
G="${GRADSYNC:-}"
if [[ -z "${G}" ]]; then
  if [[ -x "${root}/build/cli/gradsync" ]]; then
    G="${root}/build/cli/gradsync"
  else
    G="gradsync"
  fi
fi

fail() {
  echo "check_job.sh: ${job}: $*" >&2
  exit 1
}

status="$("${G}" status "${job}")" || fail "gradsync status failed"
state="$(sed -n 's/^state: *//p' <<<"${status}")"
[[ "${state}" == "SUCCEEDED" ]] ||
  fail "state ${state:-unknown}, not SUCCEEDED (gradsync status ${job})"
# "training:  ring, 2 workers, ..." names the mode of step 0.
first_mode="$(sed -n 's/^training: *\([a-z]*\),.*/\1/p' <<<"${status}")"
[[ -n "${first_mode}" ]] || fail "no training line in gradsync status"
# The switch table: "STEP FROM TO BY MOVE_MS" rows after "switches:".
switches="$(awk '/^switches:/ { t = 1; next }
                 t && $1 == "STEP" { next }
                 t && NF >= 3 && $1 ~ /^[0-9]+$/ { printf "%s:%s ", $1, $3 }
                 t && NF == 0 { t = 0 }' <<<"${status}")"
count=$(wc -w <<<"${switches}")
[[ "${count}" -ge "${min_switches}" ]] ||
  fail "${count} switches in its switch table, expected at least ${min_switches}"

"${G}" metrics "${job}" --format csv | awk -F, -v first="${first_mode}" \
  -v switches="${switches}" -v job="${job}" '
  BEGIN {
    n = split(switches, list, " ")
    for (i = 1; i <= n; ++i) {
      split(list[i], p, ":")
      at[i] = p[1] + 0
      to[i] = p[2]
    }
  }
  NR == 1 {
    for (i = 1; i <= NF; ++i) col[$i] = i
    if (!("rank" in col) || !("step" in col) || !("mode" in col) ||
        !("param_hash" in col)) {
      print "metrics lack rank, step, mode or param_hash columns"
      bad = 1
      exit
    }
    next
  }
  {
    rank = $col["rank"]
    step = $col["step"] + 0
    mode = $col["mode"] == "SYNC_MODE_PS" ? "ps" : "ring"
    want = first
    for (i = 1; i <= n; ++i) if (step >= at[i]) want = to[i]
    if (mode != want && wrong_mode++ < 5) {
      printf "step %d on rank %s ran in %s; its switch table says %s\n",
             step, rank, mode, want
    }
    if ((rank, step) in seen && repeated++ < 5) {
      printf "step %d on rank %s reported twice\n", step, rank
    }
    seen[rank, step] = 1
    ranks[rank] = 1
    steps[step] += 1
    if (!(step in hash)) {
      hash[step] = $col["param_hash"]
    } else if (hash[step] != $col["param_hash"] && differ++ < 5) {
      printf "step %d: rank %s parameters differ from another rank (param_hash %s against %s)\n",
             step, rank, $col["param_hash"], hash[step]
    }
    if (rows++ == 0 || step < lo) lo = step
    if (step > hi) hi = step
    count[mode] += 1
  }
  END {
    if (bad) exit 1
    if (rows == 0) { print "no step metrics"; exit 1 }
    nranks = 0
    for (r in ranks) ++nranks
    for (s = lo; s <= hi; ++s) {
      if (steps[s] != nranks && missing++ < 5) {
        printf "step %d reported by %d of %d ranks\n", s, steps[s] + 0, nranks
      }
    }
    if (wrong_mode || repeated || differ || missing) exit 1
    equal = "parameters bitwise equal across ranks after every step"
    if (nranks == 1) equal = "one rank, so no parameters to compare"
    printf "%s: steps %d-%d on %d rank%s, each once; %d ring and %d ps steps as its %d %s; %s\n",
           job, lo, hi, nranks, nranks == 1 ? "" : "s",
           count["ring"] / nranks, count["ps"] / nranks,
           n, n == 1 ? "switch says" : "switches say", equal
  }' || fail "see above"
