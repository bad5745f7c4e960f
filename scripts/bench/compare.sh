#!/usr/bin/env bash
# All-reduce bus bandwidth of gradsync's TCP ring, torch.distributed's Gloo
# backend and Open MPI's MPI_Allreduce over its TCP transport, measured side
# by side on this machine: N local ranks over loopback, fp32 sum, the same
# sizes, iterations and definitions (busbw = S/t * 2(N-1)/N, t the slowest
# rank's average), verifiable inputs checked by all three. Runs are
# interleaved per (N, size), rotating which tool goes first, so that load
# from anything else on the machine is shared fairly. Prints one Markdown
# table with the ratios; raw JSON lines stay in the output directory.
#
#   scripts/bench/compare.sh                       # N = 2 4, 1M..256M
#   scripts/bench/compare.sh --ranks 4 -b 64M -e 64M --rounds 3
#
# Needs: a built gradsync (--gradsync, default build/cli/gradsync),
# Debian's python3-torch (/usr/bin/python3) and openmpi-bin + mpicc.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
gradsync="${GRADSYNC:-$root/build/cli/gradsync}"
python="${PYTHON:-/usr/bin/python3}"
ranks="2 4"
min=1M
max=256M
rounds=1
iters=""
warmup=5
pass=in_place
out=""
gradsync_args=""

usage() {
  cat <<EOF
usage: $0 [--gradsync PATH] [--ranks "2 4"] [-b 1M] [-e 256M] [-n ITERS]
          [-w 5] [--rounds 1] [--pass in_place|out_of_place] [--out DIR]
          [--gradsync-args "ARGS"]

-n fixes the iterations at every size; by default 200 up to 2M (where 20
calls last only tens of ms, too short for this noisy host), 20 up to 16M,
10 up to 64M, 5 above. --rounds R repeats the whole interleaved sweep and reports
each tool's median. --pass picks gradsync's and MPI's pass (Gloo's
all_reduce is always in place, so in_place compares like with like).
EOF
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --gradsync) gradsync=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    -b) min=$2; shift 2 ;;
    -e) max=$2; shift 2 ;;
    -n) iters=$2; shift 2 ;;
    -w) warmup=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --pass) pass=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --gradsync-args) gradsync_args=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1'" >&2; usage >&2; exit 1 ;;
  esac
done
case "$pass" in in_place|out_of_place) ;; *)
  echo "compare.sh: --pass is in_place or out_of_place" >&2; exit 1 ;;
esac
if [[ ! -x "$gradsync" ]]; then
  echo "compare.sh: no gradsync binary at $gradsync (build it, or --gradsync)" >&2
  exit 1
fi
for tool in mpicc mpirun "$python"; do
  command -v "$tool" >/dev/null || {
    echo "compare.sh: $tool not found (apt-get install openmpi-bin libopenmpi-dev python3-torch)" >&2
    exit 1
  }
done

out=${out:-$(mktemp -d /tmp/gradsync-compare.XXXXXX)}
mkdir -p "$out"
mpicc -O2 -o "$out/mpi_allreduce" "$here/mpi_allreduce.c"
mpirun_flags=(--oversubscribe --bind-to none --mca btl self,tcp --mca pml ob1
              --mca btl_tcp_if_include lo)
if [[ $(id -u) == 0 ]]; then mpirun_flags+=(--allow-run-as-root); fi

sizes=$("$python" - "$min" "$max" <<'EOF'
import re, sys
def parse(t):
    m = re.fullmatch(r"(\d+)([KkMmGg]?)(i?[Bb])?", t)
    if not m:
        sys.exit(f"compare.sh: bad size '{t}'")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]
size, top = parse(sys.argv[1]), parse(sys.argv[2])
while size <= top:
    print(size)
    size *= 2
EOF
)

