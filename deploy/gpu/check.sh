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
# The checks themselves live in deploy/gpu/gpu_checks.sh, shared with the
# prebuilt bundle's runner (deploy/gpu/run_bundle.sh), which needs no
# toolchain or packages on the GPU host.
#
#   deploy/gpu/check.sh                 # build dir: build-gpu
#   BUILD_DIR=/tmp/b JOBS=16 deploy/gpu/check.sh
#   CUDA_ARCHS=80 deploy/gpu/check.sh   # not an H100/H200 (default 90)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=deploy/gpu/gpu_checks.sh
source "${ROOT}/deploy/gpu/gpu_checks.sh"
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
GPUS="$(gpu_count)"
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

# Every GPU test binary once, directly, so that a skip or an empty filter
# shows (gpu_checks.sh says which cases each runs).
echo "== GPU tests"
gpu_run_tests "${GPUS}" "${BUILD_DIR}"/tests/{gpu,daemon,cli,nccl} ||
  die "see above"
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
JOB_DATA=()
run_dir="$(mktemp -d)"
trap '"${G}" local down --run-dir "${run_dir}" >/dev/null 2>&1 || true' EXIT
gpu_cluster_up "${run_dir}" || die "see above"
gpu_job_scripted_switch || die "see above"
gpu_job_runtime_switch || die "see above"
gpu_job_two_ranks || die "see above"
gpu_job_sixteen_bit_nccl || die "see above"

echo "check.sh: all GPU checks passed"
