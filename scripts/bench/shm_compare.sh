#!/usr/bin/env bash
# All-reduce busbw of gradsync over shared memory (--transport shm), over
# TCP (--transport tcp), and Open MPI over its shared-memory BTL (vader),
# as is and with glibc's malloc told not to give 64 MiB buffers back to
# the kernel after every call ("mpi+tunables": GLIBC_TUNABLES raising the
# mmap and trim thresholds, which Open MPI's temporaries otherwise pay),
# N local ranks, fp32 sum, in place, measured side by side: runs are
# interleaved per size, rotating which tool goes first, so that load from
# anything else on the machine is shared fairly. Prints one Markdown table
# with each tool's range (min-max over rounds) and the median ratio.
#
#   scripts/bench/shm_compare.sh --ranks 4 --sizes "1M 64M" --rounds 3
#
# Needs a built gradsync (--gradsync, default build/cli/gradsync) and
# openmpi-bin + libopenmpi-dev (mpicc). Other MPI flags: --mpi-args "ARGS".
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
gradsync="$root/build/cli/gradsync"
ranks=4
sizes="1M 64M"
rounds=3
warmup=3
mpi_args=""
out=""

while [[ $# -gt 0 ]]; do
  case "$1" in
    --gradsync) gradsync=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --mpi-args) mpi_args=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "shm_compare.sh: unknown argument '$1'" >&2; exit 1 ;;
  esac
done
for tool in mpicc mpirun python3 "$gradsync"; do
  command -v "$tool" >/dev/null || {
    echo "shm_compare.sh: $tool not found (build gradsync; apt-get install openmpi-bin libopenmpi-dev)" >&2
    exit 1
  }
done
out=${out:-$(mktemp -d /tmp/gradsync-shm-compare.XXXXXX)}
mkdir -p "$out"
mpicc -O2 -o "$out/mpi_allreduce" "$here/mpi_allreduce.c"
mpirun_flags=(--oversubscribe --bind-to none --mca btl vader,self)
tunables=glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296
if [[ $(id -u) == 0 ]]; then mpirun_flags+=(--allow-run-as-root); fi

iters_for() {  # as compare.sh: enough calls to outlast the noise
  case "$1" in
    *K|1M|2M) echo 200 ;;
    4M|8M|16M) echo 20 ;;
    *) echo 10 ;;
  esac
}

run_tool() {  # tool size iters
  case "$1" in
    shm|tcp)
      "$gradsync" bench allreduce --ranks "$ranks" -b "$2" -e "$2" -n "$3" \
        -w "$warmup" --json --transport "$1" ;;
    mpi|mpit)
      local env=()
      [[ $1 == mpit ]] && env=(-x "GLIBC_TUNABLES=$tunables")
      # shellcheck disable=SC2086
      mpirun "${mpirun_flags[@]}" "${env[@]}" $mpi_args -np "$ranks" \
        "$out/mpi_allreduce" -b "$2" -e "$2" -n "$3" -w "$warmup" --json ;;
  esac
}

tools=(shm tcp mpi mpit)
turn=0
for round in $(seq 1 "$rounds"); do
  for size in $sizes; do
    it=$(iters_for "$size")
    for k in 0 1 2 3; do
      tool=${tools[$(( (turn + k) % 4 ))]}
      echo "# round $round  size $size  iters $it  $tool" >&2
      run_tool "$tool" "$size" "$it" >>"$out/$tool.jsonl" ||
        echo "shm_compare.sh: $tool failed at size $size" >&2
    done
    turn=$((turn + 1))
  done
done

python3 - "$out" "$ranks" <<'EOF'
import json, os, statistics, sys
out, ranks = sys.argv[1], sys.argv[2]
bw, wrong = {}, {}
for tool in ("shm", "tcp", "mpi", "mpit"):
    path = os.path.join(out, tool + ".jsonl")
    if not os.path.exists(path):
        continue
    for line in open(path):
        row = json.loads(line)
        if row.get("summary") or "in_place" not in row:
            continue
        p = row["in_place"]
        bw.setdefault((tool, row["size"]), []).append(p["busbw"])
        wrong[tool] = wrong.get(tool, 0) + (p["wrong"] or 0)

def rng(tool, size):
    v = bw.get((tool, size))
    return f"{min(v):.2f}–{max(v):.2f}" if v else "—"

def ratio(a, b, size):
    va, vb = bw.get((a, size)), bw.get((b, size))
    if not va or not vb:
        return "—"
    return f"{statistics.median(va) / statistics.median(vb):.2f}×"

print(f"\nall-reduce fp32 sum in place, N = {ranks}, busbw GB/s, "
      "range over rounds (min–max); ratios of medians\n")
print("| size | gradsync shm | gradsync tcp | Open MPI vader "
      "| Open MPI vader + tunables | shm / MPI | shm / MPI+tunables "
      "| shm / tcp |")
print("|---|---|---|---|---|---|---|---|")
for size in sorted({k[1] for k in bw}):
    print(f"| {size >> 20} MiB | {rng('shm', size)} | {rng('tcp', size)} "
          f"| {rng('mpi', size)} | {rng('mpit', size)} "
          f"| {ratio('shm', 'mpi', size)} | {ratio('shm', 'mpit', size)} "
          f"| {ratio('shm', 'tcp', size)} |")
print(f"\n#wrong: {wrong}; rounds per cell: "
      f"{max((len(v) for v in bw.values()), default=0)}; raw JSON: {out}")
EOF