iters_for() {
  if [[ -n "$iters" ]]; then echo "$iters"
  elif (( $1 <= 2 << 20 )); then echo 200
  elif (( $1 <= 16 << 20 )); then echo 20
  elif (( $1 <= 64 << 20 )); then echo 10
  else echo 5
  fi
}

run_tool() {  # tool n size iters
  local tool=$1 n=$2 size=$3 it=$4
  case "$tool" in
    gradsync)
      # --transport tcp: Gloo and Open MPI (btl tcp) run over TCP here too;
      # scripts/bench/shm_compare.sh compares the shared-memory paths.
      "$gradsync" bench allreduce --ranks "$n" -b "$size" -e "$size" \
        -n "$it" -w "$warmup" --json --transport tcp $gradsync_args ;;
    gloo)
      "$python" "$here/gloo_allreduce.py" --ranks "$n" -b "$size" \
        -e "$size" -n "$it" -w "$warmup" --json ;;
    mpi)
      mpirun "${mpirun_flags[@]}" -np "$n" "$out/mpi_allreduce" -b "$size" \
        -e "$size" -n "$it" -w "$warmup" --json ;;
  esac
}

failures=0
tools=(gradsync gloo mpi)
turn=0
for round in $(seq 1 "$rounds"); do
  for n in $ranks; do
    for size in $sizes; do
      it=$(iters_for "$size")
      for k in 0 1 2; do
        tool=${tools[$(( (turn + k) % 3 ))]}
        echo "# round $round  N=$n  size $size  iters $it  $tool" >&2
        if ! run_tool "$tool" "$n" "$size" "$it" >>"$out/$tool.jsonl"; then
          echo "compare.sh: $tool failed at N=$n size $size" >&2
          failures=$((failures + 1))
        fi
      done
      turn=$((turn + 1))
    done
  done
done

"$python" - "$out" "$pass" "$ranks" <<'EOF'
import json, os, statistics, sys
out, pass_name, ranks = sys.argv[1], sys.argv[2], sys.argv[3]
tools = ("gradsync", "gloo", "mpi")
busbw, wrong = {}, {}
for tool in tools:
    path = os.path.join(out, tool + ".jsonl")
    if not os.path.exists(path):
        continue
    for line in open(path):
        row = json.loads(line)
        if row.get("summary") or "error" in row:
            continue  # the summary, or a failed run's error
        p = row.get(pass_name) or row.get("in_place")
        key = (tool, row["ranks"], row["size"])
        busbw.setdefault(key, []).append(p["busbw"])
        wrong[key] = wrong.get(key, 0) + (p["wrong"] or 0)

def fmt_size(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift:
            return f"{b / (1 << shift):g} {unit}"
    return f"{b} B"

def med(key):
    v = busbw.get(key)
    return statistics.median(v) if v else None

print(f"\nall-reduce fp32 sum, busbw in GB/s ({pass_name} for gradsync and "
      "MPI, in place for Gloo); median over rounds\n")
print("| N | size | gradsync | Gloo | Open MPI | gradsync / Gloo "
      "| gradsync / MPI | #wrong |")
print("|---|---|---|---|---|---|---|---|")
sizes = sorted({k[2] for k in busbw})
for n in (int(x) for x in ranks.split()):
    for size in sizes:
        g, gl, m = (med((t, n, size)) for t in tools)
        if g is None and gl is None and m is None:
            continue
        cell = lambda v: "-" if v is None else f"{v:.3f}"
        ratio = lambda a, b: "-" if not a or not b else f"{a / b:.2f}x"
        bad = sum(wrong.get((t, n, size), 0) for t in tools)
        print(f"| {n} | {fmt_size(size)} | {cell(g)} | {cell(gl)} | {cell(m)} "
              f"| {ratio(g, gl)} | {ratio(g, m)} | {bad} |")
print(f"\nraw JSON lines: {out}/{{gradsync,gloo,mpi}}.jsonl")
EOF
if (( failures > 0 )); then
  echo "compare.sh: $failures runs failed (see above)" >&2
  exit 1
fi
