#!/usr/bin/env bash
# Runs the GPU checks of gradsync from its prebuilt bundle (made by
# deploy/gpu/bundle.sh) on a GPU machine that has nothing of gradsync's:
# no compiler, no gRPC, protobuf, Abseil or OpenBLAS, an unknown Linux. The
# bundle carries its binaries, their libraries down to the C library and the
# loader, a Fashion-MNIST subset and these scripts; the machine gives the
# driver, NCCL and cuBLAS (pip's nvidia-nccl-cu13 and nvidia-cublas beside
# PyTorch, found through python3) and PyTorch for the comparison.
#
#   gpu-bundle/run_bundle.sh           # on the GPU machine; results in $OUT
#   gpu-bundle/run_bundle.sh --cpu     # CPU parts only (no GPU, no python)
#
# Each step runs under `timeout`, its own and what is left of the run's
# budget (GRADSYNC_RUN_BUDGET seconds, 450 unless set), and whatever fails,
# the steps after it still run; a step that the budget no longer allows is
# marked NOT RUN. GRADSYNC_RUN_STEPS=a,b runs only the steps named (and
# those they need), for a rerun of what failed. The GPU steps, in order:
#   env          nvidia-smi, the machine, the libraries found and their
#                versions (fails without a GPU or without NCCL/cuBLAS)
#   nccl-bench   `gradsync bench allreduce --backend nccl` (nccl-tests
#                table) and raw ncclAllReduce (gradsync-nccl-raw), two
#                rounds each, 1 MiB to 256 MiB: gradsync adds <= 5% per call
#   gpu-tests    every GPU test binary once, directly: a skip, an empty
#                filter or a failure fails it
#   cluster      a coordinator, two worker daemons on cuda:0 and a PS
#   job-scripted an MLP on cuda:0 on the NCCL ring, switched by its spec to
#                the PS at step 200 and back at 400
#   job-2ranks   two ranks (the two daemons, both on cuda:0) on the
#                host-staged TCP ring, on the PS from step 100 to 200
#   job-16bit    an MLP on cuda:0 on the NCCL ring with bf16, then fp16
#                gradients (issue 40)
#   mlp-gradsync one rank on the NCCL ring, 221 steps, for its step times
#   mlp-torch    the same MLP, batch and data in PyTorch on the same GPU;
#                gradsync within 1.2x of PyTorch's time per sample
#   job-runtime  an MLP on cuda:0 switched with `gradsync switch` to the PS
#                after step 100 and back after 200 steps on the PS; 20000
#                steps (CPU: 5000), so that the ring's fast steps do not end
#                the job before the switches land
#   torch-pip    example (a) (examples/torch/mlp.py) on the machine's own
#                PyTorch, on cuda:0 through torch's NCCL process group
#                rendezvoused through gradsync's store, switched to the PS
#                at step 100 and back at 200 (scripts/torch_pip_step.sh);
#                SKIP, not a failure, without python, torch, CUDA or NCCL
# Every job is checked with scripts/check_job.sh (every step once, in its
# switch table's mode, parameters bitwise equal across ranks).
# --cpu runs: env (the bundle's binaries start), cluster (cpu devices),
# job-scripted, job-2ranks and job-runtime on a small MLP on the CPU, and
# the ring all-reduce bench, with neither GPU nor python; and torch-pip as
# a CPU dry run (torch's Gloo group) when PYTHON names a python with torch,
# else its skip.
#
# Output, in $OUT (./gpu-bundle-out unless set): summary.md (also printed at
# the end) and logs.tar.gz (every step's log, the daemons' logs, the bench
# tables, the metrics). Exit status: 0 when every step passed, 1 otherwise.
#
# The binaries' loader is /tmp/gradsync-bundle/lib/ld-linux-x86-64.so.2 (an
# absolute path is what the kernel takes), so this script first unpacks
# payload.tar.gz there (replacing an earlier bundle; a few seconds).
# GRADSYNC_GPU_LIBS=DIR:DIR names the directories of libnccl.so.2 and
# libcublas.so.13 instead of the search.
set -uo pipefail

