"""Example (c): a small transformer language model (nn.TransformerEncoder
with a causal mask) on synthetic tokens, data-parallel on gradsync:

    gradsync submit --workers 4 --workdir examples/torch \\
        --entrypoint "python3 transformer_lm.py --steps 100"

The tokens come from a fixed random bigram table, so the loss has a floor
well below log(vocab) that the model can learn towards.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import gradsync.torch as gs


class TinyLM(nn.Module):
    def __init__(self, vocab: int, dim: int, layers: int, heads: int,
                 context: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Parameter(torch.zeros(context, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(dim, vocab)
        mask = torch.triu(torch.full((context, context), float("-inf")), 1)
        self.register_buffer("mask", mask)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        n = tokens.shape[1]
        h = self.embed(tokens) + self.position[:n]
        return self.head(self.encoder(h, mask=self.mask[:n, :n]))


def bigram_batch(table: torch.Tensor, batch: int, context: int,
                 g: torch.Generator) -> torch.Tensor:
    tokens = torch.empty(batch, context + 1, dtype=torch.long)
    tokens[:, 0] = torch.randint(0, table.shape[0], (batch,), generator=g)
    for t in range(context):
        tokens[:, t + 1] = torch.multinomial(table[tokens[:, t]], 1,
                                             generator=g).squeeze(1)
    return tokens


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--backend", default="gradsync")
    p.add_argument("--ps", choices=("sum", "server", "off"), default="sum",
                   help="under --mode ps: the shards average and this "
                   "optimizer steps (sum), or the optimizer runs on the "
                   "shards (server); off: DDP's own all-reduce, ring only")
    args = p.parse_args()
    torch.set_num_threads(1)
    gs.init(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    table_gen = torch.Generator().manual_seed(7)
    table = torch.rand(args.vocab, args.vocab, generator=table_gen) ** 8
    table /= table.sum(1, keepdim=True)
    torch.manual_seed(1)
    model = TinyLM(args.vocab, args.dim, args.layers, 4, args.context)
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-4)
    if args.ps != "off":  # the job's ring or PS, and its switches
        opt = gs.DistributedOptimizer(opt, ddp,
                                      server_side=args.ps == "server")
    share = args.batch_size // world
    for step in range(args.steps):
        g = torch.Generator().manual_seed(1000 * step + rank)
        tokens = bigram_batch(table, share, args.context, g)
        logits = ddp(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, args.vocab),
                               tokens[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        gs.report(loss=loss.item(), samples=share)
        if rank == 0 and step % 10 == 0:
            print(f"step {step}/{args.steps} loss {loss.item():.4f} "
                  f"(uniform: {math.log(args.vocab):.2f})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
