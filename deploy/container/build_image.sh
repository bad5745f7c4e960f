#!/usr/bin/env bash
# A container image of gradsync built from Debian packages alone, pulling no
# base image: mmdebstrap makes a minimal Debian 12 root (--variant=apt) from
# the Debian mirror, installs the gradsync .deb into it (apt resolves its
# Depends), trims documentation, and writes it as a tarball; podman or
# docker then imports the tarball as an image. The image runs nothing by
# default: the Kubernetes manifests (deploy/k8s) name each daemon.
#
#   deploy/container/build_image.sh DEB [OUT.tar]          # the root tarball
#   podman import --change 'CMD ["/usr/bin/gradsync", "--help"]' \
#     OUT.tar localhost/gradsync:VERSION                    # or docker import
#   deploy/container/build_image.sh --import podman DEB     # both steps
#
# With GRADSYNC_HOST_CUDA=1, the libraries the package's binaries load from
# this host's /usr/local/cuda (libcudart, libcublas, libcublasLt, libnccl
# for a CUDA build, about 800 MB) are copied into the image's
# /usr/local/cuda/lib; a package from a CUDA build does not start without
# them, and Debian has none of them.
# Needs root (or mmdebstrap's unshare mode) and network access to the
# mirror (GRADSYNC_DEBIAN_MIRROR, default http://deb.debian.org/debian).
set -euo pipefail

usage="usage: build_image.sh [--import podman|docker] DEB [OUT.tar]"
importer=
if [[ "${1:-}" == --import ]]; then
  importer=${2:?$usage}
  shift 2
fi
deb=${1:?$usage}
mirror=${GRADSYNC_DEBIAN_MIRROR:-http://deb.debian.org/debian}
die() {
  echo "build_image: $*" >&2
  exit 1
}
case "$importer" in
  "" | podman | docker) ;;
  *) die "--import takes podman or docker, not '$importer'" ;;
esac
[[ -f "$deb" ]] || die "$deb does not exist; build it with cpack -G DEB (docs/deploy.md)"
command -v mmdebstrap >/dev/null 2>&1 ||
  die "mmdebstrap is missing; apt-get install mmdebstrap"
if [[ -n "$importer" ]]; then
  command -v "$importer" >/dev/null 2>&1 || die "$importer is not installed"
fi
version=$(dpkg-deb --field "$deb" Version)
out=${2:-gradsync-$version-rootfs.tar}

work=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$deb" "$work/gradsync.deb"
mkdir -p "$work/cuda"
if [[ "${GRADSYNC_HOST_CUDA:-0}" == 1 ]]; then
  dpkg-deb -x "$deb" "$work/unpacked"
  while read -r lib path; do
    cp -L "$path" "$work/cuda/$lib"
  done < <(ldd "$work"/unpacked/usr/bin/* 2>/dev/null |
    awk '$3 ~ /^\/usr\/local\/cuda\// {print $1, $3}' | sort -u)
  rm -rf "$work/unpacked"
  [[ -n "$(ls "$work/cuda")" ]] ||
    die "GRADSYNC_HOST_CUDA=1 but the package's binaries load nothing from /usr/local/cuda"
fi

# The hooks' "$1" is mmdebstrap's: the root being built.
# shellcheck disable=SC2016
mmdebstrap --variant=apt --format=tar \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --customize-hook="copy-in $work/gradsync.deb /tmp" \
  --customize-hook='mkdir -p "$1/usr/local/cuda/lib"' \
  --customize-hook="sync-in $work/cuda /usr/local/cuda/lib" \
  --customize-hook='chroot "$1" apt-get install -y --no-install-recommends /tmp/gradsync.deb' \
  --customize-hook='chroot "$1" /usr/bin/gradsync --version' \
  --customize-hook='rm -f "$1/tmp/gradsync.deb"; rm -rf "$1"/var/lib/apt/lists/*' \
  bookworm "$out" "$mirror"
echo "build_image: wrote $out"

if [[ -n "$importer" ]]; then
  "$importer" import --change 'CMD ["/usr/bin/gradsync", "--help"]' \
    "$out" "localhost/gradsync:$version"
  echo "build_image: imported localhost/gradsync:$version with $importer"
fi