readonly FIXED_ROOT=/tmp/gradsync-bundle
SELF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"

# ---------------------------------------------------------------------------
# The steps. Each runs in its own process (this script with --step NAME,
# under timeout), its output in $LOGS/NAME.log; a markdown section for the
# summary goes to $SECTIONS/NAME.md.

step_env() {
  echo "bundle: $(head -n 1 "${ROOT}/BUNDLE.md" 2>/dev/null)"
  uname -a
  sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null
  echo "host C library: $(ldd --version 2>/dev/null | head -n 1)"
  echo "bundle C library: $(sed -n 's/^- C library: //p' "${ROOT}/BUNDLE.md")"
  "${G}" --help >/dev/null 2>&1 ||
    gpu_fail "the bundle's gradsync does not start: $("${G}" --help 2>&1 | head -n 3)" ||
    return 1
  for daemon in gradsync-coordinator gradsync-worker gradsync-ps; do
    # Each prints its usage for --help; an unresolved library fails here.
    "${ROOT}/bin/${daemon}" --help >/dev/null 2>&1 ||
      gpu_fail "${daemon} does not start: $("${ROOT}/bin/${daemon}" --help 2>&1 | head -n 3)" ||
      return 1
  done
  if [[ "${MODE}" == cpu ]]; then
    {
      echo "- bundle: $(head -n 1 "${ROOT}/BUNDLE.md" 2>/dev/null)"
      echo "- $(uname -srm); CPU mode: the binaries ran on the bundle's own C library and loader ($(sed -n 's/^- C library: //p' "${ROOT}/BUNDLE.md"))"
    } >"${SECTIONS}/env.md"
    return 0
  fi
  nvidia-smi || gpu_fail "nvidia-smi failed: no GPU or no driver" || return 1
  [[ "${GPUS}" -ge 1 ]] || gpu_fail "nvidia-smi lists no GPU" || return 1
  local smi
  smi="$(nvidia-smi --query-gpu=name,driver_version,memory.total \
    --format=csv,noheader 2>&1 | head -n 1)"
  "${PYTHON}" -m pip show nvidia-nccl-cu13 nvidia-cublas nvidia-cuda-runtime \
    torch 2>/dev/null | grep -E '^(Name|Version|Location):'
  "${ROOT}/bin/gradsync-nccl-raw" -b 4 -e 4 -n 1 -w 0 | tee "${WORK}/raw-probe.txt" ||
    gpu_fail "gradsync-nccl-raw could not run one ncclAllReduce" || return 1
  {
    echo "- bundle: $(head -n 1 "${ROOT}/BUNDLE.md" 2>/dev/null)"
    echo "- GPU: ${GPUS} x ${smi} (nvidia-smi: name, driver, memory)"
    echo "- host: $(uname -srm); $(sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null | tr -d '"'); $(ldd --version 2>/dev/null | head -n 1)"
    echo "- gradsync ran on the bundle's C library: $(sed -n 's/^- C library: //p' "${ROOT}/BUNDLE.md")"
    sed -n 's/^# \(NCCL .*\)/- raw probe: \1/p; s/^# loaded \(.*\)/- loaded: \1/p' \
      "${WORK}/raw-probe.txt"
    echo "- python: ${PYTHON} ($("${PYTHON}" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)' 2>&1 | tail -n 1))"
    "${PYTHON}" -m pip show nvidia-nccl-cu13 nvidia-cublas nvidia-cuda-runtime \
      2>/dev/null | awk '/^Name:/ { n = $2 } /^Version:/ { printf "- pip %s %s\n", n, $2 }'
  } >"${SECTIONS}/env.md"
}

step_gpu-tests() {
  gpu_run_tests "${GPUS}" "${ROOT}/tests"
}

