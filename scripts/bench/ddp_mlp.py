#!/usr/bin/env python3
"""The PyTorch reference for gradsync's ring training path: an MLP on
Fashion-MNIST trained data-parallel with torch DistributedDataParallel over
the Gloo backend, N processes on 127.0.0.1, measured the way
scripts/bench/train_compare.sh measures gradsync.

Same job as a gradsync spec: layer widths, global batch B (rank r takes its
contiguous share of each global batch, the first B % N ranks one more),
optimizer, seed for the data order, cross-entropy averaged over the global
batch (DDP averages the ranks' gradients), pixels standardised with the
training set's mean and deviation. One thread per process
(torch.set_num_threads(1), OMP/OpenBLAS threads 1), as gradsync runs one
BLAS thread per rank.

Timing: `--warmup` untimed steps, a barrier, then `--steps` timed steps;
samples/s = B * steps / the slowest rank's wall time of the timed steps.
Communication share = exposed communication / step time, averaged over
ranks, where exposed communication is the time from the moment backward
produced its last gradient (a hook on every parameter) to the moment
backward() returned, i.e. the wait for DDP's bucket all-reduces that did not
overlap backward (gradsync's comm_s has the same definition). `--no-sync`
trains one plain process without DDP or any process group.

  /usr/bin/python3 scripts/bench/ddp_mlp.py --ranks 4 --layers 784,256,256,10 \
      --batch-size 256 --optimizer adam --lr 1e-3 --steps 200
  ... --no-sync                      # one process, no synchronisation
  ... --epochs 10 --eval             # train to accuracy, report it
  ... --json                         # one JSON line instead of text

Needs Debian's python3-torch (/usr/bin/python3) and dataset-fashion-mnist.
Exit status 0 on success, 1 on errors.
"""

import os

# One thread per process, set before numpy/torch load their BLAS.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")

import argparse
import gzip
import json
import math
import multiprocessing
import socket
import statistics
import sys
import time
import traceback

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path, header_bytes):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=header_bytes)


def load_fashion_mnist(directory):
    """(train_x, train_y, test_x, test_y): x float32 [n, 784] standardised
    with the training set's mean and deviation, y int64."""
    def split(prefix):
        x = read_idx(os.path.join(directory, f"{prefix}-images-idx3-ubyte.gz"), 16)
        y = read_idx(os.path.join(directory, f"{prefix}-labels-idx1-ubyte.gz"), 8)
        return x.reshape(len(y), 784).astype(np.float32) / 255.0, y.astype(np.int64)

    train_x, train_y = split("train")
    test_x, test_y = split("t10k")
    mean = float(train_x.mean())
    std = float(train_x.std())
    train_x = (train_x - mean) / std
    test_x = (test_x - mean) / std
    return train_x, train_y, test_x, test_y


def share_of(total, parts, index):
    """[begin, end) of part `index` when `total` items are split into
    `parts` contiguous shares, the first total % parts one larger."""
    base, extra = divmod(total, parts)
    begin = index * base + min(index, extra)
    return begin, begin + base + (1 if index < extra else 0)


class Batches:
    """Global batch `step`: the step's slice of a per-epoch permutation of
    the training set (seeded by seed and epoch), last partial batch dropped."""

    def __init__(self, examples, batch, seed):
        self.examples = examples
        self.batch = batch
        self.seed = seed
        self.per_epoch = examples // batch
        self.epoch = -1
        self.order = None

    def indices(self, step):
        epoch, i = divmod(step, self.per_epoch)
        if epoch != self.epoch:
            rng = np.random.RandomState((self.seed * 1000003 + epoch) % 2**32)
            self.order = rng.permutation(self.examples)
            self.epoch = epoch
        return self.order[i * self.batch:(i + 1) * self.batch]


def make_mlp(layers):
    modules = []
    for i in range(len(layers) - 1):
        modules.append(nn.Linear(layers[i], layers[i + 1]))
        if i + 2 < len(layers):
            modules.append(nn.ReLU())
    return nn.Sequential(*modules)


def make_optimizer(args, params):
    if args.optimizer == "adam":
        return torch.optim.Adam(params, lr=args.lr)
    if args.optimizer == "momentum":
        return torch.optim.SGD(params, lr=args.lr, momentum=args.momentum)
    return torch.optim.SGD(params, lr=args.lr)


def evaluate(model, x, y):
    model.eval()
    correct = 0
    loss = 0.0
    with torch.no_grad():
        for begin in range(0, len(y), 1000):
            out = model(torch.from_numpy(x[begin:begin + 1000]))
            target = torch.from_numpy(y[begin:begin + 1000])
            loss += F.cross_entropy(out, target, reduction="sum").item()
            correct += (out.argmax(1) == target).sum().item()
    model.train()
    return correct / len(y), loss / len(y)


