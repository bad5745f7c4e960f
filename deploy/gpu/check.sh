#!/usr/bin/env bash
# Builds gradsync on a GPU machine and runs everything that needs a GPU:
# the GPU tests (ctest label "gpu": the CUDA model, GPU ranks on the TCP
# ring and the PS, the NCCL training path), the NCCL backend tests, the
# NCCL all-reduce benchmark, and a real job on cuda:0 through the
# coordinator on the NCCL ring, switched to the PS and back at runtime.
# Fails loudly when no GPU is visible, when the CUDA kernels were not
# configured, or when a GPU test skipped.
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
[[ "$(nvidia-smi -L | grep -c '^GPU')" -ge 1 ]] || die "no GPU visible"

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

echo "== GPU model tests (ctest -L gpu)"
(cd "${BUILD_DIR}" && ctest -L gpu --output-on-failure)
# On a GPU host nothing but the GPU-less case may skip.
log="$(mktemp)"
trap 'rm -f "${log}"' EXIT
"${BUILD_DIR}/tests/gpu/gpu_model_test" \
  --gtest_filter='-NoCudaDeviceTest.CreateReturnsFailedPrecondition' | tee "${log}"
"${BUILD_DIR}/tests/gpu/gpu_trainer_test" \
  --gtest_filter='-GpuTrainModelTest.NoGpu_FailsNamingTheDevice' | tee -a "${log}"
# The job runner's GPU cases: a mixed GPU + CPU job, a one-GPU NCCL job.
"${BUILD_DIR}/tests/daemon/job_runner_test" \
  --gtest_filter='*CudaRank*:*NcclJob*' | tee -a "${log}"
# The two-GPU case may skip on a one-GPU host.
"${BUILD_DIR}/tests/gpu/gpu_nccl_trainer_test" \
  --gtest_filter='-*TwoGpus*' | tee -a "${log}"
if grep -q '^\[  SKIPPED \]' "${log}"; then
  die "GPU tests skipped on a GPU host (see above)"
fi

echo "== NCCL backend tests"
"${BUILD_DIR}/tests/nccl/nccl_communicator_test" | tee "${log}"
if grep -q '^\[  SKIPPED \]' "${log}"; then
  echo "check.sh: note: some NCCL tests skipped (multi-GPU cases need more GPUs)"
fi

echo "== NCCL all-reduce benchmark"
"${BUILD_DIR}/cli/gradsync" bench allreduce --backend nccl --ranks 1 \
  -b 1M -e "${MAX_BYTES}"

echo "== an mlp job on cuda:0 through the coordinator: NCCL ring, PS, NCCL ring"
G="${BUILD_DIR}/cli/gradsync"
run_dir="$(mktemp -d)"
cleanup() {
  "${G}" local down --run-dir "${run_dir}" >/dev/null 2>&1 || true
  rm -f "${log}"
}
trap cleanup EXIT
out="$("${G}" local up --workers 1 --devices-per-worker cuda:0 --ps 1 \
  --port 0 --run-dir "${run_dir}" --timeout 60)"
echo "${out}"
export GRADSYNC_COORDINATOR="$(echo "${out}" | sed -n 's/^export GRADSYNC_COORDINATOR=//p')"
job="$("${G}" submit --workers 1 --device cuda --model mlp --layers 784,1024,1024,10 \
  --dataset fashion-mnist --optimizer adam --lr 1e-3 --batch-size 256 \
  --steps 600 --switch-at 200:ps --switch-at 400:ring --json |
  sed -n 's/.*"jobId": *"\([^"]*\)".*/\1/p')"
[[ -n "${job}" ]] || die "submit printed no job id"
"${G}" watch "${job}" --deadline 600 >/dev/null || true
"${G}" status "${job}"
"${G}" status "${job}" --json | grep -q '"state": *"JOB_STATE_SUCCEEDED"' ||
  die "the NCCL job did not succeed (see its status above)"
"${G}" status "${job}" | grep -q '^ring: *nccl' ||
  die "the job did not use the NCCL ring"
"${G}" metrics "${job}" --format table

echo "check.sh: all GPU checks passed"
