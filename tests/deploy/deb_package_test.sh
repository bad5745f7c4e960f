#!/usr/bin/env bash
# The Debian package (deploy/debian), built by cpack from this build and
# checked without installing it (seconds; scripts/deploy/deb_chroot_test.sh
# installs it into a Debian chroot with dpkg -i, and purges it):
#   - gradsync_<version>_amd64.deb and gradsync-dev_<version>_amd64.deb,
#     named after the project's version;
#   - its control data: Depends from dpkg-shlibdeps, non-empty and sane,
#     adduser among them; the maintainer scripts; /etc/default/gradsync a
#     conffile;
#   - its files: every binary in /usr/bin, the units in
#     /usr/lib/systemd/system starting /usr/bin's binaries, the conffile
#     setting every variable the units expand;
#   - the unpacked binaries' --version, with this host's libraries;
#   - `systemd-analyze verify` of the packaged units (starting the unpacked
#     binaries), where systemd-analyze is installed;
#   - gradsync-dev: the CMake package, which a consumer project builds
#     against where it is unpacked (tests/deploy/package_test.sh).
# Exits 77 (ctest: skipped) when a tool cpack needs is not installed.
#
#   tests/deploy/deb_package_test.sh BUILD_DIR
set -euo pipefail

build=${1:?usage: deb_package_test.sh BUILD_DIR}
fail() {
  echo "deb_package_test: FAILED: $*" >&2
  exit 1
}
for tool in cpack dpkg-deb dpkg-shlibdeps file; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "deb_package_test: SKIPPED: $tool is not installed" \
      "(scripts/install_deps.sh installs it)"
    exit 77
  fi
done
[[ -f "$build/CPackConfig.cmake" ]] ||
  fail "$build/CPackConfig.cmake is missing; configure the build first"

work=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-deb-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' \
  "$build/CPackConfig.cmake")
[[ -n "$version" ]] || fail "no CPACK_PACKAGE_VERSION in CPackConfig.cmake"
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/out" \
  >"$work/cpack.log" 2>&1 || { cat "$work/cpack.log" >&2; fail "cpack exited non-zero"; }
deb="$work/out/gradsync_${version}_amd64.deb"
[[ -f "$deb" ]] || { ls -l "$work/out" >&2; fail "cpack did not write $(basename "$deb")"; }
dev_deb="$work/out/gradsync-dev_${version}_amd64.deb"
[[ -f "$dev_deb" ]] || { ls -l "$work/out" >&2; fail "cpack did not write $(basename "$dev_deb")"; }

# Control data.
field() { dpkg-deb --field "$deb" "$1"; }
[[ $(field Package) == gradsync ]] || fail "Package is '$(field Package)'"
[[ $(field Version) == "$version" ]] || fail "Version is '$(field Version)'"
[[ $(field Architecture) == amd64 ]] || fail "Architecture is '$(field Architecture)'"
depends=$(field Depends)
[[ -n "$depends" ]] || fail "Depends is empty"
# Each entry: a package name with an optional version constraint, or
# alternatives of such; the ones any build needs are there.
IFS=',' read -ra entries <<<"$depends"
for entry in "${entries[@]}"; do
  IFS='|' read -ra alternatives <<<"$entry"
  for alt in "${alternatives[@]}"; do
    alt=$(sed 's/^ *//; s/ *$//' <<<"$alt")
    [[ "$alt" =~ ^[a-z0-9][a-z0-9+.-]+(\ \((\>=|\<=|=|\<\<|\>\>)\ [0-9A-Za-z.+~:-]+\))?$ ]] ||
      fail "Depends has a malformed entry '$alt' in: $depends"
  done
done
# (Package names as regular expressions: gRPC's carries its soname.)
for needed in 'adduser' 'libc6' 'libstdc\+\+6' 'libsqlite3-0' 'libssl3' \
  'libgrpc\+\+1\.[0-9]+' 'libprotobuf[0-9]+'; do
  grep -qE "(^|[,|] *)$needed( |,|$)" <<<"$depends" ||
    fail "Depends lacks $needed: $depends"
done
dpkg-deb --ctrl-tarfile "$deb" | tar -t >"$work/control.list"
for script in postinst prerm postrm conffiles; do
  grep -qx "./$script" "$work/control.list" || fail "the package has no $script"
done
conffiles=$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)
[[ "$conffiles" == /etc/default/gradsync ]] ||
  fail "conffiles lists '$conffiles', not /etc/default/gradsync"

# Files.
dpkg-deb --contents "$deb" | awk '{print $NF}' >"$work/contents"
binaries=(gradsync gradsync-coordinator gradsync-worker gradsync-ps
  gradsync-store gradsync-ps-bench)
