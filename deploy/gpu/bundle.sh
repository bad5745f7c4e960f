#!/usr/bin/env bash
# Builds the self-contained GPU bundle: everything deploy/gpu/run_bundle.sh
# needs to check gradsync on a lent GPU machine (Hopper, CUDA 13 driver)
# that has none of gradsync's build or runtime dependencies. One folder of
# at most 60 MiB (checked), small enough to travel with the working tree:
#
#   gpu-bundle/run_bundle.sh    the runner (see its header)
#   gpu-bundle/README.md        what is inside, built from which commit
#   gpu-bundle/payload.tar.gz   bin/      gradsync, the daemons, gradsync-nccl-raw
#                               tests/    the test binaries with GPU cases
#                               lib/      every shared library they need but
#                                         NCCL, cuBLAS and the driver, down to
#                                         the C library and its loader
#                               data/     Fashion-MNIST: the first 10,000
#                                         training images and the whole test set
#                               scripts/  check_job.sh, gpu_checks.sh,
#                                         gpu_compare.py, ddp_mlp.py,
#                                         torch_pip_step.sh, torch_preflight.py
#                               python/   the gradsync package with
#                                         libgradsync_c.so, and NEEDS (the
#                                         newest GLIBC, GLIBCXX and CXXABI
#                                         versions it and its libraries need)
#                               pylib/    links into lib/ to the libraries
#                                         libgradsync_c.so needs but the C and
#                                         C++ runtimes (the torch process's own)
#                               examples/torch/  mlp.py, fashion_mnist.py
#
# The binaries are stripped, their loader (PT_INTERP) set to
# /tmp/gradsync-bundle/lib/ld-linux-x86-64.so.2, where the runner unpacks
# the payload, and their DT_RPATH to $ORIGIN/../lib: an RPATH (not a
# RUNPATH) reaches the libraries' own dependencies too and comes before
# LD_LIBRARY_PATH; and each binary loads the C and C++ runtimes itself, so
# that the machine's NCCL and cuBLAS (whose RUNPATH hides our RPATH) find
# them loaded. No library of the GPU machine's distribution is mixed in. NCCL, cuBLAS and libcuda come from the machine (the runner finds
# pip's nvidia-nccl-cu13 and nvidia-cublas beside PyTorch); the CUDA
# runtime is carried.
#
#   deploy/gpu/bundle.sh                  # Release build in build-bundle/ (sm_90), then gpu-bundle/
#   deploy/gpu/bundle.sh --from-build build --out /tmp/b   # from an existing build (the size test)
#   deploy/gpu/bundle.sh --check-size gpu-bundle --max-mib 60
#
# Options: --build-dir DIR (build-bundle), --out DIR (gpu-bundle),
# --cuda-archs LIST (90), --max-mib N (60), --jobs N (nproc). Installs the
# Debian packages it needs (patchelf, dataset-fashion-mnist) with apt when
# they are missing. Exit status 0, or 1 with what failed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
readonly BUNDLE_ROOT=/tmp/gradsync-bundle
BUILD_DIR="${ROOT}/build-bundle"
OUT="${ROOT}/gpu-bundle"
FROM_BUILD=""
CHECK_ONLY=""
CUDA_ARCHS=90
MAX_MIB=60
JOBS="$(nproc)"
DATASET=/usr/share/datasets/fashion-mnist
TRAIN_SUBSET=10000

BINARIES=(
  cli/gradsync
  server/coordinator/gradsync-coordinator
  worker/gradsync-worker
  server/ps/gradsync-ps
  deploy/gpu/gradsync-nccl-raw
)
# The test binaries with GPU cases (gpu_checks.sh's gpu_test_cases).
TESTS=(
  tests/gpu/gpu_model_test
  tests/gpu/gpu_trainer_test
  tests/gpu/gpu_nccl_trainer_test
  tests/daemon/job_runner_test
  tests/cli/cli_bench_rank_test
  tests/nccl/nccl_communicator_test
)
# What the GPU machine provides; everything else that ldd lists is carried.
NOT_CARRIED='^(linux-vdso\.so|libnccl\.so|libcublas\.so|libcublasLt\.so|libcuda\.so)'

