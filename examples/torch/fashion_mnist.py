"""Fashion-MNIST from Debian's dataset-fashion-mnist package, as tensors.

Shared by the examples; nothing is downloaded. ``DATA`` (the examples'
``--data``) may name another folder of the same IDX files, such as the
GPU bundle's subset. Each rank takes its own
slice of every global batch (DistributedSampler's contract without its
shuffling), so that N ranks see what one process with the global batch
would.
"""

from __future__ import annotations

import gzip
import pathlib
from typing import Iterator, Tuple

import torch

DATA = pathlib.Path("/usr/share/datasets/fashion-mnist")


def _idx(path: pathlib.Path) -> torch.Tensor:
    raw = gzip.open(path, "rb").read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big")
             for i in range(dims)]
    return torch.frombuffer(bytearray(raw[4 + 4 * dims:]),
                            dtype=torch.uint8).reshape(shape)


def load(train: bool = True) -> Tuple[torch.Tensor, torch.Tensor]:
    """Images as float32 in [0, 1], shape (n, 1, 28, 28), and labels."""
    prefix = "train" if train else "t10k"
    images = _idx(DATA / f"{prefix}-images-idx3-ubyte.gz")
    labels = _idx(DATA / f"{prefix}-labels-idx1-ubyte.gz")
    return images.float().div_(255).unsqueeze(1), labels.long()


def batches(images: torch.Tensor, labels: torch.Tensor, global_batch: int,
            rank: int, world: int, epoch: int, seed: int = 0
            ) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
    """This rank's share of each global batch of one shuffled epoch."""
    g = torch.Generator().manual_seed(seed + epoch)
    order = torch.randperm(len(labels), generator=g)
    share = global_batch // world
    for start in range(0, len(order) - global_batch + 1, global_batch):
        idx = order[start + rank * share:start + (rank + 1) * share]
        yield images[idx], labels[idx]