step_nccl-bench() {
  local round failed=0 gs=() raw=()
  for round in 1 2; do
    echo "== round ${round}: raw ncclAllReduce"
    "${ROOT}/bin/gradsync-nccl-raw" -b 1M -e 256M -n 50 -w 10 |
      tee "${WORK}/nccl-raw-${round}.txt" || failed=1
    echo "== round ${round}: gradsync bench allreduce --backend nccl"
    "${G}" bench allreduce --backend nccl --ranks 1 -b 1M -e 256M -n 50 \
      -w 10 | tee "${WORK}/nccl-gradsync-${round}.txt" || failed=1
    raw+=("${WORK}/nccl-raw-${round}.txt")
    gs+=("${WORK}/nccl-gradsync-${round}.txt")
  done
  # gradsync's table (round 1) here, raw's in the logs; the comparison
  # below has both times.
  {
    echo '```'
    cat "${WORK}/nccl-gradsync-1.txt"
    echo '```'
    echo
  } >"${SECTIONS}/nccl-bench.md"
  "${PYTHON}" "${ROOT}/scripts/gpu_compare.py" nccl --gradsync "${gs[@]}" \
    --raw "${raw[@]}" | tee -a "${SECTIONS}/nccl-bench.md" || failed=1
  [[ ${failed} -eq 0 ]] || gpu_fail "see the tables above"
}

step_cluster() {
  local devices=cuda:0
  [[ "${MODE}" == cpu ]] && devices=cpu:1
  gpu_cluster_up "${WORK}/run" "${devices}" || return 1
  echo "${GRADSYNC_COORDINATOR}" >"${WORK}/coordinator"
  "${G}" workers
}

need_cluster() {
  [[ -n "${GRADSYNC_COORDINATOR:-}" ]] ||
    gpu_fail "no cluster to submit to: the cluster step failed"
}

# The jobs log check_job.sh's one-line verdict; the summary quotes it.
job_step() {  # function [args]
  local out rc
  need_cluster || return 1
  out="$("$@" 2>&1)"
  rc=$?
  echo "${out}"
  grep -E '^job-[0-9]+: steps' <<<"${out}" >>"${SECTIONS}/jobs.md"
  return ${rc}
}
step_job-scripted() { job_step gpu_job_scripted_switch "${DEVICE}"; }
step_job-2ranks() { job_step gpu_job_two_ranks "${DEVICE}"; }
step_job-16bit() { job_step gpu_job_sixteen_bit_nccl "${DEVICE}"; }
step_job-runtime() { job_step gpu_job_runtime_switch "${DEVICE}" "${RUNTIME_STEPS}"; }

step_mlp-gradsync() {
  local job
  need_cluster || return 1
  job="$(gpu_submit --device cuda --workers 1 --steps 221)" || return 1
  gpu_finish "${job}" "the timed MLP job" 0 || return 1
  "${G}" metrics "${job}" --format csv >"${WORK}/mlp-gradsync.csv"
}

step_mlp-torch() {
  [[ -s "${WORK}/mlp-gradsync.csv" ]] ||
    gpu_fail "no gradsync metrics to compare with (mlp-gradsync failed)" ||
    return 1
  "${PYTHON}" "${ROOT}/scripts/gpu_compare.py" torch \
    --data "${ROOT}/data/fashion-mnist" --layers "${JOB_LAYERS}" \
    --batch-size 256 --warmup 20 --steps 200 >"${WORK}/mlp-torch.json" ||
    gpu_fail "the PyTorch side failed" || return 1
  cat "${WORK}/mlp-torch.json"
  "${PYTHON}" "${ROOT}/scripts/gpu_compare.py" mlp \
    --csv "${WORK}/mlp-gradsync.csv" --torch "${WORK}/mlp-torch.json" \
    --warmup 20 --steps 200 | tee "${SECTIONS}/mlp.md"
}

step_torch-pip() {
  local device=cuda
  [[ "${MODE}" == cpu ]] && device=cpu
  ROOT="${ROOT}" G="${G}" "${ROOT}/scripts/torch_pip_step.sh" "${device}"
}

step_ring-bench() {
  "${G}" bench allreduce --ranks 2 -b 1M -e 16M | tee "${SECTIONS}/ring-bench.md"
}

