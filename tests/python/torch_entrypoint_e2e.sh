#!/bin/sh
# PyTorch jobs end to end, with Debian's torch and the real daemons:
# `gradsync local up --workers 2` (mTLS, a user token, entrypoints allowed),
# then `gradsync submit --entrypoint` of tests/python/ddp_check.py:
#   1. 2 ranks on the gradsync backend: the Store contract through the
#      coordinator and exact collectives (in the script), then 50 DDP steps
#      whose losses follow a one-rank run of the same script within 1e-5
#      and whose parameters are bitwise equal across ranks at every step;
#      the steps reach `gradsync metrics` and `gradsync explain` (which
#      says that no link is in play on one host), the processes' output
#      `gradsync logs --rank`;
#   1b. the ring's exposed communication (python/gradsync/torch/overlap.py):
#      in every step's metrics 0 <= comm_s <= sync_busy_s, and a
#      communication-bound toy (a wide layer, no loss all-reduce, so the
#      steps' only collectives are DDP's buckets) waits for some of it
#      (comm_s > 0 summed over the steps after the first);
#   2. a rank that raises fails the job, with the traceback's last line in
#      `gradsync status`;
#   3. `cancel` leaves no process of the job behind;
#   4. a rank that reports no step within --step-deadline-s is killed and
#      named;
#   5. --max-restarts starts the group again as a new job, whose processes
#      see TORCHELASTIC_RESTART_COUNT=1, and that job succeeds;
#   6. a worker daemon killed with SIGKILL takes its processes with it, and
#      no rank file (the job's credentials) stays on disk.
# Usage: torch_entrypoint_e2e.sh PATH/TO/gradsync SOURCE_DIR
set -eu
gradsync=$1
src=$2
# shellcheck source=tests/python/e2e_setup.sh
name=gradsync-torch-e2e
. "$src/tests/python/e2e_setup.sh"

# The daemons' TMPDIR, where they write the rank files: none may be left.
mkdir "$dir/tmp"
out=$(TMPDIR=$dir/tmp "$gradsync" local up --workers 2 --port 0 \
  --run-dir "$dir" --timeout 60)
echo "$out"
eval "$(echo "$out" | grep '^export ')"

wait_state() {  # JOB STATE SECONDS
  i=0
  until "$gradsync" status "$1" --json | grep -q "\"state\": *\"$2\""; do
    i=$((i + 1))
    [ $i -lt $(($3 * 10)) ] || {
      echo "job $1 never reached $2:"; "$gradsync" status "$1"
      "$gradsync" logs "$1" | tail -40; exit 1; }
    sleep 0.1
  done
}
submit() {  # ARGS...: prints the job id
  "$gradsync" submit --json "$@" |
    sed -n 's/.*"jobId": *"\([^"]*\)".*/\1/p'
}

# 1. Two ranks against one.
pkg=$(cd "$(dirname "$gradsync")/../python" && pwd)
(cd "$work" && PYTHONPATH="$pkg" \
  $py ddp_check.py --out "$work/one" --skip-checks > "$dir/one.log" 2>&1) ||
  { echo "the one-rank run failed:"; cat "$dir/one.log"; exit 1; }
job=$(submit --workers 2 --workdir "$work" \
  --entrypoint "$py ddp_check.py --out $work/two")
[ -n "$job" ] || { echo "submit printed no job id"; exit 1; }
"$gradsync" watch "$job" --deadline 240 >/dev/null || true
status=$("$gradsync" status "$job")
echo "$status"
echo "$status" | grep -q "SUCCEEDED" || {
  "$gradsync" logs "$job" | tail -60; exit 1; }
cmp "$work/two/params.0" "$work/two/params.1" ||
  { echo "parameters differ across ranks"; exit 1; }
