"""Example (b): torchvision's ResNet-18 on Fashion-MNIST resized to 32x32
(one input channel, 10 classes), data-parallel on gradsync:

    gradsync submit --workers 4 --workdir examples/torch \\
        --entrypoint "python3 resnet18.py --steps 200"

A real model whose 11.2 M parameters make the step communication-heavy on
CPU ranks: the case the parameter-server study is about.
"""

from __future__ import annotations

import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torchvision

import fashion_mnist
import gradsync.torch as gs


def make_model() -> nn.Module:
    model = torchvision.models.resnet18(num_classes=10)
    # 1 channel, and a 3x3 stem without the max-pool for 32x32 inputs.
    model.conv1 = nn.Conv2d(1, 64, 3, 1, 1, bias=False)
    model.maxpool = nn.Identity()
    return model


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--backend", default="gradsync")
    p.add_argument("--ps", choices=("sum", "server", "off"), default="sum",
                   help="under --mode ps: the shards average and this "
                   "optimizer steps (sum), or the optimizer runs on the "
                   "shards (server); off: DDP's own all-reduce, ring only")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    gs.init(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1)
    model = make_model()
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    if args.ps != "off":  # the job's ring or PS, and its switches
        opt = gs.DistributedOptimizer(opt, ddp,
                                      server_side=args.ps == "server")
    images, labels = fashion_mnist.load(train=True)
    images = F.interpolate(images, size=32, mode="bilinear",
                           align_corners=False)
    step, epoch = 0, 0
    while step < args.steps:
        for x, y in fashion_mnist.batches(images, labels, args.batch_size,
                                          rank, world, epoch):
            loss = F.cross_entropy(ddp(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            gs.report(loss=loss.item(), samples=len(y))
            if rank == 0 and step % 10 == 0:
                print(f"step {step}/{args.steps} loss {loss.item():.4f}",
                      flush=True)
            step += 1
            if step == args.steps:
                break
        epoch += 1
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
