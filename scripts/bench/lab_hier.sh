#!/usr/bin/env bash
# The hierarchical all-reduce against the flat ring on the bottleneck lab
# (docs/lab.md): H emulated hosts of P ranks each, every host's link shaped
# to RATE each way. A flat ring of N = H*P ranks (consecutive ranks on one
# host) crosses each host's link once per pass, carrying 2(N-1)/N * S each
# way; the hierarchical all-reduce carries only its slices' cross-host
# all-reduces there, 2(H-1)/H * S. Where the links are the limit it should
# be faster by the ratio of the two: for H = 2, P = 2, 1.5 S against
# 1.0 S, up to 1.5x.
#
# Ranks find their hosts by host identity (host name, boot id and network
# namespace: collectives/host_identity.h), so each emulated host's ranks
# share memory and every other pair crosses the shaped links. Each rank is
# a `gradsync bench allreduce --world N` process inside its host's
# namespace, with a gradsync-store on the head host; rank 0's JSON lines
# are kept. Every result is checked exact (#wrong must be 0).
#
#   sudo scripts/bench/lab_hier.sh [--hosts 2] [--per-host 2] [--link 100mbit]
#                                  [--size 16M | --sizes 64K:16M]
#                                  [--algos "ring hierarchical"]
#                                  [--iters 5] [--rounds 3] [--out DIR]
#
# --sizes MIN:MAX sweeps sizes from MIN to MAX by factors of 4 in each
# run (bench's -b MIN -e MAX -f 4), to find where the hierarchical
# all-reduce starts to pay (HierarchicalOptions::min_bytes); add
# halving-doubling to --algos to see the flat communicator's small sizes.
# Prints, per round and size, each algorithm's busbw and time per call;
# writes DIR/results.jsonl. Takes the lab down again, even on failure.
# Needs root and iproute2 (scripts/install_deps.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
G="${GRADSYNC:-$root/build/cli/gradsync}"
STORE="${GRADSYNC_STORE:-$root/build/server/store/gradsync-store}"
hosts=2
per_host=2
link=100mbit
min_size=16M
max_size=16M
algos="ring hierarchical"
iters=5
rounds=3
out=lab-hier
while [[ $# -gt 0 ]]; do
  case "$1" in
    --hosts) hosts=$2; shift 2 ;;
    --per-host) per_host=$2; shift 2 ;;
    --link) link=$2; shift 2 ;;
    --size) min_size=$2; max_size=$2; shift 2 ;;
    --sizes) min_size=${2%%:*}; max_size=${2##*:}; shift 2 ;;
    --algos) algos=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--hosts H] [--per-host P] [--link RATE] [--size S | --sizes MIN:MAX] [--algos LIST] [--iters N] [--rounds R] [--out DIR]" >&2
       exit 2 ;;
  esac
done
world=$((hosts * per_host))
dir=$(mktemp -d "${TMPDIR:-/tmp}/gradsync-hier.XXXXXX")
prefix="gsh$(($$ % 100000))"
subnet="10.75.$(($$ % 200))"
store_pid=""
cleanup() {
  if [ -n "$store_pid" ]; then kill "$store_pid" 2>/dev/null || true; fi
  "$G" lab down --run-dir "$dir" --prefix "$prefix" >/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$out"
: >"$out/results.jsonl"

"$G" lab up --hosts "$hosts" --link "$link" --prefix "$prefix" \
  --subnet "$subnet" --run-dir "$dir" --timeout 120
# host,address,netns,runs,daemons: the head runs the store, w1..wH the ranks.
hosts_csv=$("$G" lab status --run-dir "$dir" -o csv | tail -n +2)
head_ns=$(echo "$hosts_csv" | awk -F, 'NR == 1 {print $3}')
head_ip=$(echo "$hosts_csv" | awk -F, 'NR == 1 {print $2}')
mapfile -t worker_ns < <(echo "$hosts_csv" | awk -F, 'NR > 1 {print $3}')
mapfile -t worker_ip < <(echo "$hosts_csv" | awk -F, 'NR > 1 {print $2}')
ip netns exec "$head_ns" "$STORE" --listen "$head_ip:29555" \
  >"$dir/store.out" 2>"$dir/store.err" &
store_pid=$!
for _ in $(seq 50); do [ -s "$dir/store.out" ] && break; sleep 0.1; done
[ -s "$dir/store.out" ] || { cat "$dir/store.err" >&2; exit 1; }

run() {  # algo round: every rank's output in $dir/ALGO.RANK.out
  local algo=$1 round=$2 pids=() r h
  for ((r = 0; r < world; r++)); do
    h=$((r / per_host))
    ip netns exec "${worker_ns[$h]}" "$G" bench allreduce --world "$world" \
      --rank "$r" --store "$head_ip:29555" --listen-host "${worker_ip[$h]}" \
      --job "hier-$algo-$round-$$" --algo "$algo" -b "$min_size" \
      -e "$max_size" -f 4 \
      -n "$iters" -w 1 --json >"$dir/$algo.$r.out" 2>"$dir/$algo.$r.err" &
    pids+=($!)
  done
  local failed=0
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  if [ "$failed" -ne 0 ]; then
    cat "$dir"/"$algo".*.err >&2
    echo "lab_hier: a rank of the $algo run failed" >&2
    exit 1
  fi
}
# size, in_place's busbw, time_us and wrong of a result line.
in_place() {
  /usr/bin/python3 -c 'import json, sys
line = json.loads(sys.stdin.read())
r = line["in_place"]
print(line["size"], r["busbw"], r["time_us"] / 1000, r["wrong"])'
}

printf '%-6s %-17s %10s %12s %12s %8s\n' round algorithm bytes "busbw GB/s" \
  "time ms" wrong
read -r -a order <<<"$algos"
for ((round = 1; round <= rounds; round++)); do
  for algo in "${order[@]}"; do
    run "$algo" "$round"
    while read -r line; do
      echo "{\"round\":$round,\"algorithm\":\"$algo\",\"result\":$line}" >>"$out/results.jsonl"
      read -r bytes busbw time_ms wrong < <(echo "$line" | in_place)
      printf '%-6s %-17s %10s %12.4f %12.1f %8s\n' "$round" "$algo" "$bytes" \
        "$busbw" "$time_ms" "$wrong"
      [ "$wrong" = "0" ] || { echo "lab_hier: $algo gave wrong results" >&2; exit 1; }
    done < <(grep '"in_place"' "$dir/$algo.0.out")
  done
  # Rotate the order every round: the host's load drifts.
  order=("${order[@]:1}" "${order[0]}")
done
