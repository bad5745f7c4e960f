#!/usr/bin/env bash
# The GPU bundle runs where none of gradsync's dependencies are: its runner
# (run_bundle.sh --cpu) in a chroot that holds only a static busybox, a
# static bash, the bundle and, standing in for what the GPU image gives,
# NCCL and cuBLAS (this host's, read-only, in a folder the runner is told
# of). There is no /lib, /usr/lib or ld.so.cache: the daemons, the CLI and
# the jobs can only run on the libraries, C library and loader that the
# bundle carries. The runner unpacks the payload, starts a coordinator, two
# workers and a PS on cpu devices, runs the ring all-reduce bench and three
# CPU jobs on the bundle's Fashion-MNIST subset (switched to the PS and back
# by their specs and at runtime, one of two ranks), each checked with
# check_job.sh, and writes its summary.
#
# Runs as root (unshare, mount, chroot) in private mount and PID
# namespaces, so that every process it starts ends with it. Installs
# busybox-static and bash-static with apt when they are missing.
#
#   tests/deploy/gpu_bundle_chroot_test.sh BUNDLE_DIR
set -euo pipefail

bundle=$(cd "${1:?usage: gpu_bundle_chroot_test.sh BUNDLE_DIR}" && pwd)
# The GPU image's NCCL and cuBLAS, as the binaries need them to start.
image_libs=${GRADSYNC_TEST_NVIDIA_LIBS:-/usr/local/cuda/lib}

fail() {
  echo "gpu_bundle_chroot_test: FAILED: $*" >&2
  exit 1
}

[[ "$(id -u)" -eq 0 ]] || fail "needs root (unshare, mount, chroot)"
[[ -f "$bundle/payload.tar.gz" ]] || fail "$bundle holds no bundle"
[[ -f "$image_libs/libnccl.so.2" && -f "$image_libs/libcublas.so.13" ]] ||
  fail "no NCCL and cuBLAS in $image_libs to stand in for the GPU image's"

missing=()
for p in busybox-static bash-static; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
    missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "gpu_bundle_chroot_test: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=300 update -qq
  apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

root=$(mktemp -d /tmp/gradsync-chroot.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,usr/bin,etc,tmp,proc,dev,bundle,out,opt/image-libs}
chmod 1777 "$root/tmp"
cp /bin/busybox "$root/bin/busybox"
cp /bin/bash-static "$root/bin/bash"
for applet in $("$root/bin/busybox" --list); do
  [[ -e "$root/bin/$applet" ]] || ln -s busybox "$root/bin/$applet"
done
ln -s ../../bin/busybox "$root/usr/bin/env"
echo "127.0.0.1 localhost" >"$root/etc/hosts"
echo "hosts: files dns" >"$root/etc/nsswitch.conf"
echo "root:x:0:0:root:/tmp:/bin/sh" >"$root/etc/passwd"
mknod -m 666 "$root/dev/null" c 1 3
mknod -m 666 "$root/dev/zero" c 1 5
mknod -m 666 "$root/dev/random" c 1 8
mknod -m 666 "$root/dev/urandom" c 1 9
# Nothing of the host's libraries is there.
for dir in lib lib64 usr/lib usr/local etc/ld.so.cache; do
  [[ ! -e "$root/$dir" ]] || fail "the chroot has /$dir"
done

status=0
unshare --mount --pid --fork --kill-child -- bash -c '
  set -e
  root=$1
  mount --make-rprivate /
  mount -t proc proc "$root/proc"
  mount --bind "$2" "$root/bundle"
  mount -o remount,bind,ro "$root/bundle"
  mount --bind "$3" "$root/opt/image-libs"
  mount -o remount,bind,ro "$root/opt/image-libs"
  exec chroot "$root" /bin/env -i PATH=/bin HOME=/tmp OUT=/out \
    GRADSYNC_GPU_LIBS=/opt/image-libs GRADSYNC_RUN_BUDGET=300 \
    /bin/bash /bundle/run_bundle.sh --cpu
' chroot-test "$root" "$bundle" "$image_libs" || status=$?

summary="$root/out/summary.md"
[[ -s "$summary" ]] || fail "the runner wrote no summary (exit status $status)"
if [[ $status -ne 0 ]] || ! grep -q '^Overall: PASS' "$summary"; then
  cat "$summary" >&2
  mkdir -p "$root/logs" && tar -C "$root/logs" -xzf "$root/out/logs.tar.gz" &&
    tail -n 30 "$root"/logs/logs/*.log >&2
  fail "the runner failed in the stripped environment (exit status $status)"
fi
for step in env ring-bench cluster job-scripted job-2ranks job-runtime; do
  grep -q "^| $step | PASS |" "$summary" || fail "step $step did not pass"
done
# No python in the chroot: the torch-pip step skips and says why.
grep -q '^| torch-pip | SKIP | [0-9]* | no python' "$summary" ||
  fail "step torch-pip did not skip for want of python"
jobs=$(grep -c '^job-[0-9]*: steps .* each once' "$summary" || true)
[[ "$jobs" -eq 3 ]] || fail "check_job.sh passed $jobs jobs, not 3"
grep -q 'parameters bitwise equal across ranks' "$summary" ||
  fail "no 2-rank job compared its ranks' parameters"
cat "$summary"
echo "gpu_bundle_chroot_test: OK"