die() {
  echo "bundle.sh: FAILED: $*" >&2
  exit 1
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 2
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) BUILD_DIR="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --from-build) FROM_BUILD="$2"; shift 2 ;;
    --check-size) CHECK_ONLY="$2"; shift 2 ;;
    --cuda-archs) CUDA_ARCHS="$2"; shift 2 ;;
    --max-mib) MAX_MIB="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    -h | --help) usage ;;
    *) echo "bundle.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ "${MAX_MIB}" =~ ^[0-9]+$ ]] || die "--max-mib needs a whole number of MiB"

# Fails unless folder $1 holds at most MAX_MIB MiB (apparent sizes, as
# they travel), naming its largest files when it does not fit.
check_size() {  # folder [name to report it by]
  local bytes limit name="${2:-$1}"
  [[ -d "$1" ]] || die "$1 is not a folder"
  bytes="$(du -sb "$1" | cut -f1)"
  limit=$((MAX_MIB * 1024 * 1024))
  if ((bytes > limit)); then
    echo "bundle.sh: ${name} is $((bytes / 1024 / 1024)) MiB ($bytes bytes), over the ${MAX_MIB} MiB limit; its largest files:" >&2
    find "$1" -type f -printf '%s %p\n' | sort -rn | head -n 5 >&2
    exit 1
  fi
  echo "bundle.sh: ${name}: $((bytes / 1024 / 1024)) MiB ($bytes bytes), within ${MAX_MIB} MiB"
}

if [[ -n "${CHECK_ONLY}" ]]; then
  check_size "${CHECK_ONLY}"
  exit 0
fi

# Installs Debian packages that are missing (as scripts/install_deps.sh).
ensure_packages() {
  local missing=() p sudo=""
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
      missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  echo "bundle.sh: installing ${missing[*]}"
  [[ "$(id -u)" -ne 0 ]] && sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  ${sudo} apt-get -o DPkg::Lock::Timeout=300 update -qq
  ${sudo} apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
}

ensure_packages patchelf dataset-fashion-mnist

if [[ -z "${FROM_BUILD}" ]]; then
  [[ -x /usr/local/cuda/bin/nvcc ]] ||
    die "no CUDA toolkit at /usr/local/cuda (nvcc): the bundle's GPU code needs it"
  echo "== configure ${BUILD_DIR} (Release, CUDA archs ${CUDA_ARCHS})"
  cmake -S "${ROOT}" -B "${BUILD_DIR}" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS}" \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
    -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache >/dev/null
  grep -q 'gpu_model_test' "${BUILD_DIR}/build.ninja" ||
    die "CUDA kernels were not configured (see ${BUILD_DIR}/CMakeCache.txt)"
  grep -q 'gradsync-nccl-raw' "${BUILD_DIR}/build.ninja" ||
    die "the NCCL backend was not configured (NCCL not found under /usr/local/cuda)"
  echo "== build"
  targets=()
  for path in "${BINARIES[@]}" "${TESTS[@]}"; do targets+=("$(basename "${path}")"); done
  # ccache with paths relative to the checkout: another checkout of the
  # same commit (the integrator's, a later session's) hits the same entries.
  CCACHE_BASEDIR="${CCACHE_BASEDIR:-${ROOT}}" CCACHE_NOHASHDIR=1 \
    cmake --build "${BUILD_DIR}" -j "${JOBS}" --target "${targets[@]}"
  FROM_BUILD="${BUILD_DIR}"
fi

