#!/usr/bin/env bash
# The simulator's literature tables (issue 41; docs/performance/simulator.md,
# "K* and the best layout" and "BytePS's comparison"): `gradsync plan` over
# the models, the link rates and N = 8..1024, rendered as Markdown tables and
# PNG plots by scripts/bench/sim_tables.py.
#
#   scripts/bench/sim_tables.sh [--out DIR] [--calibration FILE]
#       [--images DIR]
#
# 1. The K* table: `gradsync plan --workers 8..1024 --gpus-per-node 8` for
#    resnet50, vgg16 and bert-large at 10, 25, 100 and 400 Gbit/s per node
#    (every layout, K = 1..N; the defaults otherwise: a100 at 40 % of its
#    peak, batch 32 per GPU, fp32 gradients, 25 MiB buckets, 4096000-byte
#    partitions, the PS reducing in the node first); OUT/plan-MODEL-LINK.json.
# 2. BytePS's comparison: 8 V100s per node, batch 64 per GPU, N = 16..256,
#    the ring (NCCL's) against the PS with K = one CPU server per node
#    (BytePS's k = n), the PS placing its 4096000-byte partitions as
#    BytePS does (--ps-placement spread: every layer's partitions
#    round-robin over the servers): ResNet-50 and VGG-16 with fp32
#    gradients at 20 and 100 Gbit/s, at an assumed sustained 8 TFLOP/s fp32
#    (about half of a V100's 15.7); BERT-large with fp16 gradients at 20
#    and 100 Gbit/s, at 40 % of the V100's 125 TFLOP/s tensor peak;
#    OUT/byteps-MODEL-LINK.json. (The K* table keeps gradsync's own
#    placement, one contiguous slice per server.)
# 3. scripts/bench/sim_tables.py: OUT/tables.md, and the plots in --images
#    (OUT by default).
#
# No root, no lab: the simulator only (about a minute on a 2-vCPU VM).
# Needs a built tree (build/cli/gradsync, or GRADSYNC=PATH) and
# /usr/bin/python3 with matplotlib for the plots.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
G="${GRADSYNC:-$root/build/cli/gradsync}"
out=sim-tables
images=""
calibration=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --images) images="$2"; shift 2 ;;
    --calibration) calibration=(--calibration "$2"); shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "sim_tables.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ -x "$G" ]] || { echo "sim_tables.sh: no gradsync at $G" >&2; exit 1; }
mkdir -p "$out"
images="${images:-$out}"
mkdir -p "$images"

for model in resnet50 vgg16 bert-large; do
  for link in 10gbit 25gbit 100gbit 400gbit; do
    "$G" plan --model-profile "$model" --link "$link" --workers 8..1024 \
      --gpus-per-node 8 "${calibration[@]}" -o json \
      > "$out/plan-$model-$link.json"
  done
done

for link in 20gbit 100gbit; do
  for model in resnet50 vgg16; do
    "$G" plan --model-profile "$model" --link "$link" --workers 16..256 \
      --gpus-per-node 8 --batch 64 --gpu-tflops 8 --grad-dtype fp32 \
      --layouts ring,hierarchical,ps --servers 2..32 --ps-placement spread \
      "${calibration[@]}" -o json > "$out/byteps-$model-$link.json"
  done
  "$G" plan --model-profile bert-large --link "$link" --workers 16..256 \
    --gpus-per-node 8 --batch 64 --gpu v100 --gpu-efficiency 0.4 \
    --grad-dtype fp16 --layouts ring,hierarchical,ps --servers 2..32 \
    --ps-placement spread "${calibration[@]}" -o json \
    > "$out/byteps-bert-large-$link.json"
done

/usr/bin/python3 "$root/scripts/bench/sim_tables.py" "$out" \
  --images "$images" > "$out/tables.md"
echo "wrote $out/tables.md and the plots in $images"
