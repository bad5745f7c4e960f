#!/usr/bin/env bash
# The main job: installs what is missing, builds, starts a local cluster on
# 127.0.0.1 (a coordinator and 4 CPU worker daemons) and trains an MLP on
# Fashion-MNIST with the ring all-reduce, showing progress; it ends with the
# test accuracy and a per-step time breakdown, and stops the cluster.
# Extra arguments go to `gradsync submit` (e.g. --epochs 5 --optimizer sgd).
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
"$gradsync" local up --workers 4 --run-dir "$run_dir" --port "$port" >/dev/null
echo "== local cluster: 1 coordinator + 4 workers on 127.0.0.1:$port (logs in $run_dir)"
"$gradsync" workers
echo
echo "== training MLP 784-256-256-10 on Fashion-MNIST, 4 ranks, ring all-reduce"
"$gradsync" submit --name demo --workers 4 --model mlp \
  --layers 784,256,256,10 --dataset fashion-mnist --optimizer adam \
  --lr 0.001 --batch-size 256 --epochs 3 --seed 1 --eval-every 200 \
  --mode ring --follow "$@"
