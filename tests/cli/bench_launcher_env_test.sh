#!/usr/bin/env bash
# gradsync bench under a launcher's environment, end to end: a real
# gradsync-store, and three ranks that take their rank and world size from
# SLURM_PROCID/SLURM_NTASKS (as srun sets them; the middle one from
# torchrun's RANK/WORLD_SIZE instead, under an srun whose SLURM_PROCID and
# SLURM_NTASKS it must ignore, as torchrun's children inherit them), not
# from flags. Every rank must exit 0 with every element exact. Bounded:
# each process has a deadline.
#
#   tests/cli/bench_launcher_env_test.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR}
gradsync="$build/cli/gradsync"
store_bin="$build/server/store/gradsync-store"
dir=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-launcher-env.XXXXXX")
store_pid=
cleanup() {
  if [[ -n "$store_pid" ]]; then kill "$store_pid" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

timeout 60 "$store_bin" --listen 127.0.0.1:0 >"$dir/store.out" 2>&1 &
store_pid=$!
for _ in $(seq 100); do
  [[ -s "$dir/store.out" ]] && break
  sleep 0.1
done
address=$(head -n 1 "$dir/store.out" | grep -oE '127\.0\.0\.1:[0-9]+' || true)
if [[ -z "$address" ]]; then
  echo "the store did not start: $(cat "$dir/store.out")" >&2
  exit 1
fi

args=(bench allreduce --store "$address" -b 1K -e 64K -n 2 -w 1 --timeout 30)
env -u RANK -u WORLD_SIZE SLURM_PROCID=0 SLURM_NTASKS=3 \
  timeout 60 "$gradsync" "${args[@]}" >"$dir/r0" 2>&1 &
r0=$!
env SLURM_PROCID=0 SLURM_NTASKS=1 RANK=1 WORLD_SIZE=3 \
  timeout 60 "$gradsync" "${args[@]}" >"$dir/r1" 2>&1 &
r1=$!
env -u RANK -u WORLD_SIZE SLURM_PROCID=2 SLURM_NTASKS=3 \
  timeout 60 "$gradsync" "${args[@]}" >"$dir/r2" 2>&1 &
r2=$!
status=0
for pid in $r0 $r1 $r2; do
  wait "$pid" || status=1
done
if [[ $status -ne 0 ]] || ! grep -q "Out of bounds values : 0 OK" "$dir/r0"; then
  for r in r0 r1 r2; do echo "== $r"; cat "$dir/$r"; done >&2
  exit 1
fi
grep "nRanks" "$dir/r0"
echo "launcher-env-ok"
