#!/usr/bin/env bash
# The deployment scripts that cannot run here (they need a Slurm cluster, a
# Debian mirror, root, or podman): bash -n and shellcheck on each, and the
# one-sentence errors they give where they must refuse to start. The
# maintainer scripts are POSIX sh (dpkg runs them with /bin/sh).
# Exits 77 (skipped) without shellcheck.
#
#   tests/deploy/deploy_scripts_test.sh SOURCE_DIR
set -euo pipefail

src=${1:?usage: deploy_scripts_test.sh SOURCE_DIR}
fail() {
  echo "deploy_scripts_test: FAILED: $*" >&2
  exit 1
}
if ! command -v shellcheck >/dev/null 2>&1; then
  echo "deploy_scripts_test: SKIPPED: shellcheck is not installed (scripts/install_deps.sh)"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-scripts-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

bash_scripts=(deploy/slurm/gradsync.sbatch deploy/container/build_image.sh
  scripts/deploy/deb_chroot_test.sh scripts/deploy/slurm_single_node_test.sh
  tests/deploy/deb_package_test.sh tests/deploy/k8s_manifests_test.sh
  tests/deploy/deploy_scripts_test.sh tests/deploy/across_nodes_test.sh)
for script in "${bash_scripts[@]}"; do
  bash -n "$src/$script" || fail "$script: bash -n refused it"
  shellcheck -x "$src/$script" || fail "$script: shellcheck refused it"
done
for script in postinst prerm postrm; do
  sh -n "$src/deploy/debian/$script" || fail "deploy/debian/$script: sh -n refused it"
  shellcheck -s sh "$src/deploy/debian/$script" ||
    fail "deploy/debian/$script: shellcheck refused it"
done
echo "deploy_scripts_test: ${#bash_scripts[@]} bash scripts and 3 maintainer scripts pass shellcheck"

# Refusals: exit 1 with the sentence that says what to do.
expect_refusal() {
  local what=$1 expected=$2
  shift 2
  if "$@" >"$work/out" 2>&1; then
    fail "$what: exited 0"
  fi
  grep -q -- "$expected" "$work/out" ||
    { cat "$work/out" >&2; fail "$what: no '$expected' in its error"; }
}
expect_refusal "gradsync.sbatch outside Slurm" "submit this script with sbatch" \
  env -u SLURM_JOB_ID -u SLURM_JOB_NODELIST bash "$src/deploy/slurm/gradsync.sbatch"
expect_refusal "gradsync.sbatch without binaries" "set GRADSYNC_BIN_DIR" \
  env SLURM_JOB_ID=1 SLURM_JOB_NODELIST=n1 GRADSYNC_BIN_DIR="$work" \
  bash "$src/deploy/slurm/gradsync.sbatch"
expect_refusal "build_image.sh without a package" "does not exist" \
  bash "$src/deploy/container/build_image.sh" "$work/none.deb"
expect_refusal "build_image.sh with an unknown importer" "takes podman or docker" \
  bash "$src/deploy/container/build_image.sh" --import buildah "$work/none.deb"
echo "deploy_scripts_test: OK"
