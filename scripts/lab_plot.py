#!/usr/bin/env python3
"""Plots of a `gradsync lab sweep` (its sweep.json) next to the alpha-beta model.

usage: lab_plot.py SWEEP.json OUT_DIR

Writes three PNGs into OUT_DIR:
  sync_vs_n.png             sync time against N, per layout and shard count,
                            measured (points) and the fitted model (lines),
                            one panel per gradient size;
  measured_vs_predicted.png every cell, measured against predicted, with the
                            10% and 20% bands (hollow: left out of the fit);
  crossover.png             for the largest N with three or more shard counts:
                            PS time against K, the ring's time, and K*.
Needs python3-matplotlib (Debian). Run by `gradsync lab sweep --plot` and
`gradsync lab report --plot`.
"""
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def trusted(c):
    return (not c.get("error")) and c.get("link_ok") and not c.get(
        "cpu_bound") and c.get("sync_s", 0) > 0


def mib(b):
    return "%g MiB" % (int(b) / 1048576.0)


def series_name(c):
    if c["layout"] == "ring":
        return "ring"
    n, k = c["workers"], c["shards"]
    tag = "colocated " if c["layout"] == "ps-colocated" else ""
    if k == n:
        return "PS %sK=N" % tag
    if k == max(1, n // 2) and k not in (1, 2):
        return "PS %sK=N/2" % tag
    return "PS %sK=%d" % (tag, k)


def model_time(r, layout, n, k, s, partition_bytes=0):
    """The fitted alpha-beta time: study/alpha_beta/sync_model.cc ModelCost, continuous
    in k (the crossover plot draws it between the measured shard counts)."""
    alpha, bw = r.get("alpha_s", 0.0), r["bandwidth_Bps"]
    pipelined = any(c.get("pipelined") for c in r["cells"])
    if layout == "ring":
        return 0.0 if n < 2 else 2 * (n - 1) * (alpha + s / (n * bw))
    if layout == "ps":
        factor = max(1.0, n / k)
    else:
        factor = (n + k - 2) / k if pipelined else max((n - 1) / k,
                                                       (k - 1) / k)
        if k < n:
            factor = max(factor, 1.0)
    if not pipelined:
        return 2 * alpha + 2 * factor * s / bw
    link_bytes, stages = factor * s, 2
    if partition_bytes > 0:
        partitions = math.ceil(s / k / partition_bytes)
        link_bytes += factor * s / partitions
        stages = partitions + 1
    return stages * alpha + link_bytes / bw


def plot_sync_vs_n(r, cells, out):
    sizes = sorted({int(c["bytes"]) for c in cells})
    fig, axes = plt.subplots(1, len(sizes), figsize=(6 * len(sizes), 4.5),
                             squeeze=False)
    for ax, size in zip(axes[0], sizes):
        groups = {}
        for c in cells:
            if int(c["bytes"]) == size and c.get("sync_s", 0) > 0:
                groups.setdefault(series_name(c), []).append(c)
        for name in sorted(groups, key=lambda x: (x != "ring", x)):
            pts = sorted(groups[name], key=lambda c: c["workers"])
            ns = [c["workers"] for c in pts]
            line = ax.plot(ns, [1e3 * c["sync_s"] for c in pts], "o",
                           label=name)[0]
            if all(c.get("predicted_s", 0) > 0 for c in pts):
                ax.plot(ns, [1e3 * c["predicted_s"] for c in pts], "--",
                        color=line.get_color(), alpha=0.7)
        ax.set_xlabel("workers N")
        ax.set_ylabel("sync time per step (ms)")
        ax.set_title("S = %s: measured (points), alpha-beta fit (dashed)" %
                     mib(size))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "sync_vs_n.png"), dpi=110)
    plt.close(fig)