[ "$(wc -l < "$work/two/params.0")" = 50 ] || { echo "not 50 steps"; exit 1; }
$py - "$work/one/loss.0" "$work/two/loss.0" <<'PYEOF'
import sys
one = [float(x) for x in open(sys.argv[1])]
two = [float(x) for x in open(sys.argv[2])]
assert len(one) == len(two) == 50, (len(one), len(two))
worst = max(abs(a - b) / max(abs(a), 1e-12) for a, b in zip(one, two))
print(f"2 ranks against 1: largest relative loss difference {worst:.2e} "
      f"over 50 steps (first {one[0]:.6f}, last {one[-1]:.6f} vs {two[-1]:.6f})")
assert worst <= 1e-5, worst
assert two[-1] < two[0], "the loss did not fall"
PYEOF
"$gradsync" metrics "$job" -o csv > "$dir/metrics.csv"
steps=$(grep -c '^' "$dir/metrics.csv")
[ "$steps" -ge 100 ] || { echo "metrics: $steps lines"; cat "$dir/metrics.csv"; exit 1; }
"$gradsync" logs "$job" --rank 1 | grep -q "rank 1: rank 1 of 2: backend gradsync" ||
  { echo "rank 1's output is not in its log:"; "$gradsync" logs "$job"; exit 1; }
"$gradsync" logs "$job" --rank 0 | grep -q "store and collectives exact" ||
  { echo "rank 0's checks did not pass"; exit 1; }
# explain on this one-host cluster: no link facts needed, no zero
# prediction, the measured busbw instead.
explain=$("$gradsync" explain "$job")
echo "$explain"
echo "$explain" | grep -q "no link is in play" ||
  { echo "explain did not say that no link is in play"; exit 1; }
if echo "$explain" | grep -qE "0\.0 ms predicted|x0\.00|in 0 steps"; then
  echo "explain printed a zero prediction"; exit 1
fi
echo "torch ring job ok: $job"

# 1b. The ring's exposed communication against its busy time.
check_exposed() {  # METRICS.CSV WANT_POSITIVE(0|1)
  $py - "$1" "$2" <<'PYEOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows, "no metrics"
waited = {}
for r in rows:
    comm, busy = float(r["comm_s"]), float(r["sync_busy_s"])
    assert 0.0 <= comm <= busy, ("exposed outside [0, busy]", r["rank"],
                                 r["step"], comm, busy)
    if int(r["step"]) >= 1:
        waited.setdefault(r["rank"], []).append((comm, busy))
for rank, steps in sorted(waited.items()):
    comm = sum(c for c, _ in steps)
    busy = sum(b for _, b in steps)
    print(f"rank {rank}: exposed {comm * 1e3:.2f} ms of {busy * 1e3:.2f} ms "
          f"busy over {len(steps)} steps")
    if sys.argv[2] == "1":
        assert comm > 0.0, f"rank {rank} waited for none of its buckets"
PYEOF
}
check_exposed "$dir/metrics.csv" 0 || { echo "exposed check failed"; exit 1; }
job=$(submit --workers 2 --workdir "$work" --entrypoint \
  "$py ddp_check.py --out $work/wide --skip-checks --steps 20 --hidden 4096 --no-loss-sync")
"$gradsync" watch "$job" --deadline 240 >/dev/null || true
"$gradsync" status "$job" | grep -q SUCCEEDED || {
  "$gradsync" status "$job"; "$gradsync" logs "$job" | tail -40; exit 1; }
cmp "$work/wide/params.0" "$work/wide/params.1" ||
  { echo "parameters differ across ranks (wide)"; exit 1; }
"$gradsync" metrics "$job" -o csv > "$dir/wide.csv"
check_exposed "$dir/wide.csv" 1 || { echo "exposed check failed"; exit 1; }
echo "exposed comm ok: $job"

# 2. A rank that raises.
job=$(submit --workers 2 --workdir "$work" --entrypoint \
  "$py ddp_check.py --out $work/fail --skip-checks --fail-at 3 --fail-rank 1")