# ---------------------------------------------------------------------------
# Setup shared by the driver and the steps.

# Where the image keeps NCCL and cuBLAS: GRADSYNC_GPU_LIBS, else pip's
# nvidia packages beside PyTorch. Sets IMAGE_LIB_DIRS and IMAGE_LIBS_NOTE.
find_image_libs() {
  local lib dir found roots=() cuda
  IMAGE_LIB_DIRS=""
  IMAGE_LIBS_NOTE=""
  if [[ -n "${GRADSYNC_GPU_LIBS:-}" ]]; then
    IFS=: read -r -a roots <<<"${GRADSYNC_GPU_LIBS}"
  elif [[ -n "${PYTHON}" ]]; then
    mapfile -t roots < <("${PYTHON}" -c '
import site, sysconfig
paths = site.getsitepackages() + [sysconfig.get_paths()["purelib"]]
print("\n".join(dict.fromkeys(p + "/nvidia" for p in paths)))' 2>/dev/null)
  fi
  for lib in libnccl.so.2 libcublas.so.13 libcublasLt.so.13; do
    found=""
    for dir in "${roots[@]}"; do
      [[ -d "${dir}" ]] || continue
      found="$(find "${dir}" -name "${lib}" 2>/dev/null | sort | head -n 1)"
      [[ -n "${found}" ]] && break
    done
    if [[ -z "${found}" ]]; then
      IMAGE_LIBS_NOTE+="${lib} NOT FOUND under ${roots[*]:-nothing (no python3, no GRADSYNC_GPU_LIBS)}; "
      continue
    fi
    IMAGE_LIBS_NOTE+="${lib} $(readlink -f "${found}"); "
    case ":${IMAGE_LIB_DIRS}:" in
      *":$(dirname "${found}"):"*) ;;
      *) IMAGE_LIB_DIRS="${IMAGE_LIB_DIRS:+${IMAGE_LIB_DIRS}:}$(dirname "${found}")" ;;
    esac
  done
  # The driver's libcuda.so.1: the loader's cache, else where drivers live.
  # Its folder goes on LD_LIBRARY_PATH even when it is a system folder: the
  # bundle's binaries look in their RPATH first, and the C and C++ runtimes
  # they load themselves are reused by name.
  cuda="$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ { print $NF; exit }')"
  if [[ -z "${cuda}" ]]; then
    for dir in /usr/local/nvidia/lib64 /usr/local/nvidia/lib \
      /usr/lib/x86_64-linux-gnu /usr/lib64 /lib64; do
      if [[ -e "${dir}/libcuda.so.1" ]]; then
        cuda="${dir}/libcuda.so.1"
        break
      fi
    done
  fi
  if [[ -n "${cuda}" ]]; then
    IMAGE_LIB_DIRS="${IMAGE_LIB_DIRS:+${IMAGE_LIB_DIRS}:}$(dirname "${cuda}")"
  fi
  IMAGE_LIBS_NOTE+="libcuda.so.1 ${cuda:-NOT FOUND}"
}

setup() {
  ROOT="${FIXED_ROOT}"
  G="${ROOT}/bin/gradsync"
  CHECK_JOB="${ROOT}/scripts/check_job.sh"
  # shellcheck source=deploy/gpu/gpu_checks.sh
  source "${ROOT}/scripts/gpu_checks.sh"
  JOB_DATA=(--data-path "${ROOT}/data/fashion-mnist")
  if [[ "${MODE}" == cpu ]]; then
    JOB_LAYERS=784,64,10
    DEVICE=cpu
    RUNTIME_STEPS=5000
  else
    JOB_LAYERS=784,1024,1024,10
    DEVICE=cuda
    RUNTIME_STEPS=20000
  fi
  if [[ -s "${WORK}/coordinator" ]]; then
    GRADSYNC_COORDINATOR="$(cat "${WORK}/coordinator")"
    export GRADSYNC_COORDINATOR
  fi
}

