#!/usr/bin/env python3
"""All-reduce bandwidth of torch.distributed's Gloo backend, measured the
way `gradsync bench allreduce` measures it, for side-by-side comparisons
(scripts/bench/compare.sh).

N processes on 127.0.0.1 rendezvous over TCP. At each size S (bytes of
fp32): `-w` untimed all-reduces, a barrier, `-n` timed ones; the time is the
maximum over ranks of each rank's average, algbw = S / time and
busbw = algbw * 2(N-1)/N (nccl-tests' definitions). Inputs are verifiable
as in gradsync (rank r's element i is (r+1) * P(i), P(i) in [1, 16]), and a
final all-reduce is checked element by element (#wrong). torch's all_reduce
works in place, so only the in-place columns are measured.

  /usr/bin/python3 scripts/bench/gloo_allreduce.py --ranks 4 -b 1M -e 256M
  ... --json   # JSON lines in gradsync's schema instead of the table

Needs Debian's python3-torch (/usr/bin/python3). Exit status, as gradsync
bench's: 0 when every element was right, 1 on wrong elements or errors, 2 on
a bad command line (argparse's).
"""

import argparse
import datetime
import json
import os
import re
import socket
import sys
import time


def parse_size(text):
    """'512', '64K', '1M', '2G' (powers of 1024) -> bytes."""
    match = re.fullmatch(r"(\d+)([KkMmGg]?)(i?[Bb])?", text)
    if not match:
        raise argparse.ArgumentTypeError(
            f"size '{text}' is not a byte count such as 4096, 64K, 1M, 2G")
    shift = {"": 0, "k": 10, "m": 20, "g": 30}[match.group(2).lower()]
    return int(match.group(1)) << shift


def sweep(min_bytes, max_bytes, factor):
    sizes = []
    size = min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= factor
    return sizes


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pattern(torch, count):
    """P(i) = 1 + top 4 bits of the 32-bit product i * 2654435761."""
    index = torch.arange(count, dtype=torch.int64)
    return (((index * 2654435761) & 0xFFFFFFFF) >> 28) + 1


def run_rank(rank, world, port, args, queue):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
        world_size=world, timeout=datetime.timedelta(seconds=args.timeout))
    results = []
    buf = torch.empty(args.max_bytes // 4, dtype=torch.float32)
    for size in sweep(args.min_bytes, args.max_bytes, args.factor):
        count = size // 4
        t = buf[:count]
        p = pattern(torch, count).to(torch.float32)
        t.copy_(p * (rank + 1))
        for _ in range(args.warmup):
            dist.all_reduce(t)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(args.iters):
            dist.all_reduce(t)
        elapsed = (time.perf_counter() - start) / args.iters
        slowest = torch.tensor([elapsed], dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        seconds = slowest.item()
        wrong = -1
        if args.check:
            t.copy_(p * (rank + 1))
            dist.all_reduce(t)
            expected = p * (world * (world + 1) / 2)
            local = torch.tensor([float((t != expected).sum().item())],
                                 dtype=torch.float64)
            dist.all_reduce(local)
            wrong = int(local.item())
        algbw = size / 1e9 / seconds if seconds > 0 else 0.0
        busbw = algbw * 2 * (world - 1) / world
        results.append((count * 4, count, seconds * 1e6, algbw, busbw, wrong))
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        queue.put(results)


def print_report(results, world, args):
    if args.json:
        for size, count, time_us, algbw, busbw, wrong in results:
            row = {
                "collective": "allreduce", "backend": "gloo", "algo": "torch",
                "ranks": world, "size": size, "count": count,
                "type": "float", "redop": "sum", "root": -1,
                "out_of_place": None,
                "in_place": {"time_us": time_us, "algbw": algbw,
                             "busbw": busbw,
                             "wrong": None if wrong < 0 else wrong},
            }
            print(json.dumps(row, separators=(",", ":")))
        return
    print(f"# torch.distributed gloo allreduce: {world} ranks, "
          f"warmup iters: {args.warmup} iters: {args.iters}")
    print("#" + " " * 51 + "        in-place")
    print("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s" % (
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
        "#wrong"))
    for size, count, time_us, algbw, busbw, wrong in results:
        print("%12d  %12d  %8s  %6s  %6d  %7.1f  %6.2f  %6.2f  %6s" % (
            size, count, "float", "sum", -1, time_us, algbw, busbw,
            "N/A" if wrong < 0 else wrong))
    total = sum(r[5] for r in results if r[5] > 0)
    print(f"# Out of bounds values : {total} {'OK' if total == 0 else 'FAILED'}")
    avg = sum(r[4] for r in results) / max(len(results), 1)
    print(f"# Avg bus bandwidth : {avg:g}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("-b", "--minbytes", dest="min_bytes", type=parse_size,
                        default=parse_size("1M"))
    parser.add_argument("-e", "--maxbytes", dest="max_bytes", type=parse_size,
                        default=parse_size("64M"))
    parser.add_argument("-f", "--stepfactor", dest="factor", type=int,
                        default=2)
    parser.add_argument("-n", "--iters", type=int, default=20)
    parser.add_argument("-w", "--warmup_iters", dest="warmup", type=int,
                        default=5)
    parser.add_argument("-c", "--check", type=int, choices=(0, 1), default=1)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.min_bytes < 4 or args.min_bytes > args.max_bytes:
        parser.error("need 4 <= -b <= -e")
    if args.factor < 2 or args.iters < 1 or args.warmup < 0:
        parser.error("need -f >= 2, -n >= 1, -w >= 0")

    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    port = free_port()
    procs = [ctx.Process(target=run_rank, args=(r, args.ranks, port, args,
                                                queue))
             for r in range(args.ranks)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    failed = [r for r, p in enumerate(procs) if p.exitcode != 0]
    if failed:
        print(f"gloo_allreduce: ranks {failed} failed", file=sys.stderr)
        return 1
    results = queue.get()
    print_report(results, args.ranks, args)
    return 1 if any(r[5] > 0 for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