def blas_library():
    """The BLAS shared object this process mapped (Debian's torch links
    libblas.so.3, which the alternatives system points at a provider)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "blas" in line}
        return ", ".join(sorted(os.path.realpath(p) for p in paths)) or "?"
    except OSError:
        return "?"


def run_rank(rank, args, data, port, results):
    try:
        results.put(train(rank, args, data, port))
    except Exception:  # reported to the parent, which exits 1
        results.put({"rank": rank, "error": traceback.format_exc()})


def train(rank, args, data, port):
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    train_x, train_y, test_x, test_y = data
    world = args.ranks
    distributed = not args.no_sync
    if distributed:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                                rank=rank, world_size=world)
    torch.manual_seed(args.seed)
    model = make_mlp(args.layers)
    # The time backward produced each gradient; the last one ends compute.
    last_grad = [0.0]

    def mark(_grad):
        last_grad[0] = time.perf_counter()

    for p in model.parameters():
        p.register_hook(mark)
    net = model
    if distributed:
        net = nn.parallel.DistributedDataParallel(
            model, bucket_cap_mb=args.bucket_mb)
    optimizer = make_optimizer(args, net.parameters())
    batches = Batches(len(train_y), args.batch_size, args.seed)
    begin, end = share_of(args.batch_size, world, rank)
    total_steps = args.warmup + args.steps
    step_times = []
    comm_times = []
    losses = []
    t_start = None
    for step in range(total_steps):
        if step == args.warmup:
            if distributed:
                dist.barrier()
            t_start = time.perf_counter()
        t0 = time.perf_counter()
        idx = batches.indices(step)[begin:end]
        x = torch.from_numpy(train_x[idx])
        y = torch.from_numpy(train_y[idx])
        out = net(x)
        # Mean over this rank's share; DDP averages over ranks, which is the
        # global mean when the shares are equal (B divisible by N).
        loss = F.cross_entropy(out, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        t_backward = time.perf_counter()
        optimizer.step()
        t1 = time.perf_counter()
        if step >= args.warmup:
            step_times.append(t1 - t0)
            comm_times.append(max(0.0, t_backward - last_grad[0]))
        if args.log_every and (step + 1) % args.log_every == 0 and rank == 0:
            print(f"step {step + 1}/{total_steps} loss {loss.item():.4f}",
                  file=sys.stderr, flush=True)
        losses.append(loss.item() if step + 1 == total_steps else None)
    wall = time.perf_counter() - t_start if t_start is not None else 0.0
    result = {
        "rank": rank,
        "wall_s": wall,
        "step_s": step_times,
        "comm_s": comm_times,
        "final_loss": losses[-1],
    }
    if args.eval and rank == 0:
        result["test_accuracy"], result["test_loss"] = evaluate(
            model, test_x, test_y)
    if rank == 0:
        result["blas"] = blas_library()
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    return result


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_args():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--no-sync", action="store_true",
                        help="one plain process: no DDP, no process group")
    parser.add_argument("--layers", default="784,256,256,10",
                        type=lambda s: [int(w) for w in s.split(",")])
    parser.add_argument("--batch-size", type=int, default=256,
                        help="global batch, split over the ranks")
    parser.add_argument("--optimizer", choices=("sgd", "momentum", "adam"),
                        default="adam")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--steps", type=int, default=200, help="timed steps")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--epochs", type=float, default=0,
                        help="train this many epochs (timed) instead of --steps")
    parser.add_argument("--eval", action="store_true",
                        help="test accuracy at the end")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bucket-mb", type=float, default=25,
                        help="DDP bucket_cap_mb (default DDP's 25)")
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--log-every", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.no_sync:
        args.ranks = 1
    if args.ranks < 1 or args.batch_size < args.ranks:
        parser.error("need ranks >= 1 and batch-size >= ranks")
    if args.layers[0] != 784 or args.layers[-1] != 10:
        parser.error("Fashion-MNIST needs 784 inputs first and 10 classes last")
    return args


def main():
    args = parse_args()
    data = load_fashion_mnist(args.data)
    if args.epochs > 0:
        per_epoch = len(data[1]) // args.batch_size
        args.steps = max(1, math.ceil(args.epochs * per_epoch) - args.warmup)
    # Children fork after the data is loaded, so they share its pages.
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    port = free_port()
    procs = [context.Process(target=run_rank, args=(r, args, data, port, results))
             for r in range(args.ranks)]
    for p in procs:
        p.start()
    collected = []
    deadline = time.time() + 3600
    while len(collected) < args.ranks:
        try:
            collected.append(results.get(timeout=max(1.0, deadline - time.time())))
        except Exception:
            print("ddp_mlp.py: ranks did not report within an hour", file=sys.stderr)
            break
        if "error" in collected[-1]:
            break
    for p in procs:
        p.join(timeout=30)
        if p.is_alive():
            p.kill()
    errors = [r["error"] for r in collected if "error" in r]
    if errors or len(collected) < args.ranks:
        for e in errors:
            print(e, file=sys.stderr)
        return 1
    collected.sort(key=lambda r: r["rank"])
    wall = max(r["wall_s"] for r in collected)
    steps = args.steps
    comm_share = statistics.mean(
        sum(r["comm_s"]) / sum(r["step_s"]) for r in collected)
    summary = {
        "tool": "torch-ddp-gloo" if not args.no_sync else "torch-nosync",
        "ranks": args.ranks,
        "layers": args.layers,
        "batch_size": args.batch_size,
        "optimizer": args.optimizer,
        "lr": args.lr,
        "warmup": args.warmup,
        "steps": steps,
        "samples_per_s": args.batch_size * steps / wall if wall > 0 else 0.0,
        "step_ms_median": 1e3 * statistics.median(collected[0]["step_s"]),
        "comm_share": comm_share,
        "final_loss": collected[0]["final_loss"],
        "torch": torch.__version__,
        "blas": collected[0].get("blas", "?"),
    }
    if args.eval:
        summary["epochs"] = (args.warmup + steps) / (len(data[1]) // args.batch_size)
        summary["test_accuracy"] = collected[0]["test_accuracy"]
        summary["test_loss"] = collected[0]["test_loss"]
    if args.json:
        print(json.dumps(summary), flush=True)
    else:
        for key, value in summary.items():
            print(f"{key:16} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
