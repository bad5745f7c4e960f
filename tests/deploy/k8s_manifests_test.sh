#!/usr/bin/env bash
# deploy/k8s offline: yamllint -s (where installed) and the structural
# checks of k8s_manifests_check.py, which must also refuse broken copies
# (a dropped probe, a --tls-dir off the Secret, a GPU request that does not
# match --devices), so that it is known to catch them. Exits 77 (skipped)
# without python3's yaml module.
#
#   tests/deploy/k8s_manifests_test.sh SOURCE_DIR
set -euo pipefail

source_dir=${1:?usage: k8s_manifests_test.sh SOURCE_DIR}
manifests="$source_dir/deploy/k8s"
check="$source_dir/tests/deploy/k8s_manifests_check.py"
fail() {
  echo "k8s_manifests_test: FAILED: $*" >&2
  exit 1
}
if ! python3 -c 'import yaml' 2>/dev/null; then
  echo "k8s_manifests_test: SKIPPED: python3-yaml is not installed (scripts/install_deps.sh)"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-k8s-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

if command -v yamllint >/dev/null 2>&1; then
  yamllint -s -c "$manifests/.yamllint" "$manifests" || fail "yamllint refused deploy/k8s"
  echo "k8s_manifests_test: yamllint accepted deploy/k8s"
elif [ "${GRADSYNC_REQUIRE_TOOLS:-}" = 1 ]; then
  fail "yamllint is not installed, and GRADSYNC_REQUIRE_TOOLS=1" \
    "(scripts/install_deps.sh installs it)"
else
  echo "k8s_manifests_test: yamllint is not installed, so only the structural checks ran"
fi
python3 "$check" "$manifests" || fail "the structural checks refused deploy/k8s"

# Each mutation must be refused, naming what broke.
refuses() {
  local what=$1 file=$2 expression=$3 expected=$4
  rm -rf "$work/k8s" && cp -r "$manifests" "$work/k8s"
  sed -i "$expression" "$work/k8s/$file"
  ! cmp -s "$manifests/$file" "$work/k8s/$file" || fail "the mutation '$what' changed nothing"
  if python3 "$check" "$work/k8s" >"$work/out" 2>&1; then
    fail "the checks accepted $what"
  fi
  grep -q -- "$expected" "$work/out" || { cat "$work/out" >&2; fail "$what: no '$expected'"; }
}
refuses "a PS without a liveness probe" ps.yaml 's/livenessProbe:/otherProbe:/' \
  "no gRPC livenessProbe"
refuses "a probe on the wrong port" coordinator.yaml \
  '/readinessProbe:/,/periodSeconds/s/port: 9401$/port: 29400/' \
  "probes port 29400"
refuses "readiness asking liveness's service" worker.yaml \
  '/service: gradsync.ready/d' "asks service '', not 'gradsync.ready'"
refuses "a worker without metrics" worker.yaml '/--metrics-listen/d' \
  "no --metrics-listen"
refuses "a PS without a probe port" ps.yaml '/--health-listen/d' \
  "no --health-listen"
refuses "--tls-dir off the Secret" worker.yaml 's|--tls-dir=/etc/gradsync/tls|--tls-dir=/tls|' \
  "is not a mount of Secret gradsync-tls"
refuses "a GPU request unlike --devices" worker-gpu.yaml 's/nvidia.com\/gpu: 4/nvidia.com\/gpu: 2/' \
  "does not offer the 2 GPUs"
refuses "--state-db off the volume" coordinator.yaml 's|--state-db=/var/lib/gradsync/|--state-db=/tmp/|' \
  "is not on a volumeClaimTemplate"
# shellcheck disable=SC2016  # a Kubernetes $(VAR), not the shell's
refuses "an undefined variable" ps.yaml 's/\$(GRADSYNC_COORDINATOR)/$(COORDINATOR)/' \
  "nothing defines"
echo "k8s_manifests_test: OK"
