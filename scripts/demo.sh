#!/usr/bin/env bash
# The main job: installs what is missing, builds, starts a local cluster on
# 127.0.0.1 (a coordinator, 2 parameter servers and 4 CPU worker daemons)
# and trains an MLP on Fashion-MNIST for 3 epochs: the first half through
# the sharded parameter server, then switched to the ring all-reduce at
# step 351, with the optimizer state moved across. The PS half runs on the
# default transport, the servers' tensor planes beside mutual TLS. It shows
# progress, the test accuracy and the per-step time of each mode side by
# side, then `gradsync explain`: where each half's time went, and stops
# the cluster. Extra arguments go to `gradsync submit` (e.g. --optimizer
# sgd); to switch by hand instead, run `gradsync switch JOB ring|ps` from
# another shell while it trains.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh

gradsync="${BUILD_DIR:-build}/cli/gradsync"
run_dir="${GRADSYNC_RUN_DIR:-.run/demo}"
port="${GRADSYNC_DEMO_PORT:-29400}"
export GRADSYNC_COORDINATOR="127.0.0.1:$port"

"$gradsync" local down --run-dir "$run_dir" >/dev/null 2>&1 || true
trap '"$gradsync" local down --run-dir "$run_dir" >/dev/null 2>&1 || true' EXIT
"$gradsync" local up --workers 4 --ps 2 --run-dir "$run_dir" --port "$port" \
  >/dev/null
# The coordinator admits users with the token local up wrote, over mutual
# TLS with the certificates it made.
export GRADSYNC_TOKEN_FILE="$run_dir/user-token"
export GRADSYNC_TLS_DIR="$run_dir/tls"
echo "== local cluster: 1 coordinator + 2 parameter servers + 4 workers on" \
  "127.0.0.1:$port (logs in $run_dir)"
"$gradsync" workers
echo
# 3 epochs of 60000 examples in global batches of 256: 3 x 234 steps.
steps=702
half=$((steps / 2))
echo "== training MLP 784-256-256-10 on Fashion-MNIST, 4 ranks: parameter" \
  "server (2 shards) for steps 0-$((half - 1)), ring all-reduce from step $half"
"$gradsync" submit --name demo --workers 4 --model mlp \
  --layers 784,256,256,10 --dataset fashion-mnist --optimizer adam \
  --lr 0.001 --batch-size 256 --steps "$steps" --seed 1 --eval-every 234 \
  --mode ps --ps-shards 2 --switch-at "$half:ring" --follow "$@" |
  tee "$run_dir/demo.out"
# Where each half's time went: measured against this machine's own limits
# (one host: no link is in play), with the PS's transport named. The
# closing lines split the PS's sync time into what the model gives the
# server (its link; on one host its CPU and memory copies) and the rest,
# the transport's overhead (explain's "split" line).
job=$(sed -n 's/^submitted job \([^ ]*\) .*/\1/p' "$run_dir/demo.out")
if [[ -n "$job" ]]; then
  echo
  echo "== where the time went (gradsync explain $job)"
  explained=$("$gradsync" explain "$job")
  echo "$explained"
  split=$(sed -n 's/^  split: //p' <<<"$explained")
  if [[ -n "$split" ]]; then
    echo
    echo "== the PS step, server vs transport: $split"
  fi
fi
