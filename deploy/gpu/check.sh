#!/usr/bin/env bash
# Builds gradsync on a GPU machine and runs everything that needs a GPU:
# the GPU tests (ctest label "gpu": the CUDA model, GPU ranks on the TCP
# ring and the PS, the NCCL training path), the NCCL backend tests, the
# NCCL all-reduce benchmark, and real jobs through the coordinator, each
# checked step by step with scripts/check_job.sh (every step once, in the
# mode its switch table says, parameters bitwise equal across ranks): one
# on cuda:0 on the NCCL ring with scripted switches to the PS and back, one
# switched at runtime with `gradsync switch`, and a 2-rank job of two
# daemons sharing cuda:0 on the host-staged TCP ring and the PS.
# Fails loudly when no GPU is visible, when the CUDA kernels were not
# configured, when a GPU test skipped or a test filter matched nothing.
#
#   deploy/gpu/check.sh                 # build dir: build-gpu
#   BUILD_DIR=/tmp/b JOBS=16 deploy/gpu/check.sh
#   CUDA_ARCHS=80 deploy/gpu/check.sh   # not an H100/H200 (default 90)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-${ROOT}/build-gpu}"
JOBS="${JOBS:-$(nproc)}"
CUDA_ARCHS="${CUDA_ARCHS:-90}"
MAX_BYTES="${MAX_BYTES:-256M}"

die() {
  echo "check.sh: FAILED: $*" >&2
  exit 1
}

echo "== GPU"
command -v nvidia-smi >/dev/null 2>&1 ||
  die "nvidia-smi not found: this script needs a machine with an NVIDIA GPU and driver"
nvidia-smi -L || die "nvidia-smi sees no GPU"
GPUS="$(nvidia-smi -L | grep -c '^GPU' || true)"
[[ "${GPUS}" -ge 1 ]] || die "no GPU visible"
DATASET=/usr/share/datasets/fashion-mnist
[[ -d "${DATASET}" ]] ||
  die "Fashion-MNIST is not at ${DATASET} (the jobs at the end train on it): sudo apt-get install dataset-fashion-mnist, or run scripts/install_deps.sh"

echo "== configure (${BUILD_DIR})"
cmake -S "${ROOT}" -B "${BUILD_DIR}" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS}"
grep -q 'gpu_model_test' "${BUILD_DIR}/build.ninja" ||
  die "CUDA kernels were not configured (is /usr/local/cuda/bin/nvcc there?)"
grep -q 'nccl_communicator_test' "${BUILD_DIR}/build.ninja" ||
  die "the NCCL backend was not configured (NCCL not found under /usr/local/cuda)"

echo "== build"
ninja -C "${BUILD_DIR}" -j "${JOBS}"

# The binaries of ctest label "gpu", each run once, directly, so that a
# skip or an empty filter shows.
echo "== GPU tests (ctest label gpu, and the job runner's GPU cases)"
# On a GPU host nothing but the GPU-less case may skip, and every filter
# must match: a renamed test would otherwise pass unnoticed.
log="$(mktemp)"
trap 'rm -f "${log}"' EXIT
run_gtest() {  # binary, filter
  local one
  one="$(mktemp)"
  "$1" --gtest_filter="$2" | tee "${one}"
  grep -q '^\[  PASSED  \] [1-9][0-9]* test' "${one}" ||
    die "$(basename "$1") --gtest_filter='$2' ran no test"
  cat "${one}" >>"${log}"
  rm -f "${one}"
}
run_gtest "${BUILD_DIR}/tests/gpu/gpu_model_test" \
  '-NoCudaDeviceTest.CreateReturnsFailedPrecondition'
run_gtest "${BUILD_DIR}/tests/gpu/gpu_trainer_test" \
  '-GpuTrainModelTest.NoGpu_FailsNamingTheDevice'
# The job runner's GPU cases: a mixed GPU + CPU job, a one-GPU NCCL job.
run_gtest "${BUILD_DIR}/tests/daemon/job_runner_test" '*CudaRank*:*NcclJob*'
# The two-GPU case needs two GPUs.
if [[ "${GPUS}" -ge 2 ]]; then
  run_gtest "${BUILD_DIR}/tests/gpu/gpu_nccl_trainer_test" '*'
