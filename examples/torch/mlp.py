"""Example (a): the Fashion-MNIST MLP in PyTorch, beside gradsync's
built-in one (784-256-256-10, Adam), on any number of ranks:

    gradsync submit --workers 4 --workdir examples/torch \\
        --entrypoint "python3 mlp.py --epochs 1"

The gradsync lines are marked: three for the ring, a fourth for the
parameter server and the runtime switch (``--mode ps``, ``gradsync switch``).
"""

from __future__ import annotations

import argparse
import pathlib

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import fashion_mnist
import gradsync.torch as gs  # gradsync 1/4


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=float, default=1)
    p.add_argument("--steps", type=int, default=0,
                   help="stop after this many steps (0: --epochs decides)")
    p.add_argument("--data", default="",
                   help="a folder of Fashion-MNIST's IDX files (default: "
                   "Debian's dataset-fashion-mnist)")
    p.add_argument("--device", default="",
                   help="cpu, cuda, cuda:N (default: the device the "
                   "gradsync daemon gave this rank, else cpu)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--backend", default="gradsync")
    p.add_argument("--ps", choices=("sum", "server", "off"), default="sum",
                   help="under --mode ps: the shards average and this "
                   "optimizer steps (sum), or the optimizer runs on the "
                   "shards (server); off: DDP's own all-reduce, ring only")
    args = p.parse_args()
    torch.set_num_threads(1)
    gs.init(args.backend)  # gradsync 2/4
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1)
    device = torch.device(args.device or gs.device())
    if device.type == "cpu":
        device = torch.device("cpu")  # a daemon's cpu:N is one CPU
    elif device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                          nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to(device)
    ddp = nn.parallel.DistributedDataParallel(
        model, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.Adam(ddp.parameters(), lr=args.lr)
    if args.ps != "off":  # gradsync 3/4: the job's ring or PS, switches
        opt = gs.DistributedOptimizer(opt, ddp,
                                      server_side=args.ps == "server")
    if args.data:
        fashion_mnist.DATA = pathlib.Path(args.data)
    images, labels = fashion_mnist.load(train=True)
    steps_per_epoch = len(labels) // args.batch_size
    total = args.steps or int(args.epochs * steps_per_epoch)
    step = 0
    epoch = 0
    while step < total:
        for x, y in fashion_mnist.batches(images, labels, args.batch_size,
                                          rank, world, epoch):
            x, y = x.to(device), y.to(device)
            loss = F.cross_entropy(ddp(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            gs.report(loss=loss.item(), samples=len(y))  # gradsync 4/4
            if rank == 0 and step % 50 == 0:
                print(f"step {step}/{total} loss {loss.item():.4f}",
                      flush=True)
            step += 1
            if step == total:
                break
        epoch += 1
    if rank == 0:
        test_x, test_y = fashion_mnist.load(train=False)
        with torch.no_grad():
            accuracy = (model(test_x.to(device)).argmax(1).cpu()
                        == test_y).float().mean()
        print(f"test accuracy {accuracy.item():.4f} after {total} steps "
              f"on {device}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
