#!/usr/bin/env bash
# The GPU bundle's torch-pip step (deploy/gpu/torch_pip_step.sh) on this
# CPU host, so that the script cannot rot before a GPU is lent:
#   1. the CPU fallback dry run: `run_bundle.sh --cpu` with PYTHON naming
#      Debian's python3 and torch; the bundle's gradsync package loads into
#      that process from the payload (torch_preflight.py), and example (a)
#      runs through the bundle's daemons on torch's Gloo group rendezvoused
#      through gradsync's store, on the ring for steps 0-99, the PS for
#      100-199 and the ring again after, every step once;
#   2. the skip path: PYTHON names no python: the step says SKIP with its
#      reason, and the run still passes.
# The CUDA path (torch's NCCL group on cuda:0) needs a lent GPU machine.
# Skipped (77) without Debian's torch. Unpacks the payload at
# /tmp/gradsync-bundle (the binaries' fixed loader path), removed at exit.
#
#   tests/deploy/gpu_bundle_torch_test.sh BUNDLE_DIR
set -euo pipefail

bundle=$(cd "${1:?usage: gpu_bundle_torch_test.sh BUNDLE_DIR}" && pwd)
image_libs=${GRADSYNC_TEST_NVIDIA_LIBS:-/usr/local/cuda/lib}
py=/usr/bin/python3

fail() {
  echo "gpu_bundle_torch_test: FAILED: $*" >&2
  exit 1
}

"$py" -c 'import torch' 2>/dev/null ||
  { echo "SKIP: Debian's python3-torch is not installed"; exit 77; }
[[ -f "$bundle/payload.tar.gz" ]] || fail "$bundle holds no bundle"
out=$(mktemp -d /tmp/gradsync-torch-step.XXXXXX)
trap 'rm -rf "$out" /tmp/gradsync-bundle' EXIT

run() {  # NAME PYTHON: runs the torch-pip step (and what it needs)
  local status=0
  (cd "$out" && OUT="$out/$1" PYTHON="$2" GRADSYNC_RUN_STEPS=torch-pip \
    GRADSYNC_GPU_LIBS="$image_libs" GRADSYNC_RUN_BUDGET=300 \
    "$bundle/run_bundle.sh" --cpu >"$out/$1.txt" 2>&1) || status=$?
  [[ -s "$out/$1/summary.md" ]] ||
    { cat "$out/$1.txt" >&2; fail "$1: the runner wrote no summary (exit status $status)"; }
  if [[ $status -ne 0 ]] || ! grep -q '^Overall: PASS' "$out/$1/summary.md"; then
    cat "$out/$1/summary.md" >&2
    tar -C "$out" -xzf "$out/$1/logs.tar.gz" && tail -n 40 "$out"/logs/torch-pip.log >&2
    fail "$1: the run failed (exit status $status)"
  fi
}

# 1. The CPU dry run.
run dry "$py"
summary="$out/dry/summary.md"
grep -q '^| torch-pip | PASS |' "$summary" || fail "torch-pip did not pass"
grep -q 'torch.s gloo group rendezvoused through gradsync.s store: 300 steps, each once; ring 0-99, PS 100-199, ring 200-299' "$summary" ||
  fail "the summary does not show the switched job"
grep -q 'C library: glibc' "$summary" || fail "the preflight's facts are not in the summary"
cat "$summary"

# 2. No python: a skip that says why, and the run passes.
run skip /nonexistent/python3
summary="$out/skip/summary.md"
grep -q '^| torch-pip | SKIP | [0-9]* | no python on this machine' "$summary" ||
  { cat "$summary" >&2; fail "torch-pip did not skip with its reason"; }
echo "gpu_bundle_torch_test: OK"
