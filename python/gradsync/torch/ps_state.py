"""What the PS path of gradsync.torch.ps moves between torch and the
shards: the flat layout of a model's trainable parameters, the shards'
optimizer for a torch optimizer, and that optimizer's state as the flat
buffers of common/optimizer.h (momentum buffers; Adam's moments and step).
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import torch

from gradsync import _capi


def ps_optimizer(opt: torch.optim.Optimizer,
                  server_side: bool) -> _capi.PsOptimizer:
    """The shards' optimizer: "sum", or the torch optimizer's own rule."""
    spec = _capi.PsOptimizer(name=b"sum", lr=0.0, beta1=0.9, beta2=0.999,
                             eps=1e-8, momentum=0.9)
    if not server_side:
        return spec
    if len(opt.param_groups) != 1:
        raise ValueError(
            "the server-side PS runs one param group; this optimizer has "
            f"{len(opt.param_groups)} (use the sum-only PS: "
            "server_side=False)")
    group = opt.param_groups[0]
    if group.get("maximize", False) or group.get("amsgrad", False):
        raise ValueError("the server-side PS has no maximize or amsgrad; "
                         "use the sum-only PS (server_side=False)")
    spec.lr = float(group["lr"])
    spec.weight_decay = float(group.get("weight_decay", 0.0))
    if isinstance(opt, torch.optim.AdamW):
        spec.name = b"adamw"
    elif isinstance(opt, torch.optim.Adam):
        spec.name = b"adam"
    elif isinstance(opt, torch.optim.SGD):
        momentum = float(group.get("momentum", 0.0))
        spec.name = b"momentum" if momentum > 0 else b"sgd"
        if momentum > 0:
            spec.momentum = momentum
            spec.dampening = float(group.get("dampening", 0.0))
            spec.nesterov = int(bool(group.get("nesterov", False)))
    else:
        raise ValueError(
            f"the server-side PS runs SGD, Adam or AdamW, not "
            f"{type(opt).__name__}; use the sum-only PS (server_side=False)")
    if spec.name in (b"adam", b"adamw"):
        spec.beta1, spec.beta2 = (float(b) for b in group["betas"])
        spec.eps = float(group["eps"])
    return spec


class Layout:
    """Where each parameter's gradient lives in the flat vector."""

    def __init__(self, params: List[torch.Tensor]) -> None:
        self.params = params
        self.offsets: Dict[int, Tuple[int, int]] = {}
        offset = 0
        for p in params:
            self.offsets[p.data_ptr()] = (offset, p.numel())
            offset += p.numel()
        self.total = offset

    def slot(self, p: torch.Tensor) -> Tuple[int, int]:
        try:
            return self.offsets[p.data_ptr()]
        except KeyError:
            raise RuntimeError(
                "DDP bucket holds a parameter the DistributedOptimizer did "
                "not lay out: build it after DistributedDataParallel, over "
                "the same model") from None


def state_names(kind: str) -> List[str]:
    return {"momentum": ["momentum_buffer"],
            "adam": ["exp_avg", "exp_avg_sq"],
            "adamw": ["exp_avg", "exp_avg_sq"]}.get(kind, [])


def flat_state(optimizer: torch.optim.Optimizer, layout: Layout,
               names: List[str]) -> Tuple[List[torch.Tensor], int]:
    """The optimizer's state as flat buffers, and its steps taken."""
    buffers = [torch.zeros(layout.total) for _ in names]
    steps = 0
    for p in layout.params:
        state = optimizer.state.get(p, {})
        offset, n = layout.slot(p)
        for buffer, name in zip(buffers, names):
            if state.get(name) is not None:
                buffer[offset:offset + n].copy_(state[name].reshape(-1))
        if "step" in state:
            steps = int(float(state["step"]))
        elif state.get("momentum_buffer") is not None:
            steps = max(steps, 1)
    return buffers, steps


def load_state(optimizer: torch.optim.Optimizer, layout: Layout,
               names: List[str], buffers: List[torch.Tensor], steps: int,
               kind: str) -> None:
    """Puts the shards' state into the optimizer (none before a step)."""
    if steps == 0:
        return
    for p in layout.params:
        offset, n = layout.slot(p)
        state = optimizer.state[p]
        for buffer, name in zip(buffers, names):
            state[name] = buffer[offset:offset + n].view_as(p).to(
                p.device, p.dtype).clone()
        if kind in ("adam", "adamw"):
            state["step"] = torch.tensor(float(steps))
