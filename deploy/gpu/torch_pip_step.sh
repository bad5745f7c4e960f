#!/usr/bin/env bash
# run_bundle.sh's torch-pip step: example (a) (examples/torch/mlp.py) on the
# machine's own PyTorch, through the bundle's daemons, its process group
# rendezvoused through gradsync's Store (the coordinator's job store), and
# switched by its spec to the PS at step 100 and back to the ring at 200.
#
#   torch_pip_step.sh cuda   torch's NCCL process group on cuda:0
#   torch_pip_step.sh cpu    the CPU fallback dry run: torch's Gloo group on
#                            the CPU (run_bundle.sh --cpu with PYTHON set),
#                            so the step's script is exercised without a GPU
#
# Skips (exit 77, one "SKIP: why" line) when there is no python, it cannot
# import torch, or (cuda) torch sees no CUDA device or has no NCCL. Fails
# (exit 1, "FAILED: why") when the machine's python cannot load the
# bundle's package (torch_preflight.py says why), or when the job fails,
# misses a step, or is not on the path its switch table says at every step.
#
# Environment (run_bundle.sh's): ROOT (the unpacked payload), G (its
# gradsync), PYTHON, SECTIONS, WORK, GRADSYNC_COORDINATOR and the cluster's
# credentials.
set -uo pipefail

device="${1:?usage: torch_pip_step.sh cuda|cpu}"
section="${SECTIONS}/torch-pip.md"
steps=300

skip() {
  echo "SKIP: $*"
  echo "- skipped: $*" >"${section}"
  exit 77
}
fail() {
  echo "FAILED: $*" >&2
  echo "- FAILED: $*" >"${section}"
  exit 1
}

[[ -n "${PYTHON:-}" ]] && command -v "${PYTHON}" >/dev/null 2>&1 ||
  skip "no python on this machine (PYTHON='${PYTHON:-}' is not a command)"
if ! err="$("${PYTHON}" -c 'import torch' 2>&1)"; then
  skip "${PYTHON} cannot import torch: $(tail -n 1 <<<"${err}")"
fi
version="$("${PYTHON}" -c 'import torch; print(torch.__version__)' 2>&1 | tail -n 1)"
if [[ "${device}" == cuda ]]; then
  "${PYTHON}" -c '
import sys, torch, torch.distributed as dist
sys.exit(0 if torch.cuda.is_available() and dist.is_nccl_available() else 1)' ||
    skip "torch ${version} (${PYTHON}) sees no CUDA device or has no NCCL"
  backend=nccl
else
  backend=gloo
fi

echo "-- preflight: the bundle's gradsync package in ${PYTHON}'s process"
PYTHONPATH="${ROOT}/python" "${PYTHON}" "${ROOT}/scripts/torch_preflight.py" \
  "${ROOT}/python/NEEDS" | tee "${WORK}/torch-preflight.txt"
[[ ${PIPESTATUS[0]} -eq 0 ]] ||
  fail "$(grep '^FAILED' "${WORK}/torch-preflight.txt" | head -n 1 | sed 's/^FAILED: //')"

[[ -n "${GRADSYNC_COORDINATOR:-}" ]] ||
  fail "no cluster to submit to: the cluster step failed"
echo "-- example (a) on ${device}, torch ${version}, backend ${backend}, ${steps} steps, PS from 100 to 200"
out="$("${G}" submit --json --workers 1 --workdir "${ROOT}/examples/torch" \
  --switch-at 100:ps --switch-at 200:ring --entrypoint \
  "${PYTHON} mlp.py --backend ${backend} --device ${device} --steps ${steps} --batch-size 256 --data ${ROOT}/data/fashion-mnist")" ||
  fail "gradsync submit failed: ${out}"
job="$(sed -n 's/.*"jobId": *"\([^"]*\)".*/\1/p' <<<"${out}")"
[[ -n "${job}" ]] || fail "submit printed no job id: ${out}"
"${G}" watch "${job}" --deadline 240 >/dev/null 2>&1 || true
status="$("${G}" status "${job}")"
echo "${status}"
if ! grep -q SUCCEEDED <<<"${status}"; then
  "${G}" logs "${job}" 2>&1 | tail -n 30
  fail "${job} did not succeed: $(grep -m1 -iE 'error|fail' <<<"${status}" | cut -c1-200)"
fi
"${G}" logs "${job}" --rank 0 2>&1 | tail -n 3
"${G}" metrics "${job}" -o csv >"${WORK}/torch-pip.csv"
verdict="$("${PYTHON}" - "${WORK}/torch-pip.csv" "${steps}" <<'PYEOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
steps = int(sys.argv[2])
seen = sorted(int(r["step"]) for r in rows)
if seen != list(range(steps)):
    sys.exit(f"steps reported: {len(seen)}, not each of 0..{steps - 1} once")
for r in rows:
    step = int(r["step"])
    want = "ps" if 100 <= step < 200 else "ring"
    if want not in r["mode"].lower():
        sys.exit(f"step {step} ran on {r['mode']}, its switch table says {want}")
loss = [float(r["loss"]) for r in sorted(rows, key=lambda r: int(r["step"]))]
print(f"{steps} steps, each once; ring 0-99, PS 100-199, ring 200-{steps - 1}; "
      f"loss {loss[0]:.3f} -> {loss[-1]:.3f}")
PYEOF
)" || fail "${job}: ${verdict:-the metrics check failed}"
accuracy="$("${G}" logs "${job}" --rank 0 2>&1 | grep -o 'test accuracy [0-9.]*' | tail -n 1)"
echo "${job}: ${verdict}; ${accuracy}"
{
  echo "- ${job}: example (a) on ${device} with torch ${version} (${PYTHON}), torch's ${backend} group rendezvoused through gradsync's store: ${verdict}; ${accuracy:-no accuracy line}"
  sed -n 's/^\(C library\|C++ runtime\|torch\)/- \1/p' "${WORK}/torch-preflight.txt"
} >"${section}"
