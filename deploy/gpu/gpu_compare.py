#!/usr/bin/env python3
"""The numbers of the GPU bundle's run (deploy/gpu/run_bundle.sh), each as a
markdown table for its summary, and the checks on them.

  nccl     gradsync's NCCL all-reduce table against raw ncclAllReduce's
           (gradsync-nccl-raw), size by size: the per-call time of each,
           the best of the rounds given, and what gradsync adds, in us and
           in %. Fails (exit 1) when it adds more than --max-overhead.
  torch    the PyTorch side of the MLP comparison: the same MLP, batch,
           optimizer and data as the gradsync job, on one CUDA device,
           timed like gradsync's steps. Prints one JSON line.
  mlp      the gradsync CUDA MLP job's step time and samples/s (from
           `gradsync metrics JOB --format csv`) next to the torch line.
           Fails (exit 1) when gradsync is slower than --max-ratio times
           PyTorch.

  gpu_compare.py nccl --gradsync g1.txt g2.txt --raw r1.txt r2.txt
  gpu_compare.py torch --data DIR --layers 784,1024,1024,10 --batch-size 256 \\
      --warmup 20 --steps 200 > torch.json
  gpu_compare.py mlp --csv job.csv --warmup 20 --steps 200 --torch torch.json

`torch` needs PyTorch with CUDA; the others only the standard library. The
data loading and the model come from scripts/bench/ddp_mlp.py (the CPU
comparison with DDP), found beside this file or in the repository.
"""

import argparse
import csv
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def read_table(path):
    """{size: (out-of-place us, in-place us)} from an nccl-tests table: the
    rows are size count type redop root time algbw busbw #wrong time ..."""
    rows = {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) < 13 or not fields[0].isdigit():
                continue
            rows[int(fields[0])] = (float(fields[5]), float(fields[9]))
    return rows


def best_of(paths):
    """Per size and pass, the smallest time over the tables given."""
    best = {}
    for path in paths:
        for size, times in read_table(path).items():
            old = best.get(size, (float("inf"), float("inf")))
            best[size] = (min(old[0], times[0]), min(old[1], times[1]))
    return best


