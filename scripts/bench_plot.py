#!/usr/bin/env python3
"""busbw against message size from `gradsync bench --json` runs.

usage: bench_plot.py OUT.png RUN.jsonl... [--link-gbps B]

Each RUN.jsonl holds the JSON lines of one `gradsync bench ... --json` run
(or the rows `gradsync bench --plot` collects); each backend (with its
algorithm and shard count) is one line of out-of-place busbw against size,
and --link-gbps B draws the ideal: busbw reaches the link's bandwidth B when
the busiest link is always busy (nccl-tests' definition). Needs
python3-matplotlib (Debian). Run by `gradsync bench --plot`.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def label(row):
    name = row.get("backend", "?")
    if row.get("algo") and row.get("backend") == "ring":
        name += " (%s)" % row["algo"]
    if row.get("shards"):
        name += ", %d shards" % row["shards"]
    return "%s, %d ranks" % (name, row.get("ranks", 0))


def size_label(b):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= scale:
            return "%g%s" % (b / scale, unit)
    return "%d" % b


def main(argv):
    args = argv[1:]
    link = None
    if "--link-gbps" in args:
        i = args.index("--link-gbps")
        if i + 1 >= len(args):
            sys.stderr.write(__doc__)
            return 2
        link = float(args[i + 1])
        del args[i:i + 2]
    if len(args) < 2:
        sys.stderr.write(__doc__)
        return 2
    out, runs = args[0], args[1:]
    series = {}
    for run in runs:
        with open(run) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                row = json.loads(line)
                if "size" not in row or not row.get("out_of_place"):
                    continue  # the summary line
                series.setdefault(label(row), []).append(
                    (int(row["size"]), float(row["out_of_place"]["busbw"])))
    if not series:
        sys.stderr.write("bench_plot.py: no result rows in %s\n" %
                         ", ".join(runs))
        return 1
    fig, ax = plt.subplots(figsize=(7, 4.5))
    sizes = set()
    for name, points in sorted(series.items()):
        points.sort()
        sizes.update(p[0] for p in points)
        ax.plot([p[0] for p in points], [p[1] for p in points], "o-",
                label=name)
    if link:
        ax.axhline(link, color="grey", ls="--",
                   label="ideal busbw (link %.2f GB/s)" % link)
    ax.set_xscale("log", base=2)
    ticks = sorted(sizes)
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(t) for t in ticks], rotation=45,
                       fontsize=8)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title("gradsync bench: bus bandwidth against size")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