else
  run_gtest "${BUILD_DIR}/tests/gpu/gpu_nccl_trainer_test" '-*TwoGpus*'
fi
if grep -q '^\[  SKIPPED \]' "${log}"; then
  die "GPU tests skipped on a GPU host (see above)"
fi

echo "== NCCL backend tests"
: >"${log}"
run_gtest "${BUILD_DIR}/tests/nccl/nccl_communicator_test" '*'
if grep -q '^\[  SKIPPED \]' "${log}"; then
  echo "check.sh: note: some NCCL tests skipped (multi-GPU cases need more GPUs)"
fi
if [[ "${GPUS}" -lt 2 ]]; then
  echo "check.sh: note: with one GPU each NCCL collective has one rank, so its"
  echo "  results equal its inputs: they show the calls work, not that they reduce"
fi

echo "== NCCL all-reduce benchmark"
"${BUILD_DIR}/cli/gradsync" bench allreduce --backend nccl --ranks 1 \
  -b 1M -e "${MAX_BYTES}"

echo "== jobs through the coordinator on cuda:0, checked step by step"
G="${BUILD_DIR}/cli/gradsync"
CHECK_JOB="${ROOT}/scripts/check_job.sh"
run_dir="$(mktemp -d)"
cleanup() {
  "${G}" local down --run-dir "${run_dir}" >/dev/null 2>&1 || true
  rm -f "${log}"
}
trap cleanup EXIT
# Two daemons, both on cuda:0 (the 2-rank job below shares it), and a PS.
out="$("${G}" local up --workers 2 --devices-per-worker cuda:0 --ps 1 \
  --port 0 --run-dir "${run_dir}" --timeout 60)"
echo "${out}"
export GRADSYNC_COORDINATOR="$(echo "${out}" | sed -n 's/^export GRADSYNC_COORDINATOR=//p')"
submit() {  # gradsync submit flags; prints the job id
  local job
  job="$("${G}" submit --device cuda --model mlp --layers 784,1024,1024,10 \
    --dataset fashion-mnist --optimizer adam --lr 1e-3 --batch-size 256 \
    "$@" --json | sed -n 's/.*"jobId": *"\([^"]*\)".*/\1/p')"
  [[ -n "${job}" ]] || die "submit $* printed no job id"
  echo "${job}"
}
finish() {  # job, what it is, switches it must have made
  "${G}" watch "$1" --deadline 600 >/dev/null || true
  "${G}" status "$1"
  "${G}" status "$1" --json | grep -q '"state": *"JOB_STATE_SUCCEEDED"' ||
    die "$2 did not succeed (see its status above)"
  GRADSYNC="${G}" "${CHECK_JOB}" "$1" --switches "$3" || die "$2: see above"
  "${G}" metrics "$1" --format table
}
wait_step() {  # job, step, seconds: until the job has done that many steps
  local end=$((SECONDS + $3)) reached
  while ((SECONDS < end)); do
    reached="$("${G}" status "$1" | sed -n 's/^steps: *\([0-9]*\) of.*/\1/p')"
    [[ -n "${reached}" && "${reached}" -ge "$2" ]] && return 0
    sleep 0.2
  done
  die "$1 did not reach step $2 within $3 s"
}

echo "-- NCCL ring, scripted switches to the PS at step 200 and back at 400"
job="$(submit --workers 1 --steps 600 --switch-at 200:ps --switch-at 400:ring)"
finish "${job}" "the scripted NCCL job" 2
"${G}" status "${job}" | grep -q '^ring: *nccl' ||
  die "the job did not use the NCCL ring"

echo "-- NCCL ring, switched at runtime: to the PS after step 100, back after 300"
job="$(submit --workers 1 --steps 3000)"
wait_step "${job}" 100 300
"${G}" switch "${job}" ps
wait_step "${job}" 300 300
"${G}" switch "${job}" ring
finish "${job}" "the runtime-switched NCCL job" 2

echo "-- 2 ranks sharing cuda:0, host-staged TCP ring, PS from step 100 to 200"
job="$(submit --workers 2 --ring-backend tcp --steps 300 \
  --switch-at 100:ps --switch-at 200:ring)"
finish "${job}" "the 2-rank host-staged job" 2

echo "check.sh: all GPU checks passed"
