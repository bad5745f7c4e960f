#!/bin/sh
# scripts/check_job.sh against a stand-in for gradsync that prints a
# crafted status and step metrics: a good 2-rank job with one switch
# passes; a step in the wrong mode, parameters that differ across ranks, a
# step reported twice, a step one rank lacks, too few switches and a job
# that did not succeed each fail with a message naming the step.
# Usage: check_job_script_test.sh PATH/TO/check_job.sh
set -u
check_job=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-check-job.XXXXXX")
trap 'rm -rf "$dir"' EXIT

cat >"$dir/gradsync" <<'FAKE'
#!/bin/sh
# $CASE picks the flaw; status JOB or metrics JOB --format csv.
case "$1" in
  status)
    state=SUCCEEDED
    [ "$CASE" = failed ] && state=FAILED
    cat <<STATUS
job:       job-7
state:     $state
training:  ring, 2 workers, batch 64, sgd lr 0.1, seed 0

RANK  WORKER  HOST  DEVICE
0     w-1     vm    cpu:0
1     w-2     vm    cpu:0

switches:
STEP  FROM  TO    BY         MOVE_MS
2     ring  ps    request 1  3.20
STATUS
    ;;
  metrics)
    echo "rank,step,loss,param_hash,mode"
    for step in 0 1 2 3; do
      for rank in 0 1; do
        mode=SYNC_MODE_RING
        [ $step -ge 2 ] && mode=SYNC_MODE_PS
        [ "$CASE" = mode ] && [ $step -eq 2 ] && [ $rank -eq 1 ] &&
          mode=SYNC_MODE_RING
        hash=$((1000 + step))
        [ "$CASE" = hash ] && [ $step -eq 3 ] && [ $rank -eq 1 ] && hash=9
        [ "$CASE" = missing ] && [ $step -eq 1 ] && [ $rank -eq 0 ] && continue
        echo "$rank,$step,0.5,$hash,$mode"
        [ "$CASE" = repeat ] && [ $step -eq 0 ] && [ $rank -eq 0 ] &&
          echo "$rank,$step,0.5,$hash,$mode"
      done
    done
    ;;
esac
exit 0
FAKE
chmod +x "$dir/gradsync"

run() {  # case, extra arguments
  c=$1
  shift
  out=$(CASE=$c GRADSYNC="$dir/gradsync" "$check_job" job-7 "$@" 2>&1)
  echo "[$c] exit $? :: $out"
}
run good
run good --switches 1
run switches --switches 2
run mode
run hash
run repeat
run missing
run failed
