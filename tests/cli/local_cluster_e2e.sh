#!/bin/sh
# End to end with the real daemons: `gradsync local up --workers 2` in a
# temporary run directory (any free port), `local up` again (already up),
# `gradsync workers --json` through GRADSYNC_COORDINATOR, `local down`.
# The cluster runs mutual TLS (local up's default): every daemon says so,
# the CLI gets through with GRADSYNC_TLS_DIR, and a plaintext client or
# one of another CA is refused with a message that says why.
# Usage: local_cluster_e2e.sh PATH/TO/gradsync
set -eu
gradsync=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-e2e.XXXXXX")
cleanup() {
  "$gradsync" local down --run-dir "$dir" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

out=$("$gradsync" local up --workers 2 --port 0 --run-dir "$dir" --timeout 60)
echo "$out"
addr=$(echo "$out" | sed -n 's/^export GRADSYNC_COORDINATOR=//p')
[ -n "$addr" ] || { echo "no export line in the output of local up"; exit 1; }
[ -f "$dir/cluster.json" ] || { echo "no $dir/cluster.json"; exit 1; }
token=$(echo "$out" | sed -n 's/^export GRADSYNC_TOKEN_FILE=//p')
[ "$token" = "$dir/user-token" ] || { echo "no token export line"; exit 1; }
[ "$(stat -c %a "$token")" = 600 ] || { echo "$token is not mode 0600"; exit 1; }
tls=$(echo "$out" | sed -n 's/^export GRADSYNC_TLS_DIR=//p')
[ "$tls" = "$dir/tls" ] || { echo "no TLS dir export line"; exit 1; }
for key in node.key client.key; do
  [ "$(stat -c %a "$tls/$key")" = 600 ] || { echo "$tls/$key is not 0600"; exit 1; }
done
# Nothing signs certificates once they exist: no CA key while it runs.
[ ! -e "$tls/ca.key" ] || { echo "$tls/ca.key stays while the cluster runs"; exit 1; }
for log in coordinator worker-0 worker-1; do
  grep -q "gRPC over mTLS ($tls)" "$dir/$log.log" ||
    { echo "$log does not run mTLS:"; cat "$dir/$log.log"; exit 1; }
done

"$gradsync" local up --workers 2 --port 0 --run-dir "$dir"
GRADSYNC_COORDINATOR=$addr GRADSYNC_TOKEN_FILE=$token GRADSYNC_TLS_DIR=$tls \
  "$gradsync" workers --json
# Users authenticate: without the token the coordinator refuses.
if GRADSYNC_COORDINATOR=$addr GRADSYNC_TLS_DIR=$tls "$gradsync" workers \
  >/dev/null 2>&1; then
  echo "the coordinator answered a user without its token"
  exit 1
fi
# Without the cluster's certificates no call gets through: in plaintext,
# or with another CA's.
if ! GRADSYNC_COORDINATOR=$addr GRADSYNC_TOKEN_FILE=$token "$gradsync" \
  workers --insecure --timeout 3 2>&1 | grep -q "this side uses plaintext"; then
  echo "a plaintext client was not refused with a TLS hint"
  exit 1
fi
"$gradsync" certs init "$dir/other-ca" >/dev/null
if ! GRADSYNC_COORDINATOR=$addr GRADSYNC_TOKEN_FILE=$token "$gradsync" \
  workers --tls-dir "$dir/other-ca" --timeout 3 2>&1 |
  grep -q "same cluster CA"; then
  echo "a client of another CA was not refused with a TLS hint"
  exit 1
fi
"$gradsync" local down --run-dir "$dir"
[ ! -f "$dir/cluster.json" ] || { echo "cluster.json left behind"; exit 1; }
[ ! -f "$token" ] || { echo "the token file was left behind"; exit 1; }
[ ! -e "$tls/ca.key" ] || { echo "the cluster's keys were left behind"; exit 1; }
if ! GRADSYNC_COORDINATOR=$addr "$gradsync" workers --timeout 2 2>&1 |
  grep -q "cannot reach the coordinator"; then
  echo "the coordinator still answers after local down"
  exit 1
fi
echo "local-cluster-e2e-ok"
