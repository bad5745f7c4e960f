"""torchvision's VGG-16 (138 M parameters, 528 MiB of fp32 gradient per
step), the model whose layer sizes make BytePS's case for the parameter
server: its fully connected layers hold 89% of the parameters. Trained on
synthetic 32x32 images, so that the step is the communication's:

    gradsync submit --workers 4 --mode ps --workdir examples/torch \\
        --entrypoint "python3 vgg16.py --steps 10"

On the lab (`gradsync lab up --allow-entrypoints`) it runs through
emulated links. On a 2-core machine its step is about 7 s of CPU for two
ranks, so links of 1 Gbit/s or faster are not its limit there.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
import torchvision

import gradsync.torch as gs


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=2, help="per rank")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--backend", default="gradsync")
    p.add_argument("--ps", choices=("sum", "server", "off"), default="sum",
                   help="under --mode ps: the shards average and SGD steps "
                   "on the ranks (sum), or SGD runs on the shards (server)")
    args = p.parse_args()
    torch.set_num_threads(1)
    gs.init(args.backend)
    rank = dist.get_rank()
    torch.manual_seed(1)
    model = torchvision.models.vgg16(num_classes=10)
    ddp = torch.nn.parallel.DistributedDataParallel(
        model, bucket_cap_mb=25)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr)
    if args.ps != "off":
        opt = gs.DistributedOptimizer(opt, ddp,
                                      server_side=args.ps == "server")
    g = torch.Generator().manual_seed(100 + rank)
    for step in range(args.steps):
        x = torch.randn(args.batch_size, 3, 32, 32, generator=g)
        y = torch.randint(0, 10, (args.batch_size,), generator=g)
        start = time.perf_counter()
        loss = F.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        gs.report(loss=loss.item(), samples=len(y))
        if rank == 0:
            print(f"step {step}/{args.steps} loss {loss.item():.4f} "
                  f"{time.perf_counter() - start:.2f} s", flush=True)


if __name__ == "__main__":
    main()
