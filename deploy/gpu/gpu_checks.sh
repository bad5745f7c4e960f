# The GPU checks that deploy/gpu/check.sh (a source build on a GPU host) and
# deploy/gpu/run_bundle.sh (the prebuilt bundle on a lent GPU machine) both
# run. Sourced, not executed. Each function prints what it does, returns
# non-zero with a line on stderr that says what failed, and never exits, so
# that check.sh can stop at the first failure and run_bundle.sh can record
# it and go on.
#
# The caller sets:
#   G         the gradsync CLI
#   CHECK_JOB scripts/check_job.sh
#   JOB_DATA  flags that point jobs at Fashion-MNIST (empty array: the
#             workers' default directory), e.g. (--data-path DIR)
#   JOB_LAYERS the MLP's widths (784,1024,1024,10 unless set)
# and, for the jobs, GRADSYNC_COORDINATOR (gpu_cluster_up exports it).

gpu_fail() {
  echo "FAILED: $*" >&2
  return 1
}

# The number of GPUs nvidia-smi lists (0 without a driver).
gpu_count() {
  local n
  n="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" || true
  echo "${n:-0}"
}

# Runs one GoogleTest binary once, directly, so that a skipped case or a
# filter that matches nothing shows: both fail, as does any failed case.
gpu_run_gtest() {  # binary filter
  local out rc
  [[ -x "$1" ]] || gpu_fail "$1 is missing" || return 1
  out="$(mktemp)"
  "$1" --gtest_filter="$2" >"${out}" 2>&1
  rc=$?
  cat "${out}"
  if [[ ${rc} -ne 0 ]]; then
    rm -f "${out}"
    gpu_fail "$(basename "$1") --gtest_filter='$2' exited with ${rc}"
    return 1
  fi
  if ! grep -q '^\[  PASSED  \] [1-9][0-9]* test' "${out}"; then
    rm -f "${out}"
    gpu_fail "$(basename "$1") --gtest_filter='$2' ran no test"
    return 1
  fi
  if grep -q '^\[  SKIPPED \]' "${out}"; then
    rm -f "${out}"
    gpu_fail "$(basename "$1") --gtest_filter='$2' skipped a case on a GPU host"
    return 1
  fi
  rm -f "${out}"
}

# Every test binary with GPU cases, one "binary filter" line each. The
# filters leave out the cases that cover GPU-less hosts (they skip where a
# GPU is visible) and, on fewer than 2 GPUs, the cases that need two.
gpu_test_cases() {  # gpus
  local two_gpus="-*TwoGpus*"
  local nccl_one="-CreateNcclCommunicatorTest.NoGpu_ReturnsFailedPrecondition"
  local nccl_two=":NcclCommunicatorTest.PeerSkipsCollective_TimesOutThenStaysFailed"
  if [[ "$1" -ge 2 ]]; then
    two_gpus="*"
    nccl_two=""
  fi
  cat <<EOF
gpu_model_test -NoCudaDeviceTest.CreateReturnsFailedPrecondition
gpu_trainer_test -GpuTrainModelTest.NoGpu_FailsNamingTheDevice
gpu_nccl_trainer_test ${two_gpus}
job_runner_test *CudaRank*:*NcclJob*
cli_bench_rank_test BackendTest.NcclOnOneGpuVerifies
nccl_communicator_test ${nccl_one}${nccl_two}
EOF
}

# The path of test binary $1: the first of the directories $2... that has it.
gpu_test_binary() {  # name dir...
  local name="$1" dir
  shift
  for dir in "$@"; do
    if [[ -x "${dir}/${name}" ]]; then
      echo "${dir}/${name}"
      return 0
    fi
  done
  echo "${name}"  # gpu_run_gtest then says it is missing
}

# Runs every GPU test binary once (gpu_test_cases), looked up in the
# directories given; all of them run even after a failure.
gpu_run_tests() {  # gpus dir...
  local gpus="$1" name filter failed=0
  shift
  while read -r name filter; do
    echo "-- ${name} --gtest_filter='${filter}'"
    gpu_run_gtest "$(gpu_test_binary "${name}" "$@")" "${filter}" ||
      failed=1
  done < <(gpu_test_cases "${gpus}")
  [[ ${failed} -eq 0 ]] || gpu_fail "GPU tests failed (see above)"
}

# Starts a coordinator, two worker daemons both on cuda:0 (the 2-rank job
# shares it) and a PS in RUN_DIR; exports GRADSYNC_COORDINATOR, and the
# token and TLS directory the CLI needs for it.
gpu_cluster_up() {  # run_dir [devices]
  local out
  out="$("${G}" local up --workers 2 --devices-per-worker "${2:-cuda:0}" \
    --ps 1 --port 0 --run-dir "$1" --timeout 60)" ||
    gpu_fail "gradsync local up failed (its message is above)" || return 1
  echo "${out}"
  GRADSYNC_COORDINATOR="$(sed -n 's/^export GRADSYNC_COORDINATOR=//p' <<<"${out}")"
  [[ -n "${GRADSYNC_COORDINATOR}" ]] ||
    gpu_fail "gradsync local up printed no coordinator address" || return 1
  export GRADSYNC_COORDINATOR
  GRADSYNC_TOKEN_FILE="$(sed -n 's/^export GRADSYNC_TOKEN_FILE=//p' <<<"${out}")"
  GRADSYNC_TLS_DIR="$(sed -n 's/^export GRADSYNC_TLS_DIR=//p' <<<"${out}")"
  export GRADSYNC_TOKEN_FILE GRADSYNC_TLS_DIR
}

