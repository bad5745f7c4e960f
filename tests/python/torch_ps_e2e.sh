#!/bin/sh
# The PS path of PyTorch jobs and their switches, end to end, with
# Debian's torch and the real daemons: `gradsync local up --workers 2
# --ps 1` (mTLS, a user token), then `gradsync submit --entrypoint` of
# tests/python/ddp_check.py through gs.DistributedOptimizer:
#   1. the sum-only PS (the shards average, torch's SGD with momentum and
#      a StepLR steps on each rank): 50 steps whose losses follow a
#      one-rank run within 1e-5, parameters bitwise equal across ranks at
#      every step, every step on the PS, the PS steps in `gradsync
#      metrics`;
#   2. the server-side PS (Adam on the shards, the learning rate following
#      the scheduler): losses follow the one-rank torch Adam run within
#      1e-5 (two Adam implementations agree to ~2e-7), parameters bitwise
#      equal;
#   3. PS -> ring -> PS (--switch-at 15:ring --switch-at 30:ps), server-side
#      Adam: the Adam state moves off the shards and back; the run follows
#      the unswitched one (2.) within 1e-5, every rank on the same path at
#      every step;
#   4. a runtime `gradsync switch JOB ring` of a running sum-only PS job:
#      every rank leaves the PS at the same step, the losses still follow
#      the one-rank run within 1e-5, and the metrics show both modes;
#   5. --mode auto: the coordinator measures both paths on the torch job's
#      step reports and switches it (every rank at the same steps).
# Usage: torch_ps_e2e.sh PATH/TO/gradsync SOURCE_DIR
set -eu
gradsync=$1
src=$2
# shellcheck source=tests/python/e2e_setup.sh
name=gradsync-torch-ps
. "$src/tests/python/e2e_setup.sh"
pkg=$(cd "$(dirname "$gradsync")/../python" && pwd)

# One-rank baselines (no cluster), through the same wrapper.
for opt in sgd adam; do
  (cd "$work" && PYTHONPATH="$pkg" $py ddp_check.py --out "$work/one-$opt" \
    --skip-checks --wrap sum --opt $opt > "$dir/one-$opt.log" 2>&1) ||
    { echo "the one-rank $opt run failed:"; cat "$dir/one-$opt.log"; exit 1; }
done

out=$("$gradsync" local up --workers 2 --ps 1 --port 0 --run-dir "$dir" \
  --timeout 60)
echo "$out"
eval "$(echo "$out" | grep '^export ')"

submit() {  # ARGS...: prints the job id
  "$gradsync" submit --json "$@" |
    sed -n 's/.*"jobId": *"\([^"]*\)".*/\1/p'
}
finish() {  # JOB: waits for it, which must succeed
  "$gradsync" watch "$1" --deadline 120 >/dev/null 2>&1 || true
  status=$("$gradsync" status "$1")
  echo "$status" | grep -q "SUCCEEDED" || {
    echo "$status"; "$gradsync" logs "$1" | tail -60; exit 1; }
}
same_params() {  # OUT: parameters bitwise equal across ranks, every step
  cmp "$1/params.0" "$1/params.1" ||
    { echo "$1: parameters differ across ranks"; exit 1; }
  cmp "$1/path.0" "$1/path.1" ||
    { echo "$1: the ranks took different paths"; exit 1; }
}
follows() {  # REFERENCE RUN TOLERANCE LABEL
  $py - "$1/loss.0" "$2/loss.0" "$3" "$4" <<'PYEOF'
import sys
one = [float(x) for x in open(sys.argv[1])]
two = [float(x) for x in open(sys.argv[2])]
tolerance, label = float(sys.argv[3]), sys.argv[4]
assert len(one) == len(two), (len(one), len(two))
worst = max(abs(a - b) / max(abs(a), 1e-12) for a, b in zip(one, two))
print(f"{label}: largest relative loss difference {worst:.2e} over "
      f"{len(one)} steps (last {one[-1]:.6f} vs {two[-1]:.6f})")
assert worst <= tolerance, (worst, tolerance)
assert two[-1] < two[0], "the loss did not fall"
PYEOF
}

