#!/usr/bin/env python3
"""Plots scripts/bench/lab_ps_transport.sh's sweeps: for each cell (layout,
N, K), the sync time over gRPC and over the tensor plane (the bar: the
median of the runs, the whisker: their range) next to the alpha-beta
model's time (the black mark), and the CPU the lab's host was busy.

  scripts/bench/plot_lab_transport.py DIR [--out FILE.png]

DIR holds grpc-<run>/sweep.json and plane-<run>/sweep.json. Prints the
table it plots (markdown) to stdout.
"""
import argparse
import glob
import json
import os
import statistics
import sys


def load(directory):
    """{(layout, N, K): {"grpc": [cells], "plane": [cells]}}, and the link."""
    cells, rate = {}, None
    for transport in ("grpc", "plane"):
        paths = sorted(glob.glob(os.path.join(directory, transport + "-*",
                                              "sweep.json")))
        for path in paths:
            with open(path) as f:
                sweep = json.load(f)
            for c in sweep["cells"]:
                if c.get("error"):
                    continue
                key = (c["layout"], int(c["workers"]), int(c.get("shards", 0)))
                cells.setdefault(key, {"grpc": [], "plane": []})
                cells[key][transport].append(c)
                rate = int(c["rate_bps"])
    return cells, rate


def label(key):
    layout, n, k = key
    return f"ring N={n}" if layout == "ring" else f"PS N={n} K={k}"


def span(values, scale=1.0, fmt="{:.0f}"):
    if not values:
        return "-"
    lo, hi = min(values) * scale, max(values) * scale
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else \
        fmt.format(lo) + "–" + fmt.format(hi)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    cells, rate = load(args.dir)
    if not cells:
        print(f"no sweeps under {args.dir}", file=sys.stderr)
        return 1
    keys = sorted(cells, key=lambda k: (k[0] != "ring", k[1], k[2]))
    print("| cell | gRPC (ms) | plane (ms) | model (ms) | gRPC CPU | plane CPU |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for key in keys:
        g, p = cells[key]["grpc"], cells[key]["plane"]
        model = [c["predicted_s"] for c in g + p]
        print(f"| {label(key)} | {span([c['sync_s'] for c in g], 1e3)} | "
              f"{span([c['sync_s'] for c in p], 1e3)} | {span(model, 1e3)} | "
              f"{span([c['cpu_busy'] for c in g], 100, '{:.0f}')} % | "
              f"{span([c['cpu_busy'] for c in p], 100, '{:.0f}')} % |")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, cpu) = plt.subplots(2, 1, figsize=(8, 6), sharex=True,
                                  gridspec_kw={"height_ratios": [3, 1]})
    width = 0.38
    for i, key in enumerate(keys):
        for j, (transport, color) in enumerate((("grpc", "tab:orange"),
                                                ("plane", "tab:blue"))):
            runs = cells[key][transport]
            if not runs:
                continue
            x = i + (j - 0.5) * width
            times = [c["sync_s"] * 1e3 for c in runs]
            mid = statistics.median(times)
            ax.bar(x, mid, width, color=color,
                   label=("PS on gRPC" if transport == "grpc" else
                          "PS on the tensor plane") if i == len(keys) - 1
                   else None)
            ax.errorbar(x, mid, yerr=[[mid - min(times)], [max(times) - mid]],
                        color="black", capsize=3, linewidth=1)
            ax.plot([x - width / 2, x + width / 2],
                    [statistics.median(c["predicted_s"] * 1e3
                                       for c in runs)] * 2,
                    color="black", linewidth=2,
                    label="α-β model" if i == 0 and j == 0 else None)
            busy = [c["cpu_busy"] * 100 for c in runs]
            cpu.bar(x, statistics.median(busy), width, color=color)
    ax.set_ylabel("sync time per step (ms)")
    ax.set_title(f"16 MiB, {rate / 1e6:.0f} Mbit/s links: sync time, median "
                 "and range of the runs", fontsize=10)
    ax.legend(loc="upper left", fontsize=8)
    cpu.set_ylabel("host CPU (%)")
    cpu.set_ylim(0, 100)
    cpu.set_xticks(range(len(keys)))
    cpu.set_xticklabels([label(k) for k in keys])
    fig.tight_layout()
    out = args.out or os.path.join(args.dir, "transport.png")
    fig.savefig(out, dpi=110)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