# Submits an MLP job (the flags after the common ones); prints its id.
gpu_submit() {  # submit flags...
  local job
  job="$("${G}" submit --model mlp --layers "${JOB_LAYERS:-784,1024,1024,10}" \
    --dataset fashion-mnist "${JOB_DATA[@]}" --optimizer adam --lr 1e-3 \
    --batch-size 256 "$@" --json | sed -n 's/.*"jobId": *"\([^"]*\)".*/\1/p')"
  [[ -n "${job}" ]] || gpu_fail "gradsync submit $* printed no job id" ||
    return 1
  echo "${job}"
}

# Waits for a job to end, then checks it: SUCCEEDED, and scripts/
# check_job.sh (every step once, in its switch table's mode, parameters
# bitwise equal across ranks) with at least `switches` switches.
gpu_finish() {  # job what switches
  "${G}" watch "$1" --deadline 600 >/dev/null
  "${G}" status "$1"
  "${G}" status "$1" --json | grep -q '"state": *"JOB_STATE_SUCCEEDED"' ||
    gpu_fail "$2 did not succeed (see its status above)" || return 1
  GRADSYNC="${G}" "${CHECK_JOB}" "$1" --switches "$3" ||
    gpu_fail "$2: check_job.sh found the problem above" || return 1
  "${G}" metrics "$1" --format table
}

# Waits until a job has done `step` steps.
gpu_wait_step() {  # job step seconds
  local end=$((SECONDS + $3)) reached
  while ((SECONDS < end)); do
    reached="$(gpu_job_step "$1")"
    [[ -n "${reached}" && "${reached}" -ge "$2" ]] && return 0
    sleep 0.1
  done
  gpu_fail "$1 did not reach step $2 within $3 s"
}

# Waits until a job runs in `mode` (ring or ps), as `gradsync status` says.
gpu_wait_mode() {  # job mode seconds
  local end=$((SECONDS + $3))
  while ((SECONDS < end)); do
    "${G}" status "$1" | grep -q "^mode: *$2\$" && return 0
    sleep 0.1
  done
  gpu_fail "$1 did not change to $2 mode within $3 s"
}

# The step a job has reached, as `gradsync status` says.
gpu_job_step() {  # job
  "${G}" status "$1" | sed -n 's/^steps: *\([0-9]*\) of.*/\1/p'
}

# The MLP on cuda:0 on the NCCL ring, switched by its spec to the PS at step
# 200 and back at 400.
gpu_job_scripted_switch() {  # [device]
  local job
  echo "-- NCCL ring, scripted switches to the PS at step 200 and back at 400"
  job="$(gpu_submit --device "${1:-cuda}" --workers 1 --steps 600 \
    --switch-at 200:ps --switch-at 400:ring)" || return 1
  gpu_finish "${job}" "the scripted job" 2 || return 1
  if [[ "${1:-cuda}" == cuda ]]; then
    "${G}" status "${job}" | grep -q '^ring: *nccl' ||
      gpu_fail "the job did not use the NCCL ring" || return 1
  fi
}

# The same, switched at runtime with `gradsync switch`: to the PS after
# step 100, and back once the job has run 200 steps on the PS (on a GPU the
# ring's steps take about 0.6 ms, so the switch lands hundreds of steps
# after it was asked for). The job's steps (20000 unless given) must
# outlast both round trips.
gpu_job_runtime_switch() {  # [device] [steps]
  local job on_ps
  echo "-- switched at runtime: to the PS after step 100, back after 200 PS steps"
  job="$(gpu_submit --device "${1:-cuda}" --workers 1 --steps "${2:-20000}")" ||
    return 1
  gpu_wait_step "${job}" 100 300 || return 1
  "${G}" switch "${job}" ps || gpu_fail "gradsync switch ${job} ps" || return 1
  gpu_wait_mode "${job}" ps 300 || return 1
  on_ps="$(gpu_job_step "${job}")"
  gpu_wait_step "${job}" $((${on_ps:-0} + 200)) 300 || return 1
  "${G}" switch "${job}" ring ||
    gpu_fail "gradsync switch ${job} ring" || return 1
  gpu_finish "${job}" "the runtime-switched job" 2
}

# The MLP on cuda:0 on the NCCL ring with bf16 gradients (rounded on the
# device, ncclAllReduce in ncclBfloat16, widened back), then fp16: each
# job's every step checked, and its status must show NCCL and the type.
gpu_job_sixteen_bit_nccl() {  # [device]
  local job dtype
  for dtype in bf16 fp16; do
    echo "-- NCCL ring, ${dtype} gradients"
    job="$(gpu_submit --device "${1:-cuda}" --workers 1 --steps 300 \
      --grad-dtype "${dtype}")" || return 1
    gpu_finish "${job}" "the ${dtype} NCCL job" 0 || return 1
    if [[ "${1:-cuda}" == cuda ]]; then
      "${G}" status "${job}" | grep -q "^ring: *nccl.*${dtype} gradients" ||
        gpu_fail "the ${dtype} job did not use the NCCL ring in ${dtype}" ||
        return 1
    fi
  done
}

# Two ranks on the two workers (both on cuda:0 in the GPU cluster) on the
# host-staged TCP ring, on the PS from step 100 to 200.
gpu_job_two_ranks() {  # [device]
  local job
  echo "-- 2 ranks, host-staged TCP ring, PS from step 100 to 200"
  job="$(gpu_submit --device "${1:-cuda}" --workers 2 --ring-backend tcp \
    --steps 300 --switch-at 100:ps --switch-at 200:ring)" || return 1
  gpu_finish "${job}" "the 2-rank host-staged job" 2
}
