#!/usr/bin/env python3
"""Renders scripts/bench/sim_tables.sh's `gradsync plan -o json` files as
the Markdown tables of docs/performance/simulator.md and two PNG plots.

  scripts/bench/sim_tables.py DIR [--images DIR]

DIR holds plan-MODEL-LINK.json (the K* sweep) and byteps-MODEL-LINK.json
(BytePS's comparison). Prints the tables to stdout; writes
sim-bert-large-100gbit.png (step time against N per layout) and
sim-kstar-heatmap.png (K* per model, link and N) into --images.
"""
import argparse
import json
import math
import os
import sys
from typing import Any, Dict, List, Optional

MODELS = ["resnet50", "vgg16", "bert-large"]
LINKS = ["10gbit", "25gbit", "100gbit", "400gbit"]
BYTEPS_LINKS = ["20gbit", "100gbit"]
GPUS_PER_NODE = 8

Plan = Dict[str, Any]


def load(path: str) -> Plan:
    with open(path) as f:
        return json.load(f)


def link_name(link: str) -> str:
    return link.replace("gbit", " Gbit/s")


def cell(row: Dict[str, Any], layout: str,
         servers: Optional[int] = None) -> Optional[Dict[str, Any]]:
    """The row's cell of `layout` (with `servers`, or the fastest)."""
    found = [c for c in row["cells"] if c["layout"] == layout and
             (servers is None or c["servers"] == servers)]
    return min(found, key=lambda c: c["stepS"]) if found else None


def kstar_tables(directory: str) -> str:
    out = []
    for model in MODELS:
        plans = {link: load(os.path.join(directory,
                                         f"plan-{model}-{link}.json"))
                 for link in LINKS}
        out.append(f"**{model}** (best layout, K\\*; ? marks, ms of the "
                   "best step)\n")
        out.append("| N | " + " | ".join(link_name(name) for name in LINKS) + " |")
        out.append("| ---: | " + " | ".join("---" for _ in LINKS) + " |")
        rows = plans[LINKS[0]]["rows"]
        for i, row in enumerate(rows):
            cells = []
            for link in LINKS:
                r = plans[link]["rows"][i]
                best = min(r["cells"], key=lambda c: c["stepS"])
                marks = "".join(u["marker"] for u in best["uncertain"])
                kstar = f"K\\*={r['kStar']}" if r["kStar"] > 0 else "K\\*: -"
                cells.append(f"{r['best']}, {kstar}"
                             f"{' ' + marks if marks else ''} "
                             f"({1e3 * best['stepS']:.0f})")
            out.append(f"| {row['workers']} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def byteps_tables(directory: str) -> str:
    out = ["| model | link | N | ring ms | hier. ms | PS K=N/8 ms | "
           "PS vs ring | scaling eff. ring | scaling eff. PS |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for model in MODELS:
        for link in BYTEPS_LINKS:
            plan = load(os.path.join(directory,
                                     f"byteps-{model}-{link}.json"))
            for row in plan["rows"]:
                n = row["workers"]
                ring = cell(row, "ring")
                hier = cell(row, "hierarchical")
                ps = cell(row, "ps", n // GPUS_PER_NODE)
                if ring is None or ps is None or hier is None:
                    continue
                # Compute is the step less what backward does not hide.
                compute = ring["stepS"] - ring["exposedCommS"]
                out.append(
                    f"| {model} | {link_name(link)} | {n} | "
                    f"{1e3 * ring['stepS']:.1f} | {1e3 * hier['stepS']:.1f} | "
                    f"{1e3 * ps['stepS']:.1f} | "
                    f"{100 * (ring['stepS'] / ps['stepS'] - 1):+.0f}% | "
                    f"{100 * compute / ring['stepS']:.0f}% | "
                    f"{100 * compute / ps['stepS']:.0f}% |")
    return "\n".join(out) + "\n"


def plot_steps(directory: str, images: str) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plan = load(os.path.join(directory, "plan-bert-large-100gbit.json"))
    ns = [r["workers"] for r in plan["rows"]]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    series = [("ring", "ring", None), ("hd", "halving-doubling", None),
              ("hierarchical", "hierarchical", None),
              ("ps", "PS, K = N/8 (one server per node)", "node"),
              ("ps", "PS, best K", None),
              ("ps-colocated", "PS colocated, best K", None)]
    for layout, label, servers in series:
        ys = []
        for r in plan["rows"]:
            k = r["workers"] // GPUS_PER_NODE if servers == "node" else None
            c = cell(r, layout, k)
            ys.append(1e3 * c["stepS"] if c else math.nan)
        ax.plot(ns, ys, marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("workers N (GPUs, 8 per node)")
    ax.set_ylabel("simulated step, ms")
    ax.set_title("BERT-large, 100 Gbit/s per node, fp32 gradients, "
                 "defaults (not fitted)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    path = os.path.join(images, "sim-bert-large-100gbit.png")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_kstar(directory: str, images: str) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(MODELS), figsize=(13, 3.6))
    fig.subplots_adjust(wspace=0.08)
    for i, (ax, model) in enumerate(zip(axes, MODELS)):
        grid: List[List[float]] = []
        labels: List[List[str]] = []
        ns: List[int] = []
        for link in LINKS:
            plan = load(os.path.join(directory, f"plan-{model}-{link}.json"))
            ns = [r["workers"] for r in plan["rows"]]
            grid.append([math.log2(r["kStar"]) if r["kStar"] > 0 else math.nan
                         for r in plan["rows"]])
            labels.append([str(r["kStar"]) if r["kStar"] > 0 else "-"
                           for r in plan["rows"]])
        image = ax.imshow(grid, aspect="auto", cmap="viridis", vmin=0,
                          vmax=6)
        for y, row in enumerate(labels):
            for x, text in enumerate(row):
                ax.text(x, y, text, ha="center", va="center", fontsize=7,
                        color="white" if text != "-" else "black")
        ax.set_xticks(range(len(ns)), [str(n) for n in ns], fontsize=7)
        ax.set_yticks(range(len(LINKS)),
                      [link_name(name) for name in LINKS] if i == 0 else [],
                      fontsize=7)
        ax.set_xlabel("workers N (8 per node)", fontsize=8)
        ax.set_title(model, fontsize=9)
    fig.colorbar(image, ax=axes, label="log2 K*")
    fig.suptitle("K*: the fewest separate PS servers as fast as the ring "
                 "(- : none up to K = N); simulator defaults, not fitted",
                 fontsize=9)
    path = os.path.join(images, "sim-kstar-heatmap.png")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--images", default=None)
    args = parser.parse_args(argv)
    images = args.images or args.directory
    print("## K* and the best layout\n")
    print(kstar_tables(args.directory))
    print("## BytePS's comparison\n")
    print(byteps_tables(args.directory))
    for path in (plot_steps(args.directory, images),
                 plot_kstar(args.directory, images)):
        print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
