#!/bin/sh
# End to end with the real daemons and parameter servers: `gradsync local
# up --workers 1 --ps 2` in a temporary run directory (any free port), the
# servers in `gradsync workers --json`, `local down` stopping them too.
# Usage: local_cluster_ps_e2e.sh PATH/TO/gradsync
set -eu
gradsync=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-ps-e2e.XXXXXX")
cleanup() {
  "$gradsync" local down --run-dir "$dir" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

out=$("$gradsync" local up --workers 1 --ps 2 --port 0 --run-dir "$dir" \
  --timeout 60)
echo "$out"
addr=$(echo "$out" | sed -n 's/^export GRADSYNC_COORDINATOR=//p')
[ -n "$addr" ] || { echo "no export line in the output of local up"; exit 1; }

GRADSYNC_COORDINATOR=$addr "$gradsync" workers --json
"$gradsync" local down --run-dir "$dir"
echo "local-cluster-ps-e2e-ok"
