#!/bin/sh
# libgradsync_c.so exports only its plain C API (gs_* functions), so that
# the process that loads it (torch: Debian's 1.13 with the new C++ ABI, a
# pip wheel before 2.7 with the old one, and its own protobuf) shares no
# C++ symbol with gradsync's gRPC, protobuf and Abseil
# (python/capi/gradsync_c.map, python/gradsync/torch/compat.py).
# Checks: every defined dynamic symbol is gs_[a-z0-9_]+ (no C++ name,
# mangled or not), the C API's entry points are there, and, to prove the
# check can fail, the same check rejects libprotobuf, which exports C++.
# Usage: capi_exports.sh PATH/TO/libgradsync_c.so
set -eu
lib=$1
command -v nm >/dev/null || { echo "SKIP: no nm (binutils)"; exit 77; }

only_c_api() {  # LIBRARY: prints the offending symbols, fails on any
  nm -D --defined-only "$1" | awk '{ print $NF }' |
    grep -vE '^gs_[a-z0-9_]+$' && return 1
  return 0
}

symbols=$(nm -D --defined-only "$lib" | awk '{ print $NF }')
for want in gs_session_open gs_comm_create gs_comm_allreduce gs_ps_open \
    gs_report_step gs_last_error; do
  echo "$symbols" | grep -qx "$want" ||
    { echo "libgradsync_c.so does not export $want"; exit 1; }
done
if ! extra=$(only_c_api "$lib"); then
  echo "libgradsync_c.so exports symbols outside its C API:"
  echo "$extra" | head -20; exit 1
fi
echo "libgradsync_c.so: $(echo "$symbols" | wc -l) symbols, all gs_*"

protobuf=$(ldd "$lib" | awk '$1 ~ /^libprotobuf\.so/ { print $3; exit }')
[ -n "$protobuf" ] || { echo "ldd lists no libprotobuf for $lib"; exit 1; }
if only_c_api "$protobuf" >/dev/null; then
  echo "the check let $protobuf (C++ exports) pass"; exit 1
fi
echo "the check rejects $protobuf (C++ exports), as it should"
echo "capi-exports-ok"
