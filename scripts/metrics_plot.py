#!/usr/bin/env python3
"""The step-time split of a gradsync job, per rank over its steps.

usage: metrics_plot.py METRICS.json OUT.png

METRICS.json is what `gradsync metrics JOB --plot OUT.png` writes:
{"job": <JobStatus as gradsync status JOB -o json>,
 "metrics": <gradsync metrics JOB -o json>}.
One panel per rank (the first 8): compute, exposed communication and idle
time of each step, stacked, in ms; each switch between the ring and the
parameter server the ranks made (JobStatus.switches) is a dashed line at its
step. Needs python3-matplotlib (Debian). Run by `gradsync metrics --plot`.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MAX_PANELS = 8
MODES = {"SYNC_MODE_PS": "ps", "SYNC_MODE_RING": "ring",
         "SYNC_MODE_UNSPECIFIED": "ring"}


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        data = json.load(f)
    job = data.get("job", {})
    steps = data.get("metrics", {}).get("metrics", [])
    by_rank = {}
    for m in steps:
        by_rank.setdefault(int(m.get("rank", 0)), []).append(m)
    if not by_rank:
        sys.stderr.write("metrics_plot.py: the job has no step metrics yet\n")
        return 1
    ranks = sorted(by_rank)[:MAX_PANELS]
    fig, axes = plt.subplots(len(ranks), 1, sharex=True, squeeze=False,
                             figsize=(8, 1.2 + 1.8 * len(ranks)))
    switches = job.get("switches", [])
    for ax, rank in zip(axes[:, 0], ranks):
        rows = sorted(by_rank[rank], key=lambda m: int(m.get("step", 0)))
        x = [int(m.get("step", 0)) for m in rows]
        parts = [[1e3 * float(m.get(key, 0)) for m in rows]
                 for key in ("computeS", "commS", "idleS")]
        ax.stackplot(x, parts, labels=["compute", "comm (exposed)", "idle"],
                     colors=["C2", "C0", "C7"], step="mid", alpha=0.85)
        for s in switches:
            ax.axvline(int(s.get("step", 0)), color="C3", ls="--", lw=1)
        ax.set_ylabel("rank %d\nms/step" % rank)
        ax.grid(alpha=0.3)
    top = axes[0, 0]
    for s in switches:
        top.annotate("%s -> %s" % (MODES.get(s.get("fromMode"), "ring"),
                                   MODES.get(s.get("toMode"), "ring")),
                     (int(s.get("step", 0)), 1.0), xycoords=("data",
                                                             "axes fraction"),
                     xytext=(3, -12), textcoords="offset points",
                     color="C3", fontsize=8)
    top.legend(fontsize=8, loc="upper right")
    top.set_title("job %s: step time per rank" % job.get("jobId", "?"))
    axes[-1, 0].set_xlabel("step")
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
