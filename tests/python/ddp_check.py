"""A gradsync entrypoint that checks itself: the Store contract through
the coordinator, the gradsync backend's collectives on exact values, then
a small DistributedDataParallel run whose per-step losses and parameter
digests it writes for the test to compare with a one-rank run. With
--wrap sum|server the optimizer goes through gs.DistributedOptimizer
(the job's ring or PS, sum-only or server-side), and each step's path is
written too.

Run by tests/python/torch_entrypoint_e2e.sh, under `gradsync submit
--entrypoint`, or alone (one rank, no gradsync cluster) for the baseline.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import os
import pathlib
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import gradsync.torch as gs


def check_store(rank: int, world: int) -> None:
    """set/get/add/wait and timeouts, across ranks, through the store
    torch itself holds (the default group's PrefixStore over ours)."""
    store = dist.distributed_c10d._get_default_store()
    store.set(f"from/{rank}", f"hello {rank}".encode())
    for peer in range(world):
        got = store.get(f"from/{peer}")
        assert got == f"hello {peer}".encode(), (peer, got)
    assert store.add("counter", 1) >= 1
    store.wait([f"from/{p}" for p in range(world)])
    start = time.monotonic()
    try:
        store.wait(["never/set"], datetime.timedelta(milliseconds=300))
        raise AssertionError("wait on a missing key returned")
    except RuntimeError as e:
        assert "Timeout" in str(e) or "timeout" in str(e).lower(), e
    assert time.monotonic() - start < 10
    dist.barrier()
    assert store.add("counter", 0) == world, store.add("counter", 0)


def check_collectives(rank: int, world: int) -> None:
    """Exact results on integer-valued data, against a naive reduction."""
    for dtype in (torch.float32, torch.float64, torch.int32):
        for n in (0, 1, world - 1 if world > 1 else 1, 1000, 65537):
            base = [torch.arange(n, dtype=torch.int64) * (r + 1) + r
                    for r in range(world)]
            t = base[rank].to(dtype)
            dist.all_reduce(t)
            want = sum(base).to(dtype)
            assert torch.equal(t, want), (dtype, n, "sum")
            t = base[rank].to(dtype)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            assert torch.equal(t, base[world - 1].to(dtype)), (dtype, n)
            t = base[rank].to(dtype)
            dist.all_reduce(t, op=dist.ReduceOp.MIN)
            assert torch.equal(t, base[0].to(dtype)), (dtype, n)
    t = torch.full((7,), float(rank))
    dist.broadcast(t, src=world - 1)
    assert torch.equal(t, torch.full((7,), float(world - 1)))
    outs = [torch.zeros(3) for _ in range(world)]
    dist.all_gather(outs, torch.full((3,), float(rank)))
    for r, o in enumerate(outs):
        assert torch.equal(o, torch.full((3,), float(r))), (r, o)
    work = dist.all_reduce(torch.ones(4), async_op=True)
    assert work.get_future().wait()[0].sum().item() == 4 * world
    try:
        dist.all_reduce(torch.ones(2, dtype=torch.int8))
        raise AssertionError("int8 all-reduce did not raise")
    except (ValueError, RuntimeError) as e:
        assert "int8" in str(e), e


def digest(model: nn.Module) -> str:
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().numpy().tobytes())
    return h.hexdigest()[:16]


def train(args, rank: int, world: int, out: pathlib.Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, args.hidden), nn.Tanh(),
                          nn.Linear(args.hidden, 4))
    ddp = nn.parallel.DistributedDataParallel(model)
    if args.opt == "adam":
        opt = torch.optim.Adam(ddp.parameters(), lr=0.01)
    else:
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    wrapped = None
    if args.wrap != "none":
        wrapped = gs.DistributedOptimizer(opt, ddp,
                                          server_side=args.wrap == "server")
        opt = wrapped
    sched = torch.optim.lr_scheduler.StepLR(
        wrapped.optimizer if wrapped else opt, step_size=20, gamma=0.5)
    paths = []
    batch = args.batch
    share = batch // world
    losses, digests = [], []
    for step in range(args.steps):
        if step == args.fail_at and rank == args.fail_rank:
            raise ValueError(f"boom at step {step} on rank {rank}")
        g = torch.Generator().manual_seed(1000 + step)
        x = torch.randn(batch, 16, generator=g)
        y = torch.randint(0, 4, (batch,), generator=g)
        xs = x[rank * share:(rank + 1) * share]
        ys = y[rank * share:(rank + 1) * share]
        loss = F.cross_entropy(ddp(xs), ys)
        opt.zero_grad()
        if wrapped is not None:
            paths.append(wrapped.path)
        loss.backward()
        opt.step()
        sched.step()
        mean = loss.detach().clone()
        if not args.no_loss_sync:
            dist.all_reduce(mean)
            mean /= world
        losses.append(f"{mean.item():.9g}")
        digests.append(digest(model))
        gs.report(loss=mean.item(), samples=share)
        if args.sleep:
            time.sleep(args.sleep)
    (out / f"loss.{rank}").write_text("\n".join(losses) + "\n")
    (out / f"params.{rank}").write_text("\n".join(digests) + "\n")
    if paths:
        (out / f"path.{rank}").write_text("\n".join(paths) + "\n")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--fail-at", type=int, default=-1)
    p.add_argument("--fail-rank", type=int, default=-1)
    p.add_argument("--sleep", type=float, default=0.0)
    p.add_argument("--skip-checks", action="store_true")
    p.add_argument("--wrap", choices=("none", "sum", "server"),
                   default="none")
    p.add_argument("--opt", choices=("sgd", "adam"), default="sgd")
    p.add_argument("--hidden", type=int, default=32,
                   help="the hidden layer's width (wide: communication-bound)")
    p.add_argument("--no-loss-sync", action="store_true",
                   help="no all-reduce of the loss: each step's only "
                   "collectives are DDP's buckets (the loss files hold "
                   "each rank's own loss)")
    p.add_argument("--fail-first-run", action="store_true",
                   help="rank 1 fails unless TORCHELASTIC_RESTART_COUNT > 0")
    args = p.parse_args()
    torch.set_num_threads(1)
    gs.init()
    rank, world = dist.get_rank(), dist.get_world_size()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"pid.{rank}").write_text(str(os.getpid()))
    print(f"rank {rank} of {world}: backend {dist.get_backend()}", flush=True)
    if not args.skip_checks:
        check_store(rank, world)
        check_collectives(rank, world)
        print(f"rank {rank}: store and collectives exact", flush=True)
    if (args.fail_first_run and rank == 1
            and os.environ.get("TORCHELASTIC_RESTART_COUNT") == "0"):
        raise RuntimeError("first run fails on purpose")
    train(args, rank, world, out)
    print(f"rank {rank}: trained {args.steps} steps", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