def human(size):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def cmd_nccl(args):
    gradsync = best_of(args.gradsync)
    raw = best_of(args.raw)
    sizes = sorted(set(gradsync) & set(raw))
    missing = sorted(set(gradsync) ^ set(raw))
    print(f"Best of {len(args.gradsync)} rounds each; time per call, each "
          "call waited for (us); gradsync adds = gradsync / raw - 1.\n")
    print("| size | raw out-of-place | gradsync out-of-place | adds "
          "| raw in-place | gradsync in-place | adds |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    worst = 0.0
    for size in sizes:
        cells = [human(size)]
        for i in (0, 1):
            r, g = raw[size][i], gradsync[size][i]
            ratio = g / r - 1.0 if r > 0 else float("inf")
            worst = max(worst, ratio)
            cells += [f"{r:.2f}", f"{g:.2f}",
                      f"{100 * ratio:+.1f}% ({g - r:+.2f} us)"]
        print("| " + " | ".join(cells) + " |")
    ok = bool(sizes) and not missing and worst <= args.max_overhead
    print(f"\nLargest addition {100 * worst:+.1f}% (limit "
          f"{100 * args.max_overhead:.0f}%): {'PASS' if ok else 'FAIL'}")
    if not sizes:
        print("no size in both tables: see the logs")
    if missing:
        print(f"sizes in only one table: {', '.join(map(human, missing))}")
    return 0 if ok else 1


def import_ddp_mlp():
    for where in (HERE, os.path.join(HERE, "..", "..", "scripts", "bench")):
        if os.path.exists(os.path.join(where, "ddp_mlp.py")):
            sys.path.insert(0, where)
            break
    import ddp_mlp  # noqa: E402 (located above)
    return ddp_mlp


def cmd_torch(args):
    ddp_mlp = import_ddp_mlp()
    import torch
    import torch.nn.functional as F

    if not torch.cuda.is_available() and args.device.startswith("cuda"):
        print("gpu_compare.py torch: PyTorch sees no CUDA device",
              file=sys.stderr)
        return 1
    device = torch.device(args.device)
    train_x, train_y, _, _ = ddp_mlp.load_fashion_mnist(args.data)
    torch.manual_seed(args.seed)
    model = ddp_mlp.make_mlp(args.layers).to(device)
    optimizer = ddp_mlp.make_optimizer(args, model.parameters())
    batches = ddp_mlp.Batches(len(train_y), args.batch_size, args.seed)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def step(i):
        idx = batches.indices(i)
        # Host batches copied to the device each step, as gradsync's ranks
        # take theirs from host memory.
        x = torch.from_numpy(train_x[idx]).to(device)
        y = torch.from_numpy(train_y[idx]).to(device)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss

    for i in range(args.warmup):
        step(i)
    sync()
    # Synchronised every step, as gradsync's step ends when its update is
    # done (it reports the step's loss and parameter hash).
    times = []
    start = time.perf_counter()
    for i in range(args.warmup, args.warmup + args.steps):
        t0 = time.perf_counter()
        step(i)
        sync()
        times.append(time.perf_counter() - t0)
    wall = time.perf_counter() - start
    # The same steps enqueued back to back, synchronised once: PyTorch's
    # best case, for reference.
    start = time.perf_counter()
    for i in range(args.warmup + args.steps, args.warmup + 2 * args.steps):
        loss = step(i)
    sync()
    unsynced = time.perf_counter() - start
    print(json.dumps({
        "tool": "torch", "torch": torch.__version__,
        "device": (torch.cuda.get_device_name(device)
                   if device.type == "cuda" else "cpu"),
        "layers": args.layers, "batch_size": args.batch_size,
        "optimizer": args.optimizer, "warmup": args.warmup,
        "steps": args.steps,
        "step_ms_median": 1e3 * statistics.median(times),
        "samples_per_s": args.batch_size * args.steps / wall,
        "unsynced_samples_per_s": args.batch_size * args.steps / unsynced,
        "final_loss": float(loss.item()),
    }))
    return 0


def gradsync_summary(path, warmup, steps):
    """Median step time (rank 0) and samples/s over steps [warmup, warmup +
    steps) from a `gradsync metrics --format csv` file: samples/s from the
    step end times, as scripts/bench/train_compare.sh computes it."""
    end, step_s, batch = {}, [], 0
    with open(path) as f:
        for row in csv.DictReader(f):
            s = int(row["step"])
            end[s] = max(end.get(s, 0.0), float(row["wall_time"]))
            if warmup <= s < warmup + steps and row["rank"] == "0":
                step_s.append(float(row["step_s"]))
            if s == 0:
                batch += int(row["samples"])
    first, last = warmup - 1, warmup + steps - 1
    if first not in end or last not in end or not step_s:
        raise ValueError(f"{path} lacks steps {first} to {last}")
    return {
        "step_ms_median": 1e3 * statistics.median(step_s),
        "samples_per_s": batch * steps / (end[last] - end[first]),
        "batch_size": batch,
    }


def cmd_mlp(args):
    g = gradsync_summary(args.csv, args.warmup, args.steps)
    with open(args.torch) as f:
        t = json.loads(f.read().strip().splitlines()[-1])
    ratio = t["samples_per_s"] / g["samples_per_s"]
    print(f"MLP {','.join(map(str, t['layers']))}, batch {t['batch_size']}, "
          f"{t['optimizer']}, {args.steps} timed steps after {args.warmup}, "
          f"on {t['device']} (PyTorch {t['torch']}).\n")
    print("| | step time (median) | samples/s |")
    print("| --- | ---: | ---: |")
    print(f"| gradsync job, 1 rank (on a GPU: the CUDA MLP, NCCL ring) | "
          f"{g['step_ms_median']:.3f} ms | {g['samples_per_s']:.0f} |")
    print(f"| PyTorch, synchronised every step | {t['step_ms_median']:.3f} ms "
          f"| {t['samples_per_s']:.0f} |")
    print(f"| PyTorch, synchronised once (reference) | | "
          f"{t['unsynced_samples_per_s']:.0f} |")
    ok = ratio <= args.max_ratio
    print(f"\ngradsync takes {ratio:.2f}x PyTorch's time per sample (goal "
          f"<= {args.max_ratio:.1f}x): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("nccl")
    p.add_argument("--gradsync", nargs="+", required=True)
    p.add_argument("--raw", nargs="+", required=True)
    p.add_argument("--max-overhead", type=float, default=0.05)
    p = sub.add_parser("torch")
    p.add_argument("--data", required=True)
    p.add_argument("--layers", default="784,1024,1024,10",
                   type=lambda s: [int(w) for w in s.split(",")])
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--optimizer", choices=("sgd", "momentum", "adam"),
                   default="adam")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="cuda:0")
    p = sub.add_parser("mlp")
    p.add_argument("--csv", required=True)
    p.add_argument("--torch", required=True)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--max-ratio", type=float, default=1.2)
    args = parser.parse_args()
    try:
        return {"nccl": cmd_nccl, "torch": cmd_torch, "mlp": cmd_mlp}[
            args.command](args)
    except (OSError, ValueError, KeyError) as e:
        print(f"gpu_compare.py {args.command}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