FROM_BUILD="$(cd "${FROM_BUILD}" && pwd)"
stage="$(mktemp -d "${TMPDIR:-/tmp}/gradsync-bundle-stage.XXXXXX")"
trap 'rm -rf "${stage}"' EXIT
payload="${stage}/payload"
mkdir -p "${payload}"/{bin,tests,lib,pylib,python,examples/torch,data/fashion-mnist,scripts}

echo "== binaries from ${FROM_BUILD}"
for path in "${BINARIES[@]}" "${TESTS[@]}"; do
  [[ -x "${FROM_BUILD}/${path}" ]] ||
    die "${FROM_BUILD}/${path} is missing (a build with CUDA kernels and NCCL makes it)"
  case "${path}" in
    tests/*) dest="${payload}/tests" ;;
    *) dest="${payload}/bin" ;;
  esac
  strip --strip-all -o "${dest}/$(basename "${path}")" "${FROM_BUILD}/${path}"
done

echo "== libraries (ldd), but NCCL, cuBLAS and the driver"
while read -r name path; do
  [[ "${path}" == "not found" ]] &&
    die "ldd finds no ${name} for the bundle's binaries"
  cp -L "${path}" "${payload}/lib/${name}"
done < <(
  for binary in "${payload}"/bin/* "${payload}"/tests/*; do
    ldd "${binary}"
  done | awk '
    $2 == "=>" && $3 == "not" { print $1, "not found"; next }
    $2 == "=>" { print $1, $3; next }
    $1 ~ /^\/.*ld-linux/ { n = split($1, p, "/"); print p[n], $1 }' |
    grep -Ev "${NOT_CARRIED}" | sort -u
)
[[ -f "${payload}/lib/ld-linux-x86-64.so.2" && -f "${payload}/lib/libc.so.6" ]] ||
  die "ldd listed no loader or C library"
glibc="$("${payload}/lib/libc.so.6" | head -n 1 | sed 's/ stable release version.*//')"

echo "== loader ${BUNDLE_ROOT}/lib/ld-linux-x86-64.so.2, RPATH \$ORIGIN/../lib"
# The machine's NCCL and cuBLAS carry a RUNPATH, which makes the loader
# skip our RPATH for their own dependencies (libstdc++, librt, ...): it
# would take the machine's, built for another C library. A library already
# loaded is reused by its name, so every binary loads the C and C++
# runtimes itself, from the bundle, before those dependencies are looked up.
RUNTIMES=(libstdc++.so.6 libgcc_s.so.1 libm.so.6 libdl.so.2 libpthread.so.0
  librt.so.1)
