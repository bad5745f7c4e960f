#!/usr/bin/env bash
# The GPU bundle fits what travels to a lent GPU machine: deploy/gpu/
# bundle.sh --from-build assembles it from this build's binaries (stripped,
# as the Release bundle's are; the binaries and the libraries they pull in
# are what its size is made of) and fails above 60 MiB. Then the size check
# itself must fail on a limit below the bundle's size, so that this test
# cannot pass with a check that never fires. The bundle stays in OUT for
# gpu_bundle_chroot_test.sh.
#
#   tests/deploy/gpu_bundle_size_test.sh BUILD_DIR OUT
set -euo pipefail

build=${1:?usage: gpu_bundle_size_test.sh BUILD_DIR OUT}
out=${2:?usage: gpu_bundle_size_test.sh BUILD_DIR OUT}
src=$(cd "$(dirname "$0")/../.." && pwd)
err=$(mktemp)
trap 'rm -f "$err"' EXIT

fail() {
  echo "gpu_bundle_size_test: FAILED: $*" >&2
  exit 1
}

"$src/deploy/gpu/bundle.sh" --from-build "$build" --out "$out" --max-mib 60 ||
  fail "bundle.sh could not assemble a bundle within 60 MiB (see above)"
for file in run_bundle.sh README.md payload.tar.gz; do
  [[ -s "$out/$file" ]] || fail "the bundle has no $file"
done
listing=$(tar -tzf "$out/payload.tar.gz")
for file in bin/gradsync bin/gradsync-worker bin/gradsync-nccl-raw \
  tests/gpu_model_test tests/nccl_communicator_test \
  lib/ld-linux-x86-64.so.2 lib/libc.so.6 lib/libgrpc++.so.1.51 \
  lib/libopenblas.so.0 lib/libcudart.so.13 \
  data/fashion-mnist/train-images-idx3-ubyte.gz scripts/check_job.sh \
  python/gradsync/libgradsync_c.so python/gradsync/torch/compat.py \
  python/NEEDS pylib/libgrpc++.so.1.51 examples/torch/mlp.py \
  scripts/torch_pip_step.sh scripts/torch_preflight.py; do
  grep -qx "./$file" <<<"$listing" || fail "the payload has no $file"
done
# The package runs on the machine's C and C++ runtimes, never the bundle's.
if grep -E '^\./pylib/(libc\.so|libm\.so|libpthread|libstdc\+\+|libgcc_s|ld-linux)' <<<"$listing"; then
  fail "pylib/ carries a C or C++ runtime (the torch process has its own)"
fi
if grep -E 'libnccl|libcublas|libcuda\.so' <<<"$listing"; then
  fail "the payload carries NCCL, cuBLAS or the driver (the GPU machine's own are used)"
fi

if "$src/deploy/gpu/bundle.sh" --check-size "$out" --max-mib 1 2>"$err"; then
  fail "the size check passed a bundle over a 1 MiB limit"
fi
grep -q "over the 1 MiB limit" "$err" ||
  fail "the size check failed without saying why: $(cat "$err")"
echo "gpu_bundle_size_test: OK"
