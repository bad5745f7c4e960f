#!/usr/bin/env bash
# `cmake --install` into a fresh prefix, as an operator deploying gradsync
# would, then checks what landed:
#   - every binary, executable, with the run path to CUDA's libraries kept;
#   - the systemd units, naming the installed binaries, and accepted by
#     `systemd-analyze verify` (where systemd is installed; the template
#     gradsync-ps@.service through an instance);
#   - the environment file the units read;
#   - the installed binaries run together: the installed CLI starts a
#     cluster of the installed daemons on 127.0.0.1 (found next to itself),
#     lists them and stops them.
#
#   tests/deploy/install_test.sh BUILD_DIR
set -euo pipefail

build=${1:?usage: install_test.sh BUILD_DIR}
work=$(mktemp -d)
prefix="$work/prefix"
run_dir="$work/run"
cleanup() {
  if [[ -x "$prefix/bin/gradsync" && -d "$run_dir" ]]; then
    "$prefix/bin/gradsync" local down --run-dir "$run_dir" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "install_test: FAILED: $*" >&2
  exit 1
}

cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log" >&2; fail "cmake --install exited non-zero"; }

for binary in gradsync gradsync-coordinator gradsync-worker gradsync-ps \
  gradsync-store gradsync-ps-bench; do
  [[ -x "$prefix/bin/$binary" ]] || fail "bin/$binary was not installed"
  # Each one must start from the prefix (its libraries resolve).
  "$prefix/bin/$binary" --help >/dev/null 2>&1 ||
    fail "bin/$binary --help did not exit 0 from the install prefix"
done

units="$prefix/lib/systemd/system"
for unit in gradsync-coordinator.service gradsync-worker.service \
  gradsync-ps@.service; do
  [[ -f "$units/$unit" ]] || fail "lib/systemd/system/$unit was not installed"
  grep -q "^ExecStart=$prefix/bin/gradsync-" "$units/$unit" ||
    fail "$unit does not start a binary under $prefix/bin"
  grep -q "^EnvironmentFile=-/etc/default/gradsync$" "$units/$unit" ||
    fail "$unit does not read /etc/default/gradsync"
done
env_file="$prefix/share/doc/gradsync/gradsync.env"
[[ -f "$env_file" ]] || fail "share/doc/gradsync/gradsync.env was not installed"
# Every variable a unit expands is set in the example environment file.
for variable in $(grep -ho '\$[{]\?GRADSYNC_[A-Z_]*' "$units"/* |
  tr -d '${' | sort -u); do
  grep -q "^$variable=" "$env_file" ||
    fail "the units use \$$variable but gradsync.env does not set it"
done

if command -v systemd-analyze >/dev/null 2>&1; then
  ln -s "$units/gradsync-ps@.service" "$work/gradsync-ps@29600.service"
  systemd-analyze verify --man=no "$units/gradsync-coordinator.service" \
    "$units/gradsync-worker.service" "$work/gradsync-ps@29600.service" \
    >"$work/verify.log" 2>&1 ||
    { cat "$work/verify.log" >&2; fail "systemd-analyze verify refused a unit"; }
  [[ ! -s "$work/verify.log" ]] ||
    { cat "$work/verify.log" >&2; fail "systemd-analyze verify warned"; }
  echo "install_test: systemd-analyze verify accepted the units"
elif [ "${GRADSYNC_REQUIRE_TOOLS:-}" = 1 ]; then
  fail "systemd-analyze is not installed, and GRADSYNC_REQUIRE_TOOLS=1" \
    "(scripts/install_deps.sh installs it: package systemd)"
else
  echo "install_test: systemd-analyze not installed; units not verified"
fi

# The installed CLI finds the installed daemons next to itself.
"$prefix/bin/gradsync" local up --workers 2 --ps 1 --port 0 \
  --run-dir "$run_dir" --timeout 60 >"$work/up.log" 2>&1 ||
  { cat "$work/up.log" >&2; fail "gradsync local up from the prefix failed"; }
grep -q "$prefix/bin/gradsync-worker" "$run_dir"/cluster.json ||
  fail "local up did not run the installed gradsync-worker"
coordinator=$(sed -n 's/.*GRADSYNC_COORDINATOR=\([0-9.:]*\).*/\1/p' "$work/up.log" | head -1)
[[ -n "$coordinator" ]] || { cat "$work/up.log" >&2; fail "no coordinator address"; }
workers=$("$prefix/bin/gradsync" workers --coordinator "$coordinator" \
  --token-file "$run_dir/user-token" --tls-dir "$run_dir/tls" --json)
[[ $(grep -o '"workerId"' <<<"$workers" | wc -l) -eq 2 &&
  $(grep -o '"psId"' <<<"$workers" | wc -l) -eq 1 ]] ||
  fail "expected 2 workers and 1 parameter server, got: $workers"
"$prefix/bin/gradsync" local down --run-dir "$run_dir" >/dev/null ||
  fail "gradsync local down failed"
echo "install_test: OK"