for binary in "${payload}"/bin/* "${payload}"/tests/*; do
  needed="$(readelf -d "${binary}" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p')"
  add=()
  for lib in "${RUNTIMES[@]}"; do
    [[ -f "${payload}/lib/${lib}" ]] || die "ldd listed no ${lib}"
    grep -qxF "${lib}" <<<"${needed}" || add+=(--add-needed "${lib}")
  done
  # Two calls: patchelf 0.14 garbles the RPATH when one call also adds
  # NEEDED entries. Then read back what the loader will see.
  [[ ${#add[@]} -eq 0 ]] || patchelf "${add[@]}" "${binary}"
  patchelf --set-interpreter "${BUNDLE_ROOT}/lib/ld-linux-x86-64.so.2" \
    --force-rpath --set-rpath '$ORIGIN/../lib' "${binary}"
  readelf -d "${binary}" | grep -q '(RPATH) *Library rpath: \[\$ORIGIN/\.\./lib\]' ||
    die "$(basename "${binary}"): its RPATH did not come out as \$ORIGIN/../lib"
  readelf -l "${binary}" | grep -qF "interpreter: ${BUNDLE_ROOT}/lib/ld-linux-x86-64.so.2]" ||
    die "$(basename "${binary}"): its loader did not come out as ${BUNDLE_ROOT}/lib/ld-linux-x86-64.so.2"
done

echo "== the Python package, for the machine's own python and torch"
# libgradsync_c.so is loaded into the torch process: it runs on the
# machine's C library and on the C++ runtime torch loaded, so pylib/ holds
# everything else it needs (gRPC, protobuf, Abseil, OpenSSL: links into
# lib/) and its RPATH points there. Carrying glibc's parts there would mix
# two C libraries in one process. NEEDS records the newest symbol versions
# of the C and C++ runtimes it and those libraries need, which the torch
# step's preflight compares with the machine's.
capi="${FROM_BUILD}/python/gradsync/libgradsync_c.so"
[[ -f "${capi}" ]] || die "${capi} is missing (the gradsync_python target makes it)"
cp -r "${FROM_BUILD}/python/gradsync" "${payload}/python/"
find "${payload}/python" -name '__pycache__' -prune -exec rm -rf {} +
strip --strip-unneeded "${payload}/python/gradsync/libgradsync_c.so"
PY_RUNTIMES='^(libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libutil\.so|ld-linux|libstdc\+\+\.so|libgcc_s\.so|linux-vdso)'
while read -r name path; do
  [[ "${path}" == "not found" ]] && die "ldd finds no ${name} for libgradsync_c.so"
  [[ -f "${payload}/lib/${name}" ]] || cp -L "${path}" "${payload}/lib/${name}"
  ln -sf "../lib/${name}" "${payload}/pylib/${name}"
done < <(ldd "${capi}" | awk '
    $2 == "=>" && $3 == "not" { print $1, "not found"; next }
    $2 == "=>" { print $1, $3 }' | grep -Ev "${PY_RUNTIMES}" | sort -u)
patchelf --force-rpath --set-rpath '$ORIGIN/../../pylib' \
  "${payload}/python/gradsync/libgradsync_c.so"
readelf -d "${payload}/python/gradsync/libgradsync_c.so" |
  grep -q '(RPATH) *Library rpath: \[\$ORIGIN/\.\./\.\./pylib\]' ||
  die "libgradsync_c.so: its RPATH did not come out as \$ORIGIN/../../pylib"
newest() {  # PREFIX: the newest PREFIX_x.y version the package's libraries need
  for lib in "${payload}/python/gradsync/libgradsync_c.so" "${payload}"/pylib/*; do
    objdump -T "$(readlink -f "${lib}")"
  done | grep -o "$1_[0-9][0-9.]*" | sed "s/^$1_//" | sort -uV | tail -n 1
}
{
  echo "GLIBC $(newest GLIBC)"
  echo "GLIBCXX $(newest GLIBCXX)"
  echo "CXXABI $(newest CXXABI)"
} >"${payload}/python/NEEDS"
grep -q '^GLIBC [0-9]' "${payload}/python/NEEDS" ||
  die "could not read the GLIBC versions libgradsync_c.so needs (objdump)"
cp "${ROOT}/examples/torch/mlp.py" "${ROOT}/examples/torch/fashion_mnist.py" \
  "${payload}/examples/torch/"

echo "== Fashion-MNIST: the first ${TRAIN_SUBSET} training images, the test set"
# The subset keeps the IDX layout: a big-endian header (magic, count, and
# rows and columns for images), then the first examples' bytes.
be32() { printf "\\x$(printf %02x $(($1 >> 24 & 255)))\\x$(printf %02x $(($1 >> 16 & 255)))\\x$(printf %02x $(($1 >> 8 & 255)))\\x$(printf %02x $(($1 & 255)))"; }
idx_subset() {  # source.gz header_bytes example_bytes dest.gz header_fields...
  local raw="${stage}/idx"
  gzip -dc "$1" >"${raw}"
  {
    for field in "${@:5}"; do be32 "${field}"; done
    dd if="${raw}" iflag=skip_bytes,count_bytes skip="$2" \
      count=$((TRAIN_SUBSET * $3)) status=none
  } | gzip -n >"$4"
  rm -f "${raw}"
}
idx_subset "${DATASET}/train-images-idx3-ubyte.gz" 16 784 \
  "${payload}/data/fashion-mnist/train-images-idx3-ubyte.gz" \
  0x803 "${TRAIN_SUBSET}" 28 28
idx_subset "${DATASET}/train-labels-idx1-ubyte.gz" 8 1 \
  "${payload}/data/fashion-mnist/train-labels-idx1-ubyte.gz" \
  0x801 "${TRAIN_SUBSET}"
cp "${DATASET}"/t10k-{images-idx3,labels-idx1}-ubyte.gz "${payload}/data/fashion-mnist/"

echo "== scripts"
cp "${ROOT}/scripts/check_job.sh" "${ROOT}/deploy/gpu/gpu_checks.sh" \
  "${ROOT}/deploy/gpu/gpu_compare.py" "${ROOT}/scripts/bench/ddp_mlp.py" \
  "${ROOT}/deploy/gpu/torch_pip_step.sh" "${ROOT}/deploy/gpu/torch_preflight.py" \
  "${payload}/scripts/"

commit="$(git -C "${ROOT}" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
[[ -n "$(git -C "${ROOT}" status --porcelain --untracked-files=no 2>/dev/null)" ]] &&
  commit+="+uncommitted"
build_type="$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "${FROM_BUILD}/CMakeCache.txt")"
# What nvcc was asked for, e.g. arch=compute_90,code=[compute_90,sm_90].
archs="$({ grep -o -- '--generate-code=arch=[^ ]*' "${FROM_BUILD}/build.ninja" || true; } |
  sort -u | sed 's/--generate-code=//' | paste -sd ' ')"
{
  echo "gradsync GPU bundle, commit ${commit}, built $(date -u '+%Y-%m-%d %H:%M UTC') (${build_type:-?}; CUDA code ${archs:-none})"
  echo
  echo "Unpacked by run_bundle.sh into ${BUNDLE_ROOT}; see its header for what it runs."
  echo
  echo "- C library: ${glibc}, carried with its loader"
  echo "- data: Fashion-MNIST in IDX form (gzip): the first ${TRAIN_SUBSET} of the 60,000 training images and their labels, and the whole test set (10,000)"
  echo "- not carried: NCCL, cuBLAS, libcuda (the GPU machine's own; the runner says which it used)"
  echo "- python/gradsync: the torch package for the machine's python; libgradsync_c.so needs $(tr '\n' ' ' <"${payload}/python/NEEDS")(C and C++ runtimes: the machine's)"
  echo
  echo "Contents (bytes, stripped):"
  echo
  (cd "${payload}" && find . -type f -printf '%s %P\n' | sort -k2 | sed 's/^/    /')
} >"${stage}/BUNDLE.md"
mv "${stage}/BUNDLE.md" "${payload}/BUNDLE.md"

echo "== pack"
out_stage="${stage}/out"
mkdir -p "${out_stage}"
tar -C "${payload}" -czf "${out_stage}/payload.tar.gz" .
cp "${ROOT}/deploy/gpu/run_bundle.sh" "${out_stage}/"
cp "${payload}/BUNDLE.md" "${out_stage}/README.md"
check_size "${out_stage}" "the bundle for ${OUT}"
rm -rf "${OUT}"
mkdir -p "$(dirname "${OUT}")"
mv "${out_stage}" "${OUT}"
echo "bundle.sh: ${OUT} ($(du -sb "${payload}" | cut -f1) bytes unpacked)"
if [[ "${OUT}" == "${ROOT}"/* ]] && git -C "${ROOT}" rev-parse >/dev/null 2>&1; then
  tracked="$(git -C "${ROOT}" ls-files -z | (cd "${ROOT}" && xargs -0 du -cb 2>/dev/null) | awk 'END { print $1 }')"
  echo "bundle.sh: with the tracked tree (${tracked} bytes) a device call carries $(((tracked + $(du -sb "${OUT}" | cut -f1)) / 1024 / 1024)) MiB of its 64"
fi
