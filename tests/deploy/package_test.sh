#!/usr/bin/env bash
# The libraries as a CMake package (cmake/GradsyncPackage.cmake): installs
# the dev component of BUILD_DIR into a fresh prefix, builds the consumer
# project (tests/deploy/consumer) against it with find_package(gradsync)
# and nothing else, and runs it: three ranks all-reduce over the TCP ring
# after a gRPC store rendezvous, with exact sums. With PREFIX, the package
# already installed there is used instead (the unpacked gradsync-dev .deb:
# tests/deploy/deb_package_test.sh).
#
#   tests/deploy/package_test.sh BUILD_DIR [PREFIX]
set -euo pipefail

build=${1:?usage: package_test.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
fail() {
  echo "package_test: FAILED: $*" >&2
  exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-package-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=${2:-}
if [[ -z "$prefix" ]]; then
  prefix="$work/prefix"
  cmake --install "$build" --component dev --prefix "$prefix" \
    >"$work/install.log" 2>&1 || { cat "$work/install.log" >&2; fail "cmake --install --component dev"; }
  # Only the package's files: no binaries, no units.
  [[ ! -e "$prefix/bin" ]] || fail "the dev component installed $prefix/bin"
fi
config="$prefix/lib/cmake/gradsync/gradsyncConfig.cmake"
[[ -f "$config" ]] || fail "no $config"
if grep -rlF "$(cd "$build" && pwd -P)" "$prefix/lib/cmake/gradsync" >/dev/null; then
  fail "the installed package names the build directory"
fi

# The consumer sees the install tree only: the source tree's headers are
# not on any path it is given, and the same compiler and linker flags as
# a user's.
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$here/consumer" -B "$work/consumer" "${gen[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  >"$work/configure.log" 2>&1 || { cat "$work/configure.log" >&2; fail "configuring the consumer"; }
cmake --build "$work/consumer" >"$work/build.log" 2>&1 ||
  { tail -50 "$work/build.log" >&2; fail "building the consumer"; }
"$work/consumer/consumer" || fail "the consumer exited $?"
echo "package_test: OK"