# 1. The sum-only PS.
job=$(submit --workers 2 --mode ps --workdir "$work" --entrypoint \
  "$py ddp_check.py --out $work/sum --skip-checks --wrap sum")
finish "$job"
same_params "$work/sum"
[ "$(grep -c '^ps$' "$work/sum/path.0")" = 50 ] ||
  { echo "not every step went through the PS"; exit 1; }
follows "$work/one-sgd" "$work/sum" 1e-5 "sum-only PS, 2 ranks against 1"
"$gradsync" metrics "$job" -o csv > "$dir/sum.csv"
grep -q ",SYNC_MODE_PS," "$dir/sum.csv" ||
  { echo "metrics show no PS step:"; head -3 "$dir/sum.csv"; exit 1; }
echo "sum-only PS ok: $job"

# 2. Adam on the shards.
job=$(submit --workers 2 --mode ps --workdir "$work" --entrypoint \
  "$py ddp_check.py --out $work/adam --skip-checks --wrap server --opt adam")
finish "$job"
same_params "$work/adam"
follows "$work/one-adam" "$work/adam" 1e-5 "server-side Adam, 2 ranks against 1"
echo "server-side PS ok: $job"

# 3. PS -> ring -> PS, scripted.
job=$(submit --workers 2 --mode ps --switch-at 15:ring --switch-at 30:ps \
  --workdir "$work" --entrypoint \
  "$py ddp_check.py --out $work/switched --skip-checks --wrap server --opt adam")
finish "$job"
same_params "$work/switched"
paths=$(uniq -c "$work/switched/path.0" | awk '{printf "%s:%s ", $2, $1}')
[ "$paths" = "ps:15 ring:15 ps:20 " ] ||
  { echo "the switches took effect at the wrong steps: $paths"; exit 1; }
follows "$work/adam" "$work/switched" 1e-5 "PS -> ring -> PS against PS"
echo "switched run ok: $job ($paths)"

# 4. A runtime switch of a running job.
job=$(submit --workers 2 --mode ps --workdir "$work" --entrypoint \
  "$py ddp_check.py --out $work/runtime --skip-checks --wrap sum --sleep 0.1")
i=0
until [ "$("$gradsync" metrics "$job" -o csv 2>/dev/null | grep -c '^')" -ge 20 ]; do
  i=$((i + 1)); [ $i -lt 1200 ] || { echo "job $job reported no steps";
    "$gradsync" status "$job"; "$gradsync" logs "$job" | tail -40; exit 1; }
  sleep 0.1
done
"$gradsync" switch "$job" ring
finish "$job"
same_params "$work/runtime"
grep -q '^ring$' "$work/runtime/path.0" ||
  { echo "the runtime switch never took effect"; exit 1; }
tail -1 "$work/runtime/path.0" | grep -q ring ||
  { echo "the job went back to the PS"; exit 1; }
follows "$work/one-sgd" "$work/runtime" 1e-5 "runtime PS -> ring against 1 rank"
"$gradsync" metrics "$job" -o csv > "$dir/runtime.csv"
grep -q ",SYNC_MODE_PS," "$dir/runtime.csv" &&
  grep -q ",SYNC_MODE_RING," "$dir/runtime.csv" ||
  { echo "metrics do not show both modes"; exit 1; }
echo "runtime switch ok: $job ($(uniq -c "$work/runtime/path.0" | tr -s ' \n' ' '))"

# 5. --mode auto.
job=$(submit --workers 2 --mode auto --workdir "$work" --entrypoint \
  "$py ddp_check.py --out $work/auto --skip-checks --wrap sum --steps 80 --sleep 0.1")
finish "$job"
same_params "$work/auto"
grep -q '^ps$' "$work/auto/path.0" && grep -q '^ring$' "$work/auto/path.0" ||
  { echo "auto did not try both paths: $(uniq -c "$work/auto/path.0")"; exit 1; }
echo "auto ok: $job ($(uniq -c "$work/auto/path.0" | tr -s ' \n' ' '))"
echo "torch-ps-e2e-ok"