units=(gradsync-coordinator.service gradsync-worker.service gradsync-ps@.service)
for path in "${binaries[@]/#/./usr/bin/}" \
  "${units[@]/#/./usr/lib/systemd/system/}" ./etc/default/gradsync; do
  grep -qx -- "$path" "$work/contents" || fail "the package has no ${path#.}"
done
! grep -q "$work\|$build\|_CPack_Packages" "$work/contents" ||
  fail "a path of the build leaked into the package's file names"
root="$work/root"
dpkg-deb -x "$deb" "$root"
for unit in "${units[@]}"; do
  file="$root/usr/lib/systemd/system/$unit"
  grep -q '^ExecStart=/usr/bin/gradsync-' "$file" ||
    fail "$unit does not start a binary in /usr/bin: $(grep ExecStart= "$file")"
  grep -q '^EnvironmentFile=-/etc/default/gradsync$' "$file" ||
    fail "$unit does not read /etc/default/gradsync"
done
while read -r variable; do
  grep -q "^$variable=" "$root/etc/default/gradsync" ||
    fail "the units use \$$variable but /etc/default/gradsync does not set it"
done < <(grep -ho '\$[{]\?GRADSYNC_[A-Z_]*' "$root"/usr/lib/systemd/system/* |
  grep -o 'GRADSYNC_[A-Z_]*' | sort -u)

for binary in "${binaries[@]}"; do
  out=$("$root/usr/bin/$binary" --version 2>&1) ||
    fail "the packaged $binary --version exited non-zero: $out"
  grep -qF "$version" <<<"$out" ||
    fail "the packaged $binary --version does not say $version: $out"
done
echo "deb_package_test: the unpacked binaries run (--version $version)"

if command -v systemd-analyze >/dev/null 2>&1; then
  # verify wants the ExecStart binaries to exist: copies of the units that
  # start the unpacked ones (--root would need a whole systemd in the root).
  mkdir "$work/verify"
  for unit in "${units[@]}"; do
    sed "s|^ExecStart=/usr/bin/|ExecStart=$root/usr/bin/|" \
      "$root/usr/lib/systemd/system/$unit" >"$work/verify/$unit"
  done
  ln -s gradsync-ps@.service "$work/verify/gradsync-ps@29600.service"
  (cd "$work/verify" &&
    systemd-analyze verify --man=no gradsync-coordinator.service \
      gradsync-worker.service gradsync-ps@29600.service) >"$work/verify.log" 2>&1 ||
    { cat "$work/verify.log" >&2; fail "systemd-analyze verify refused a unit"; }
  [[ ! -s "$work/verify.log" ]] ||
    { cat "$work/verify.log" >&2; fail "systemd-analyze verify warned"; }
  echo "deb_package_test: systemd-analyze verify accepted the packaged units"
elif [ "${GRADSYNC_REQUIRE_TOOLS:-}" = 1 ]; then
  fail "systemd-analyze is not installed, and GRADSYNC_REQUIRE_TOOLS=1" \
    "(scripts/install_deps.sh installs it: package systemd)"
else
  echo "deb_package_test: systemd-analyze is not installed, so the packaged" \
    "units were not verified"
fi
# gradsync-dev: the CMake package, on the -dev packages it builds against,
# and usable where it is unpacked (its config finds its own prefix).
[[ $(dpkg-deb --field "$dev_deb" Package) == gradsync-dev ]] ||
  fail "gradsync-dev's Package is '$(dpkg-deb --field "$dev_deb" Package)'"
dev_depends=$(dpkg-deb --field "$dev_deb" Depends)
for needed in 'libgrpc\+\+-dev' 'libabsl-dev' 'libprotobuf-dev'; do
  grep -qE "(^|[,|] *)$needed( |,|$)" <<<"$dev_depends" ||
    fail "gradsync-dev's Depends lacks $needed: $dev_depends"
done
dpkg-deb --contents "$dev_deb" | awk '{print $NF}' >"$work/dev-contents"
for path in ./usr/lib/cmake/gradsync/gradsyncConfig.cmake \
  ./usr/include/gradsync/collectives/communicator.h \
  ./usr/include/gradsync/proto/job.pb.h; do
  grep -qx -- "$path" "$work/dev-contents" || fail "gradsync-dev has no ${path#.}"
done
! grep -q '^\./usr/include/' "$work/contents" ||
  fail "the runtime package gradsync carries headers"
! grep -q '^\./usr/bin/' "$work/dev-contents" ||
  fail "gradsync-dev carries binaries"
dpkg-deb -x "$dev_deb" "$work/dev-root"
"$(dirname "$0")/package_test.sh" "$build" "$work/dev-root/usr" ||
  fail "a project could not build against the unpacked gradsync-dev"
echo "deb_package_test: a consumer built and ran against gradsync-dev"

echo "deb_package_test: OK ($(basename "$deb"), $(basename "$dev_deb"))"
