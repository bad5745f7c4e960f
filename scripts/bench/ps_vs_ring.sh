#!/usr/bin/env bash
# The alpha-beta (bandwidth-only) study of PS vs ring: for N local ranks
# and a sweep of sizes S, the measured time of one all-reduce through the
# TCP ring and through the parameter server with K = 1 and K = 2 shards
# (`gradsync bench allreduce --backend ring|ps`), next to what the
# bandwidth model predicts from one measured link bandwidth B:
#
#   ring       2(N-1)/N * S / B      each rank sends (and receives)
#                                    2(N-1)/N * S, all links at once;
#   PS, K      2 * max(S, N*S/K) / B a worker's link carries S and a
#                                    shard's N*S/K per direction; in sync
#                                    mode the push (all ranks' gradients
#                                    in) finishes before the pull starts,
#                                    so the two directions add up.
#
# B is one TCP stream's bandwidth over loopback: a sender and a receiver
# process move the largest size S through one socket (recv_into a
# preallocated buffer, no other work), best of 5, measured before each
# block of runs and the median taken. That is the "link" of
# the model; the bench's time also holds what the model leaves out (the
# ring's reductions and per-message latency, the PS's gRPC framing, sum and
# SGD step). For reference the script also prints B as the 2-rank ring
# sees it (S / t at N = 2 on the largest size: a 2-rank ring sends S per
# rank), which folds the ring's own overheads into B.
#
# All three, the ring's connections, the PS's gRPC connections and B's
# stream, run the congestion control that --tcp-congestion (default auto)
# gives a peer on this host: reno for auto, the system's for default
# (common/tcp_congestion.h), so that the model's B is the same link.
#
# Caveat for one host: all "links" are loopback on the same CPUs, so N
# streams at once share the cores instead of each getting B; the model's
# "N*S/K at the server" and "all ring links in parallel" only separate
# cleanly on real NICs.
#
#   scripts/bench/ps_vs_ring.sh                      # N = 2 3 4, 4M..256M x2
#   scripts/bench/ps_vs_ring.sh -e 64M --ranks "2 4" --rounds 3
#   BUILD_DIR=build-c scripts/bench/ps_vs_ring.sh -e 16M
#
# Uses $BUILD_DIR/cli/gradsync (BUILD_DIR defaults to build/) and
# /usr/bin/python3 (standard library only). Raw JSON lines are kept in the
# output directory (--out, default a fresh /tmp/gradsync-ps-vs-ring.*).
# Exit status: 0 when every run succeeded with #wrong = 0, 1 otherwise.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build_dir="${BUILD_DIR:-build}"
[[ "$build_dir" == /* ]] || build_dir="$root/$build_dir"
gradsync="$build_dir/cli/gradsync"
python="${PYTHON:-/usr/bin/python3}"
ranks="2 3 4"
min=4M
max=256M
factor=2
iters=""
warmup=1
rounds=1
out=""
congestion=auto
ps_transport=()

usage() {
  cat <<EOF
usage: $0 [--ranks "2 3 4"] [-b 4M] [-e 256M] [-f 2] [-n ITERS] [-w 1]
          [--rounds 1] [--out DIR] [--tcp-congestion auto|default|NAME]
          [--ps-transport plane|grpc]

-n fixes the timed iterations at every size; by default 10 up to 16M, 5
up to 64M, 3 above. --rounds R repeats the whole sweep (the three
configurations in a rotating order) and reports the median time.
--ps-transport chooses how the PS steps' tensors travel: the servers'
tensor planes (plane, the default) or gRPC streams (grpc); gradsync bench
--ps-transport.
Environment: BUILD_DIR (build), PYTHON (/usr/bin/python3).
EOF
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --ranks) ranks=$2; shift 2 ;;
    -b) min=$2; shift 2 ;;
    -e) max=$2; shift 2 ;;
    -f) factor=$2; shift 2 ;;
    -n) iters=$2; shift 2 ;;
    -w) warmup=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --tcp-congestion) congestion=$2; shift 2 ;;
    --ps-transport) ps_transport=(--ps-transport "$2"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "ps_vs_ring.sh: unknown argument '$1'" >&2; usage >&2; exit 1 ;;
  esac
done
if [[ ! -x "$gradsync" ]]; then
  echo "ps_vs_ring.sh: no gradsync binary at $gradsync (build the gradsync" \
       "target, or set BUILD_DIR)" >&2
  exit 1
fi
command -v "$python" >/dev/null || {
  echo "ps_vs_ring.sh: $python not found (set PYTHON)" >&2
  exit 1
}

out=${out:-$(mktemp -d /tmp/gradsync-ps-vs-ring.XXXXXX)}
mkdir -p "$out"

sizes=$("$python" - "$min" "$max" "$factor" <<'EOF'
import re, sys
def parse(t):
    m = re.fullmatch(r"(\d+)([KkMmGg]?)(i?[Bb])?", t)
    if not m:
        sys.exit(f"ps_vs_ring.sh: bad size '{t}'")
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]
size, top, factor = parse(sys.argv[1]), parse(sys.argv[2]), int(sys.argv[3])
if size < 8 or size > top or factor < 2:
    sys.exit("ps_vs_ring.sh: need 8 <= -b <= -e and -f >= 2")
while size <= top:
    print(size)
    size *= factor
EOF
)
largest=$(echo "$sizes" | tail -n 1)

iters_for() {
  if [[ -n "$iters" ]]; then echo "$iters"
  elif (( $1 <= 16 << 20 )); then echo 10
  elif (( $1 <= 64 << 20 )); then echo 5
  else echo 3
  fi
}

# One TCP stream over loopback: bytes/s of moving $largest bytes, best of
# 5 transfers. Taken before every (round, N) block, so that B sees the
# same background load as the runs; the table uses the median.
measure_b() {
  "$python" - "$largest" "$congestion" >>"$out/b.txt" <<'EOF'
import os, socket, sys, time
size = int(sys.argv[1])
# The algorithm the policy gives a peer on this host, at both ends.
policy = sys.argv[2]
algorithm = {"auto": "reno", "default": "", "": ""}.get(policy, policy)
def congest(s):
    if algorithm:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION,
                     algorithm.encode())
listener = socket.socket()
congest(listener)
listener.bind(("127.0.0.1", 0))
listener.listen(1)
port = listener.getsockname()[1]
rounds = 5
pid = os.fork()
if pid == 0:  # the sender
    listener.close()
    s = socket.socket()
    congest(s)
    s.connect(("127.0.0.1", port))
    data = bytearray(size)
    ack = bytearray(1)
    for _ in range(rounds):
        s.recv_into(ack)  # the receiver's clock is running
        s.sendall(data)
    s.close()
    os._exit(0)
conn, _ = listener.accept()
congest(conn)
buf = memoryview(bytearray(size))
best = 0.0
for _ in range(rounds):
    # Start the clock, then let the sender go: no byte is in flight before.
    start = time.perf_counter()
    conn.sendall(b"g")
    got = 0
    while got < size:
        n = conn.recv_into(buf[got:])
        if n == 0:
            sys.exit("ps_vs_ring.sh: the stream's sender went away")
        got += n
    elapsed = time.perf_counter() - start
    best = max(best, size / elapsed)
os.waitpid(pid, 0)
print(f"{best:.6e}")
EOF
}

configs=("ring" "ps1" "ps2")
run_config() {  # config n
  local config=$1 n=$2 size it
  local flags=()
  case "$config" in
    ring) flags=(--backend ring) ;;
    ps1) flags=(--backend ps --ps-shards 1 "${ps_transport[@]}") ;;
    ps2) flags=(--backend ps --ps-shards 2 "${ps_transport[@]}") ;;
  esac
  for size in $sizes; do
    it=$(iters_for "$size")
    "$gradsync" bench allreduce --ranks "$n" "${flags[@]}" -b "$size" \
      -e "$size" -n "$it" -w "$warmup" --timeout 300 \
      --tcp-congestion "$congestion" --json || return 1
  done
}

failures=0
turn=0
for round in $(seq 1 "$rounds"); do
  for n in $ranks; do
    echo "# round $round  N=$n  measuring B (one loopback TCP stream)" >&2
    measure_b || failures=$((failures + 1))
    for k in 0 1 2; do
      config=${configs[$(( (turn + k) % 3 ))]}
      echo "# round $round  N=$n  $config  sizes $min..$max" >&2
      if ! run_config "$config" "$n" >>"$out/$config.jsonl"; then
        echo "ps_vs_ring.sh: $config failed at N=$n" >&2
        failures=$((failures + 1))
      fi
    done
    turn=$((turn + 1))
  done
done

"$python" - "$out" "$ranks" "$largest" "$congestion" "${ps_transport[*]:-grpc}" <<'EOF' || failures=$((failures + 1))
import json, os, statistics, sys
out, ranks, largest = sys.argv[1], sys.argv[2], int(sys.argv[3])
bs = [float(x) for x in open(os.path.join(out, "b.txt")).read().split()]
if not bs:
    sys.exit("ps_vs_ring.sh: no measurement of B")
b_stream = statistics.median(bs)
configs = ("ring", "ps1", "ps2")
times, wrong = {}, {}
for config in configs:
    path = os.path.join(out, config + ".jsonl")
    if not os.path.exists(path):
        continue
    for line in open(path):
        row = json.loads(line)
        if row.get("summary") or "error" in row:
            continue  # the summary, or a failed run's error
        p = row["out_of_place"]
        key = (config, row["ranks"], row["size"])
        times.setdefault(key, []).append(p["time_us"] / 1e3)
        wrong[key] = wrong.get(key, 0) + (p["wrong"] or 0)

def med(key):
    v = times.get(key)
    return statistics.median(v) if v else None

def fmt_size(b):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << shift:
            return f"{b / (1 << shift):g} {unit}"
    return f"{b} B"

def cell(v):
    return "-" if v is None else f"{v:.1f}"

ring2 = med(("ring", 2, largest))
b_ring2 = largest / (ring2 / 1e3) if ring2 else None
print(f"\nB (one loopback TCP stream, {fmt_size(largest)}, best of 5, median "
      f"of {len(bs)} measurements): {b_stream / 1e9:.2f} GB/s "
      f"(range {min(bs) / 1e9:.2f} .. {max(bs) / 1e9:.2f}); tcp congestion "
      f"{sys.argv[4]} for the stream, the ring and the PS; the PS over "
      f"{'its tensor plane' if 'plane' in sys.argv[5] else 'gRPC'}")
if b_ring2:
    print(f"B as the 2-rank ring sees it (S/t at N=2, {fmt_size(largest)}): "
          f"{b_ring2 / 1e9:.2f} GB/s (not used below)")
print("\nall-reduce of S bytes fp32 per rank, time in ms (median over rounds);"
      "\npredicted: ring 2(N-1)/N*S/B, PS 2*max(S, N*S/K)/B, with B the "
      "stream's\n")
print("| N | size | ring ms | ring pred | PS K=1 ms | PS K=1 pred "
      "| PS K=2 ms | PS K=2 pred | #wrong |")
print("|---|---|---|---|---|---|---|---|---|")
sizes = sorted({k[2] for k in times})
ms = lambda seconds: seconds * 1e3
bad_total = 0
for n in (int(x) for x in ranks.split()):
    for s in sizes:
        got = [med((c, n, s)) for c in configs]
        if all(v is None for v in got):
            continue
        ring_pred = ms(2 * (n - 1) / n * s / b_stream)
        ps_pred = lambda k: ms(2 * max(s, n * s / k) / b_stream)
        bad = sum(wrong.get((c, n, s), 0) for c in configs)
        bad_total += bad
        print(f"| {n} | {fmt_size(s)} | {cell(got[0])} | {cell(ring_pred)} "
              f"| {cell(got[1])} | {cell(ps_pred(1))} | {cell(got[2])} "
              f"| {cell(ps_pred(2))} | {bad} |")
print(f"\nraw JSON lines: {out}/{{ring,ps1,ps2}}.jsonl")
sys.exit(1 if bad_total else 0)
EOF
if (( failures > 0 )); then
  echo "ps_vs_ring.sh: $failures runs failed or had wrong elements (see above)" >&2
  exit 1
fi
