#!/usr/bin/env bash
# Installs the Debian 12 packages gradsync builds and runs with, if missing.
# Idempotent and silent when everything is already there.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  # the linker CMakeLists.txt prefers: 4-5x faster than ld.bfd here
  lld
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libgtest-dev libgmock-dev
  # credentials, job secrets and their HMACs (security/secret.h)
  libssl-dev
  # the coordinator's state database (--state-db), which outlives restarts
  libsqlite3-dev
  # every daemon's Prometheus /metrics endpoint (observability/metrics_http.h)
  libcpp-httplib-dev
  libopenblas-dev zlib1g-dev dataset-fashion-mnist
  # the bottleneck lab (gradsync lab): namespaces, veths and tc; its plots
  iproute2 python3-matplotlib
  # the CLI's man pages, made from its --help at build time (cli/)
  help2man
  # The GPU bundle (deploy/gpu/bundle.sh) and its stripped-chroot test.
  patchelf busybox-static bash-static
  # The Debian package (cpack -G DEB: dpkg-shlibdeps, file) and the checks of
  # deploy/ (shellcheck, yamllint, python3-yaml); mmdebstrap makes the
  # throwaway root of scripts/deploy/deb_chroot_test.sh and the container
  # image of deploy/container.
  dpkg-dev file shellcheck yamllint python3-yaml mmdebstrap
  # systemd-analyze verify checks the shipped units (tests/deploy)
  systemd
  # The PyTorch front end (python/gradsync) and its examples and tests:
  # Debian's torch 1.13 (CPU) and torchvision.
  python3-torch python3-torchvision
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$p")
  fi
done
# promtool, which checks the daemons' /metrics text in the tests, comes out
# of Debian's prometheus package without installing it (that would add a
# Prometheus service to the machine).
PROMTOOL=/usr/local/bin/promtool
[ ${#missing[@]} -eq 0 ] && [ -x "$PROMTOOL" ] && exit 0

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  echo "gradsync: installing ${missing[*]}"
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ! -x "$PROMTOOL" ]; then
  echo "gradsync: extracting promtool from Debian's prometheus package"
  tmp=$(mktemp -d)
  chmod 755 "$tmp"  # apt-get download runs as _apt
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && apt-get download -qq prometheus >/dev/null)
  dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x"
  $SUDO install -m 0755 "$tmp/x/usr/bin/promtool" "$PROMTOOL"
fi
