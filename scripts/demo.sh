#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the all-reduce
# benchmark across 4 local rank processes on 127.0.0.1 (TCP ring backend),
# nccl-tests style. Extra arguments go to `gradsync bench allreduce`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
exec "${BUILD_DIR:-build}/cli/gradsync" bench allreduce --ranks 4 \
  -b 1M -e 64M -f 2 -n 10 -w 3 "$@"