def plot_measured_vs_predicted(r, cells, out):
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    pts = [c for c in cells if c.get("predicted_s", 0) > 0 and c.get(
        "sync_s", 0) > 0]
    if not pts:
        plt.close(fig)
        return
    lo = min(min(c["sync_s"], c["predicted_s"]) for c in pts) * 1e3 * 0.8
    hi = max(max(c["sync_s"], c["predicted_s"]) for c in pts) * 1e3 * 1.25
    xs = [lo, hi]
    ax.plot(xs, xs, "k-", lw=1, label="measured = predicted")
    for band, style in ((0.1, ":"), (0.2, "--")):
        ax.plot(xs, [x * (1 + band) for x in xs], "k" + style, lw=0.7,
                label="+-%d%%" % (100 * band))
        ax.plot(xs, [x * (1 - band) for x in xs], "k" + style, lw=0.7)
    for layout, marker in (("ring", "o"), ("ps", "s"), ("ps-colocated", "^")):
        sel = [c for c in pts if c["layout"] == layout]
        if not sel:
            continue
        for ok in (True, False):
            group = [c for c in sel if trusted(c) == ok]
            if not group:
                continue
            ax.scatter([1e3 * c["predicted_s"] for c in group],
                       [1e3 * c["sync_s"] for c in group], marker=marker,
                       facecolors=None if ok else "none",
                       edgecolors="C0" if not ok else None,
                       label=layout + ("" if ok else " (not fitted)"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("predicted (ms)")
    ax.set_ylabel("measured (ms)")
    ax.set_title("mean |error| %.1f%%, largest %.1f%%" %
                 (100 * r.get("mean_abs_error", 0),
                  100 * r.get("max_abs_error", 0)))
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "measured_vs_predicted.png"), dpi=110)
    plt.close(fig)


def plot_crossover(r, cells, out):
    best = None
    for c in cells:
        if c["layout"] != "ring" or c.get("sync_s", 0) <= 0:
            continue
        ks = sorted({p["shards"] for p in cells
                     if p["layout"] == "ps" and p["workers"] == c["workers"]
                     and p["bytes"] == c["bytes"] and p.get("sync_s", 0) > 0})
        if len(ks) >= 3 and (best is None or
                             (c["workers"], c["bytes"]) >
                             (best["workers"], best["bytes"])):
            best = c
    # Without a fit (no cell could be trusted) there is no model to draw.
    if best is None or not r.get("bandwidth_Bps", 0) > 0:
        return
    n, size = best["workers"], int(best["bytes"])
    ps = sorted((p for p in cells if p["layout"] == "ps" and
                 p["workers"] == n and int(p["bytes"]) == size and
                 p.get("sync_s", 0) > 0), key=lambda p: p["shards"])
    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.plot([p["shards"] for p in ps], [1e3 * p["sync_s"] for p in ps], "s",
            color="C0", label="PS, K server hosts (measured)")
    grid = [1 + i * (n - 1) / 200.0 for i in range(201)]
    partition = int(ps[0].get("partition_bytes", 0))
    ax.plot(grid, [1e3 * model_time(r, "ps", n, k, size, partition)
                   for k in grid], "--", color="C0", label="PS (model)")
    ax.axhline(1e3 * best["sync_s"], color="C1", label="ring (measured)")
    ax.axhline(1e3 * model_time(r, "ring", n, 1, size), color="C1", ls="--",
               label="ring (model)")
    # The model's crossover: the first K where the PS is no slower than the
    # ring (partitions move it past the closed form N^2/(2(N-1))).
    ring_model = model_time(r, "ring", n, 1, size)
    fine = [1 + i * (n - 1) / 10000.0 for i in range(10001)]
    k_star = next((k for k in fine
                   if model_time(r, "ps", n, k, size, partition) <= ring_model),
                  None)
    if k_star is not None:
        ax.axvline(k_star, color="grey", ls=":",
                   label="model K* = %.2f" % k_star)
    ax.set_xlabel("PS shards K (each on its own host)")
    ax.set_ylabel("sync time per step (ms)")
    ax.set_title("N = %d, S = %s: where the PS meets the ring" %
                 (n, mib(size)))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "crossover.png"), dpi=110)
    plt.close(fig)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        r = json.load(f)
    cells = r.get("cells", [])
    os.makedirs(argv[2], exist_ok=True)
    plot_sync_vs_n(r, cells, argv[2])
    plot_measured_vs_predicted(r, cells, argv[2])
    plot_crossover(r, cells, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