"$gradsync" watch "$job" --deadline 120 >/dev/null 2>&1 || true
status=$("$gradsync" status "$job")
echo "$status"
echo "$status" | grep -q "FAILED" || { echo "job did not fail"; exit 1; }
echo "$status" | grep -q "ValueError: boom at step 3 on rank 1" ||
  { echo "the traceback's last line is not in status"; exit 1; }
echo "$status" | grep -q "rank 1" || { echo "status names no rank"; exit 1; }
echo "failing rank ok: $job"

# 3. cancel: SIGTERM, then SIGKILL; nothing left.
job=$(submit --workers 2 --workdir "$work" --entrypoint \
  "$py ddp_check.py --out $work/cancel --skip-checks --steps 100000 --sleep 0.05")
wait_state "$job" JOB_STATE_RUNNING 120
until [ -f "$work/cancel/pid.0" ] && [ -f "$work/cancel/pid.1" ]; do sleep 0.1; done
"$gradsync" cancel "$job"
i=0
while pgrep -f "$work/cancel" >/dev/null; do
  i=$((i + 1)); [ $i -lt 300 ] || { echo "processes outlived cancel:";
    pgrep -af "$work/cancel"; exit 1; }
  sleep 0.1
done
echo "cancel ok: $job"

# 4. The step deadline.
job=$(submit --workers 2 --workdir "$work" --step-deadline-s 2 --entrypoint \
  "$py ddp_check.py --out $work/deadline --skip-checks --steps 5 --sleep 30")
"$gradsync" watch "$job" --deadline 120 >/dev/null 2>&1 || true
status=$("$gradsync" status "$job")
echo "$status" | grep -q "reported no step for 2s" ||
  { echo "the step deadline did not kill and name the rank:"; echo "$status"; exit 1; }
echo "step deadline ok: $job"

# 5. --max-restarts: the whole group again, as a new job.
job=$(submit --workers 2 --workdir "$work" --max-restarts 1 --entrypoint \
  "$py ddp_check.py --out $work/restart --skip-checks --steps 5 --fail-first-run")
"$gradsync" watch "$job" --deadline 120 >/dev/null 2>&1 || true
i=0
until next=$("$gradsync" status "$job" --json |
    sed -n 's/.*"restartedAs": *"\([^"]*\)".*/\1/p') && [ -n "$next" ]; do
  i=$((i + 1)); [ $i -lt 600 ] || { echo "job $job was not restarted";
    "$gradsync" status "$job"; exit 1; }
  sleep 0.1
done
wait_state "$next" JOB_STATE_SUCCEEDED 120
echo "restart ok: $job restarted as $next"

# 6. The daemon dies: its processes die with it.
job=$(submit --workers 2 --workdir "$work" --entrypoint \
  "$py ddp_check.py --out $work/orphan --skip-checks --steps 100000 --sleep 0.05")
wait_state "$job" JOB_STATE_RUNNING 120
until [ -f "$work/orphan/pid.0" ] && [ -f "$work/orphan/pid.1" ]; do sleep 0.1; done
for p in $($py -c 'import json, sys
for d in json.load(open(sys.argv[1]))["daemons"]:
    if d["name"].startswith("worker-"):
        print(d["pid"])' "$dir/cluster.json"); do
  kill -KILL "$p"
done
for f in "$work/orphan/pid.0" "$work/orphan/pid.1"; do
  pid=$(cat "$f")
  i=0
  while kill -0 "$pid" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 100 ] || { echo "process $pid outlived its daemon"; exit 1; }
    sleep 0.1
  done
done
echo "daemon death ok"
# The processes removed their rank files once read, so even the daemons
# killed above left no credentials on disk.
if ls "$dir/tmp" | grep -q "^gradsync-job-"; then
  echo "rank files left behind:"; ls -la "$dir/tmp"; exit 1
fi
echo "torch-entrypoint-e2e-ok"
