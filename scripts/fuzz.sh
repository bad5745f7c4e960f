#!/usr/bin/env bash
# The offline fuzz runs: every target of tests/fuzz built with clang-14's
# libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer (in build-fuzz/),
# each run for RUNS inputs (default 1000000) from a copy of its committed
# corpus. Prints one line per target: inputs run, seconds, and whether it
# found anything; a finding leaves its input in build-fuzz/findings/ and
# makes the script exit 1. ctest runs the same targets for seconds each in
# every build (tests/fuzz/CMakeLists.txt).
#
#   scripts/fuzz.sh [--runs N] [--targets "job_spec_fuzz ring_wire_fuzz ..."]
set -euo pipefail
cd "$(dirname "$0")/.."

runs=1000000
targets="job_spec_fuzz ring_wire_fuzz tensor_codec_fuzz tensor_plane_fuzz checkpoint_fuzz coordinator_request_fuzz"
while (($#)); do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --targets) targets=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--targets \"T ...\"]" >&2; exit 2 ;;
  esac
done

scripts/install_deps.sh
missing=()
for p in clang-14 libfuzzer-14-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=$([[ $(id -u) -eq 0 ]] && echo "" || echo sudo)
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi

build=build-fuzz
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DGRADSYNC_FUZZ_ENGINE=libfuzzer >/dev/null
# shellcheck disable=SC2086
cmake --build "$build" --target $targets -- -j "$(nproc)" >/dev/null

mkdir -p "$build/findings"
status=0
printf '%-26s %10s %8s  %s\n' target inputs seconds result
for t in $targets; do
  work=$(mktemp -d)
  cp tests/fuzz/corpus/"$t"/* "$work"/ 2>/dev/null || true
  log="$build/$t.log"
  start=$SECONDS
  if ASAN_OPTIONS=detect_leaks=0 "$build/tests/fuzz/$t" -runs="$runs" \
      -artifact_prefix="$build/findings/$t-" "$work" >"$log" 2>&1; then
    result="no crash"
  else
    result="FOUND: see $log and $build/findings/"
    status=1
  fi
  done_runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
  printf '%-26s %10s %8s  %s\n' "$t" "${done_runs:-?}" $((SECONDS - start)) \
    "$result"
  rm -rf "$work"
done
exit $status