if [[ "${1:-}" == --step ]]; then
  setup
  "step_$2"
  exit $?
fi

# ---------------------------------------------------------------------------
# The driver.

MODE=gpu
case "${1:-}" in
  --cpu) MODE=cpu ;;
  "") ;;
  *)
    sed -n '2,/^set -uo/p' "${SELF}" | sed '$d; s/^# \{0,1\}//'
    exit 2
    ;;
esac
BUNDLE="$(dirname "${SELF}")"
OUT="${OUT:-${PWD}/gpu-bundle-out}"
BUDGET="${GRADSYNC_RUN_BUDGET:-450}"
START=${SECONDS}
mkdir -p "${OUT}" || exit 1

# The binaries' loader path is fixed: the payload goes there.
if [[ -e "${FIXED_ROOT}" ]]; then
  [[ -f "${FIXED_ROOT}/BUNDLE.md" ]] ||
    { echo "run_bundle.sh: ${FIXED_ROOT} exists and is no gradsync bundle; move it away" >&2; exit 1; }
  rm -rf "${FIXED_ROOT}"
fi
mkdir -p "${FIXED_ROOT}" && tar -C "${FIXED_ROOT}" -xzf "${BUNDLE}/payload.tar.gz" ||
  { echo "run_bundle.sh: cannot unpack ${BUNDLE}/payload.tar.gz into ${FIXED_ROOT}" >&2; exit 1; }

WORK="$(mktemp -d /tmp/gradsync-run.XXXXXX)" || exit 1
LOGS="${WORK}/logs"
SECTIONS="${WORK}/sections"
mkdir -p "${LOGS}" "${SECTIONS}"
WANTED_PYTHON="${PYTHON:-}"
PYTHON=""
if [[ "${MODE}" == gpu ]]; then
  for candidate in "${WANTED_PYTHON}" python3 /opt/torch/.venv/bin/python3; do
    if [[ -n "${candidate}" ]] &&
      "${candidate}" -c 'import torch' >/dev/null 2>&1; then
      PYTHON="${candidate}"
      break
    fi
  done
  [[ -n "${PYTHON}" ]] || PYTHON="$(command -v python3 || echo python3)"
else
  # The CPU run uses python only when told (the torch-pip dry run).
  PYTHON="${WANTED_PYTHON}"
fi
find_image_libs
[[ -n "${IMAGE_LIB_DIRS}" ]] &&
  export LD_LIBRARY_PATH="${IMAGE_LIB_DIRS}${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"
GPUS=0
[[ "${MODE}" == gpu ]] && GPUS="$(
  source "${FIXED_ROOT}/scripts/gpu_checks.sh"
  gpu_count
)"
export MODE WORK LOGS SECTIONS PYTHON GPUS GRADSYNC_RUN_DIR="${WORK}/run"
# NCCL's warnings (none by default) go to the steps' logs.
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
echo "- libraries from the machine: ${IMAGE_LIBS_NOTE}" >"${SECTIONS}/libs.md"

