#!/usr/bin/env bash
# The Debian package installed for real, in a throwaway Debian 12 root made
# by mmdebstrap (about 150 MB downloaded from the Debian mirror; a few
# minutes): dpkg -i, then apt-get -f install for the Depends it declares
# (so a missing Depends shows as a binary that cannot start), then checks
#   - the gradsync system user and its state directory /var/lib/gradsync;
#   - every binary's --version from /usr/bin;
#   - dpkg -r: binaries and units gone, the conffile, the state directory
#     and the user kept;
#   - dpkg -P: the conffile and the state directory gone too, and nothing
#     named gradsync left but the user (kept on purpose: deploy/debian/postrm).
# A package from a CUDA build needs CUDA's libraries (libcudart, libcublas,
# libcublasLt) and NCCL under /usr/local/cuda/lib, which NVIDIA's installer
# provides and no Debian package does: the ones the binaries load are
# copied into the root from this host, as that installer would put them.
# Needs root and mmdebstrap. Not part of ctest (network, minutes);
# tests/deploy/deb_package_test.sh is its quick counterpart.
#
#   scripts/deploy/deb_chroot_test.sh PATH/TO/gradsync_<version>_amd64.deb [MIRROR]
set -euo pipefail

deb=${1:?usage: deb_chroot_test.sh DEB [MIRROR]}
mirror=${2:-http://deb.debian.org/debian}
die() {
  echo "deb_chroot_test: FAILED: $*" >&2
  exit 1
}
[[ -f "$deb" ]] || die "$deb does not exist; build it with cpack -G DEB in the build directory"
[[ $(id -u) -eq 0 ]] || die "run it as root (mmdebstrap's root mode and chroot need it)"
command -v mmdebstrap >/dev/null 2>&1 ||
  die "mmdebstrap is missing; apt-get install mmdebstrap (scripts/install_deps.sh)"

work=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-deb-chroot.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$deb" "$work/gradsync.deb"
version=$(dpkg-deb --field "$deb" Version)

# The CUDA libraries the binaries load from /usr/local/cuda, if any
# (libcudart, libcublas, libcublasLt, libnccl for a CUDA build: about
# 800 MB), as this host's loader resolves them.
mkdir -p "$work/cuda"
dpkg-deb -x "$deb" "$work/unpacked"
while read -r lib path; do
  cp -L "$path" "$work/cuda/$lib"
  echo "deb_chroot_test: copying this host's $path into the root's /usr/local/cuda/lib"
done < <(ldd "$work"/unpacked/usr/bin/* 2>/dev/null |
  awk '$3 ~ /^\/usr\/local\/cuda\// {print $1, $3}' | sort -u)

cat >"$work/check.sh" <<'CHECK'
#!/bin/sh
# Runs inside the root, as root.
set -eu
fail() { echo "deb_chroot_test: FAILED (in the root): $*" >&2; exit 1; }
version=$1
if ls /tmp/cuda/*.so* >/dev/null 2>&1; then
  mkdir -p /usr/local/cuda/lib && cp /tmp/cuda/* /usr/local/cuda/lib/
fi
export DEBIAN_FRONTEND=noninteractive
echo "== dpkg -i"
if ! dpkg -i /tmp/gradsync.deb; then
  echo "== apt-get -f install (the Depends dpkg -i lacked)"
  apt-get -f install -y --no-install-recommends
fi
dpkg-query -W -f='${Status}\n' gradsync | grep -qx "install ok installed" ||
  fail "gradsync is not installed"
getent passwd gradsync >/dev/null || fail "no gradsync user"
[ "$(getent passwd gradsync | cut -d: -f6)" = /var/lib/gradsync ] ||
  fail "the gradsync user's home is not /var/lib/gradsync"
[ "$(stat -c '%U %a' /var/lib/gradsync)" = "gradsync 700" ] ||
  fail "/var/lib/gradsync is $(stat -c '%U %a' /var/lib/gradsync), not gradsync 700"
for binary in gradsync gradsync-coordinator gradsync-worker gradsync-ps \
  gradsync-store gradsync-ps-bench; do
  out=$("/usr/bin/$binary" --version 2>&1) || fail "$binary --version: $out"
  case "$out" in *"$version"*) ;; *) fail "$binary --version: $out" ;; esac
  echo "$binary --version: $out" | head -1
done
echo "# edited by the test" >>/etc/default/gradsync
touch /var/lib/gradsync/coordinator.db

echo "== dpkg -r"
dpkg -r gradsync
for path in /usr/bin/gradsync /usr/lib/systemd/system/gradsync-worker.service; do
  [ ! -e "$path" ] || fail "$path is left after dpkg -r"
done
[ -f /etc/default/gradsync ] || fail "dpkg -r removed the conffile"
[ -f /var/lib/gradsync/coordinator.db ] || fail "dpkg -r removed the state"
getent passwd gradsync >/dev/null || fail "dpkg -r removed the user"

echo "== dpkg -P"
dpkg -P gradsync
[ ! -e /etc/default/gradsync ] || fail "/etc/default/gradsync is left after purge"
[ ! -e /var/lib/gradsync ] || fail "/var/lib/gradsync is left after purge"
! dpkg-query -W gradsync 2>/dev/null | grep -q . ||
  fail "dpkg still knows gradsync after purge"
left=$(find / -xdev \( -path /proc -o -path /tmp -o -path /sys \) -prune -o \
  -name '*gradsync*' -print)
[ -z "$left" ] || fail "left after purge: $left"
getent passwd gradsync >/dev/null &&
  echo "left after purge, on purpose: the gradsync user ($(getent passwd gradsync))"
echo "deb_chroot_test: in-root checks OK"
CHECK

# shellcheck disable=SC2016  # the hooks' $1 is mmdebstrap's, the root.
nice -n 10 mmdebstrap --variant=apt --format=directory \
  --customize-hook='mkdir -p "$1/tmp/cuda"' \
  --customize-hook="copy-in $work/gradsync.deb $work/check.sh /tmp" \
  --customize-hook="sync-in $work/cuda /tmp/cuda" \
  --customize-hook="chroot \"\$1\" sh /tmp/check.sh $version" \
  bookworm "$work/root" "$mirror" 2>&1 | tee "$work/mmdebstrap.log"
grep -q "deb_chroot_test: in-root checks OK" "$work/mmdebstrap.log" ||
  die "the checks in the root did not pass (see above)"
echo "deb_chroot_test: OK ($(basename "$deb"))"
