"""gradsync for PyTorch: rendezvous, the ``gradsync`` backend, and step
metrics, for a script started by ``gradsync submit --entrypoint``.

    import gradsync.torch as gs
    gs.init()                                   # 1: instead of
                                                #    init_process_group
    model = DistributedDataParallel(model)      # unchanged
    opt = gs.DistributedOptimizer(opt, model)   # 3: the job's ring or PS,
                                                #    and its switches
    for x, y in loader:
        ...; loss.backward(); opt.step()
        gs.report(loss=loss.item(), samples=len(x))   # 2: once a step

``init`` reads the job from the environment the worker daemon set
(RANK, WORLD_SIZE, GRADSYNC_RANK_FILE: docs/pytorch.md) and initialises
torch.distributed with a Store backed by the coordinator's job store: no
MASTER_ADDR. Run outside gradsync (no GRADSYNC_RANK_FILE), it falls back
to torch's env:// rendezvous when WORLD_SIZE is set, else to one process,
so the same script also runs alone (the one-rank baseline).
"""

from __future__ import annotations

import datetime
import os
import time
from typing import Optional

import torch.distributed as dist

from gradsync import _capi
from gradsync import session as gs_session
from gradsync.torch import backend as gs_backend
from gradsync.torch import ps as gs_ps
from gradsync.torch.ps import DistributedOptimizer
from gradsync.torch.store import CoordinatorStore

__all__ = ["init", "report", "rank", "world_size", "local_rank", "device",
           "CoordinatorStore", "DistributedOptimizer"]

gs_backend.register()


class _StepClock:
    """Times the steps between two report() calls."""

    def __init__(self) -> None:
        self.last = time.perf_counter()
        self.step = 0


_clock: Optional[_StepClock] = None


def init(backend: str = "gradsync",
         timeout: datetime.timedelta = datetime.timedelta(minutes=5)
         ) -> None:
    """Initialises torch.distributed for this rank of the gradsync job.

    ``backend``: "gradsync" (gradsync's ring, CPU tensors), or torch's own
    "gloo" or "nccl", which then rendezvous through gradsync's store (a
    torch job's ncclUniqueId crosses the coordinator). On a GPU rank
    (GRADSYNC_DEVICE cuda:N) the current CUDA device is set to N.
    """
    global _clock
    session = gs_session.current()
    dev = device()
    if dev.startswith("cuda"):
        import torch
        torch.cuda.set_device(int(dev.split(":")[1]))
    if session is not None:
        store = CoordinatorStore(session, timeout)
        dist.init_process_group(backend, store=store, rank=session.rank,
                                world_size=session.world_size,
                                timeout=timeout)
    elif "WORLD_SIZE" in os.environ and "MASTER_ADDR" in os.environ:
        dist.init_process_group(backend, init_method="env://",
                                timeout=timeout)
    else:
        dist.init_process_group(backend, store=dist.HashStore(), rank=0,
                                world_size=1, timeout=timeout)
    _clock = _StepClock()


def rank() -> int:
    return dist.get_rank() if dist.is_initialized() else int(
        os.environ.get("RANK", 0))


def world_size() -> int:
    return dist.get_world_size() if dist.is_initialized() else int(
        os.environ.get("WORLD_SIZE", 1))


def local_rank() -> int:
    return int(os.environ.get("LOCAL_RANK", 0))


def device() -> str:
    """The device the daemon gave this rank: "cpu:0", "cuda:1"."""
    return os.environ.get("GRADSYNC_DEVICE", "cpu:0")


def report(loss: Optional[float] = None, samples: int = 0,
           step: Optional[int] = None) -> None:
    """Reports one step of this rank to the job's metrics.

    Call it once per optimizer step. The step's time is the time since the
    previous call. Its communication is the exposed part, the time the
    step waited for it: on the PS path (DistributedOptimizer) the wait for
    the shards after backward's last bucket; on gradsync's ring the part
    of its collectives' run after backward's compute ended, plus the
    collectives issued outside backward (overlap.py). The time the ring
    was busy, overlapped or not, goes as ``sync_busy_s``. Under a gradsync
    daemon it also proves the rank alive (the job's step deadline).
    Outside gradsync it only counts steps.
    """
    global _clock
    if _clock is None:
        _clock = _StepClock()
    now = time.perf_counter()
    step_s = now - _clock.last
    _clock.last = now
    this_step = _clock.step if step is None else step
    _clock.step = this_step + 1
    busy = exposed_ring = 0.0
    synced = 0
    for group in gs_backend.groups():
        b, e, n = group.take_counters()
        busy += b
        exposed_ring += e
        synced += n
    session = gs_session.current()
    wrapper = gs_ps.active()
    mode, exposed, ps_busy, sent, received, ps_synced = (
        wrapper.take_counters() if wrapper is not None
        else (gs_ps.RING, 0.0, 0.0, 0, 0, 0))
    if session is None:
        return
    n = world_size()
    if mode == gs_ps.PS:
        # The PS step: exposed communication is the wait for the shards
        # after backward's last bucket; bytes are the pushes and pulls.
        comm = min(exposed, step_s)
        busy, synced = ps_busy, ps_synced
        sent_bytes, received_bytes = sent, received
    else:
        # The ring: the exposed part (<= busy by construction).
        comm = min(exposed_ring, step_s)
        sent_bytes = received_bytes = (int(synced * 2 * (n - 1) / n)
                                       if n > 1 else 0)
    r = _capi.StepReport(
        step=this_step, loss=-1.0 if loss is None else float(loss),
        compute_s=max(step_s - comm, 0.0), comm_s=comm, idle_s=0.0,
        step_s=step_s, bytes_sent=sent_bytes, bytes_received=received_bytes,
        samples=int(samples), sync_bytes=synced, sync_busy_s=busy,
        mode=mode)
    session.report(r)