cleanup() {
  if [[ -s "${WORK}/coordinator" ]]; then
    "${FIXED_ROOT}/bin/gradsync" local down --run-dir "${WORK}/run" \
      >>"${LOGS}/cluster-down.log" 2>&1
  fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# GRADSYNC_RUN_STEPS=a,b,... runs only those steps (env always runs, and
# cluster runs whenever a job or mlp step does): a rerun of what failed
# fits in what is left of a device session.
wanted() {  # name
  local steps=",${GRADSYNC_RUN_STEPS:-},"
  [[ -z "${GRADSYNC_RUN_STEPS:-}" || "$1" == env ]] && return 0
  [[ "${steps}" == *",$1,"* ]] && return 0
  [[ "$1" == cluster && "${steps}" =~ ,(job-|mlp-|torch-) ]] && return 0
  [[ "$1" == mlp-gradsync && "${steps}" == *,mlp-torch,* ]] && return 0
  return 1
}

RESULTS=()
FAILED=0
run_step() {  # name seconds
  local name="$1" limit="$2" left begin rc status note
  wanted "${name}" || return 0
  left=$((BUDGET - (SECONDS - START) - 15))
  ((limit > left)) && limit=${left}
  if ((limit < 10)); then
    RESULTS+=("| ${name} | NOT RUN | 0 | the run's budget of ${BUDGET} s is spent |")
    FAILED=1
    return
  fi
  echo "== ${name} (at most ${limit} s)"
  begin=${SECONDS}
  timeout "${limit}" "${SELF}" --step "${name}" >"${LOGS}/${name}.log" 2>&1
  rc=$?
  status=PASS
  note=""
  if [[ ${rc} -eq 77 ]]; then
    # The step could not apply here and said why (not a failure).
    status=SKIP
    note="$(grep -m1 '^SKIP: ' "${LOGS}/${name}.log" | cut -c7-200 | tr '|' '/')"
  elif [[ ${rc} -eq 124 || ${rc} -eq 137 ]]; then
    status=TIMEOUT
    note="stopped after ${limit} s"
  elif [[ ${rc} -ne 0 ]]; then
    status=FAIL
    note="$(grep -E 'FAILED|rror' "${LOGS}/${name}.log" | tail -n 1 | cut -c1-200 | tr '|' '/')"
  fi
  [[ "${status}" == PASS || "${status}" == SKIP ]] || FAILED=1
  RESULTS+=("| ${name} | ${status} | $((SECONDS - begin)) | ${note} |")
  echo "   ${status} in $((SECONDS - begin)) s${note:+: ${note}}"
  tail -n 5 "${LOGS}/${name}.log" | sed 's/^/   | /'
}

run_step env 60
if [[ "${MODE}" == gpu ]]; then
  run_step nccl-bench 120
  run_step gpu-tests 240
  run_step cluster 90
  run_step job-scripted 150
  run_step job-2ranks 150
  run_step job-16bit 150
  run_step mlp-gradsync 120
  run_step mlp-torch 150
  run_step job-runtime 200
  run_step torch-pip 150
else
  run_step ring-bench 60
  run_step cluster 90
  run_step job-scripted 120
  run_step job-2ranks 120
  run_step job-runtime 150
  run_step torch-pip 240
fi
cleanup
rm -f "${WORK}/coordinator"

# The summary: the checks, then each step's section.
summary="${OUT}/summary.md"
{
  echo "# gradsync GPU bundle run, $(date -u '+%Y-%m-%d %H:%M UTC') (${MODE} mode)"
  echo
  cat "${SECTIONS}/env.md" "${SECTIONS}/libs.md" 2>/dev/null
  echo
  echo "| step | result | seconds | note |"
  echo "| --- | --- | ---: | --- |"
  printf '%s\n' "${RESULTS[@]}"
  echo
  echo "Overall: $([[ ${FAILED} -eq 0 ]] && echo PASS || echo FAIL) in $((SECONDS - START)) s; logs in logs.tar.gz."
  for part in nccl-bench:"NCCL all-reduce, gradsync against raw ncclAllReduce" \
    mlp:"MLP on the GPU, gradsync against PyTorch" \
    jobs:"Jobs through the daemons (scripts/check_job.sh)" \
    torch-pip:"Example (a) on the machine's PyTorch (torch-pip)" \
    ring-bench:"TCP ring all-reduce, 2 ranks"; do
    if [[ -s "${SECTIONS}/${part%%:*}.md" ]]; then
      echo
      echo "## ${part#*:}"
      echo
      cat "${SECTIONS}/${part%%:*}.md"
    fi
  done
} >"${summary}"
cp "${WORK}"/*.txt "${WORK}"/*.csv "${WORK}"/*.json "${LOGS}/" 2>/dev/null
[[ -d "${WORK}/run" ]] && cp -r "${WORK}/run" "${LOGS}/daemons"
tar -C "${WORK}" -czf "${OUT}/logs.tar.gz" logs
cat "${summary}"
rm -rf "${WORK}"
exit ${FAILED}
