"""The job's sync path for a DDP model: gradsync's ring or its parameter
server, with the runtime switch between them.

    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model = DistributedDataParallel(model)
    opt = gs.DistributedOptimizer(opt, model)          # line 3
    for x, y in loader:
        opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()

``DistributedOptimizer`` registers a DDP comm hook and follows the job's
mode (``gradsync submit --mode ring|ps``, ``--switch-at``, ``gradsync
switch``, ``--mode auto``):

- **ring**: each bucket is averaged by an all-reduce on the model's
  process group (as DDP's default hook), and the wrapped optimizer steps.
- **PS**: each bucket is copied into a flat gradient (the parameters of
  ``model.module`` that need a gradient, in order) and its ranges are
  pushed to the job's shards as backward produces them (every shard's
  stream at once, in partitions: server/ps/client/ps_step.h); the shards average
  the ranks' gradients in rank order. Two flavours:

  * sum-only (default): the shards hand the average back, and the wrapped
    optimizer steps (any torch optimizer, as BytePS's servers);
  * ``server_side=True``: SGD, momentum, Adam or AdamW runs on the
    shards, with the param group's hyper-parameters and, every step, its
    learning rate (a scheduler may change it); the ranks pull the updated
    parameters and the wrapped optimizer never steps. Its state moves to
    the shards on entering the PS and back on leaving it.

Switches: every rank switches at the same optimizer step. After each
step the ranks agree (an all-reduce MAX of one number on the model's
process group) on the newest runtime request any of them has heard of (a
thread of each rank watches the job store's ``switch/<epoch>`` keys); a
new one takes effect at the next step, as does a scripted switch
(``--switch-at``). Entering the PS, rank r creates and seeds shards r,
r + N, ... from its parameters and optimizer state (identical on every
rank), then a barrier; leaving it, every rank fetches the shards' state
(``server_side``), a barrier, and rank 0 releases the shards.

Errors: a failed PS step fails the bucket futures (DDP raises from
``backward``) and every later step; a switch that cannot be made raises
from ``step``. Outside a gradsync job (no ``GRADSYNC_RANK_FILE``) the
wrapper runs the ring path only.
"""

from __future__ import annotations

import atexit
import ctypes
import queue
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from gradsync import _capi
from gradsync import session as gs_session
from gradsync.torch import compat, ps_state

RING, PS = 1, 2
_WATCH_POLL_MS = 1000


def _merge(ranges: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    merged: List[Tuple[int, int]] = []
    for begin, end in sorted(ranges):
        if merged and merged[-1][1] == begin:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((begin, end))
    return merged


class _PsClient:
    """A gs_ps handle and the flat buffers of its steps."""

    def __init__(self, session: gs_session.Session, total: int,
                 spec: _capi.PsOptimizer) -> None:
        handle = ctypes.c_void_p()
        _capi.check(_capi.lib().gs_ps_open(session.handle, total,
                                           ctypes.byref(spec),
                                           ctypes.byref(handle)))
        self.handle: Optional[int] = handle.value
        self.kind = spec.name.decode()

    def close(self) -> None:
        if self.handle is not None:
            _capi.lib().gs_ps_close(self.handle)
            self.handle = None


class DistributedOptimizer:
    """Wraps ``optimizer`` for ``model`` (a DistributedDataParallel): see
    the module's docstring. Build it after DDP and before the first
    forward. ``zero_grad``, ``param_groups``, ``state_dict`` and the rest
    are the wrapped optimizer's."""

    def __init__(self, optimizer: torch.optim.Optimizer,
                 model: torch.nn.parallel.DistributedDataParallel,
                 server_side: bool = False,
                 timeout_ms: int = 0) -> None:
        self.optimizer = optimizer
        self.model = model
        self.server_side = server_side
        self._timeout_ms = timeout_ms
        self._group = model.process_group
        self._world = dist.get_world_size(self._group)
        self._rank = dist.get_rank(self._group)
        params = [p for p in model.module.parameters() if p.requires_grad]
        self._layout = ps_state.Layout(params)
        if server_side:
            owned = {p.data_ptr() for g in optimizer.param_groups
                     for p in g["params"]}
            if owned != set(self._layout.offsets):
                raise ValueError("the server-side PS needs the optimizer to "
                                 "own exactly the model's trainable "
                                 "parameters")
        self._spec = ps_state.ps_optimizer(optimizer, server_side)
        total = self._layout.total
        self._grad = torch.zeros(total, dtype=torch.float32)
        self._out = torch.zeros(total, dtype=torch.float32)
        self._session = gs_session.current()
        self._device = params[0].device if params else torch.device("cpu")
        self._step = 0
        self._path = RING
        self._stepped_path = RING  # the path of the last finished step
        self._ps: Optional[_PsClient] = None
        self._scripted: Dict[int, int] = {}
        self._applied_epoch = 0
        self._heard_epoch = 0
        self._modes: Dict[int, int] = {}
        self._watch_lock = threading.Lock()
        self._stop = threading.Event()
        self._watcher: Optional[threading.Thread] = None
        # The PS step in flight: its bucket futures, readiness, errors.
        self._in_step = False
        self._ready = 0
        self._pending: List[Tuple[torch.futures.Future, List[Tuple[int, int]],
                                  torch.Tensor]] = []
        self._finished: "queue.Queue[Optional[BaseException]]" = queue.Queue()
        self._failed: Optional[BaseException] = None
        self._last_ready = 0.0
        self._exposed_s = 0.0
        self._busy_s = 0.0
        self._sent = 0
        self._received = 0
        self._synced = 0
        model.register_comm_hook(None, self._hook)
        if self._session is not None:
            lib = _capi.lib()
            handle = self._session.handle
            for i in range(lib.gs_session_num_switches(handle)):
                step, mode = ctypes.c_int64(), ctypes.c_int32()
                _capi.check(lib.gs_session_switch(handle, i,
                                                  ctypes.byref(step),
                                                  ctypes.byref(mode)))
                self._scripted[step.value] = mode.value
            if lib.gs_session_mode(handle) == PS:
                self._enter_ps()
            self._watcher = threading.Thread(target=self._watch,
                                             name="gradsync-switch-watch",
                                             daemon=True)
            self._watcher.start()
        _active.append(self)

    # ---- the optimizer's face ----
    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["optimizer"], name)

    def zero_grad(self, set_to_none: bool = False) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    @property
    def path(self) -> str:
        """"ring" or "ps": the path the next step takes."""
        return "ps" if self._path == PS else "ring"

    def step(self, closure: Any = None) -> Any:
        """Ends the step: the local or server-side update, then the
        switch agreement (a new path starts with the next step)."""
        result = None
        if self._path == PS:
            self._await_ps_step()
            if self.server_side:
                with torch.no_grad():
                    for p in self._layout.params:
                        offset, n = self._layout.slot(p)
                        p.copy_(self._out[offset:offset + n].view_as(p))
            else:
                result = self.optimizer.step(closure)
        else:
            result = self.optimizer.step(closure)
        self._step += 1
        self._stepped_path = self._path
        if self._session is not None:
            self._agree_and_switch()
        return result

    def close(self) -> None:
        """Stops the switch watcher and drops the PS client (at exit)."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=5)
            self._watcher = None
        if self._ps is not None:
            self._ps.close()
            self._ps = None
        if self in _active:
            _active.remove(self)

    def take_counters(self) -> Tuple[int, float, float, int, int, int]:
        """(mode, exposed s, busy s, sent, received, synced bytes) of the
        PS steps since the last call; the ring's come from its group."""
        counters = (self._stepped_path, self._exposed_s, self._busy_s, self._sent,
                    self._received, self._synced)
        self._exposed_s = self._busy_s = 0.0
        self._sent = self._received = self._synced = 0
        return counters

    # ---- the comm hook ----
    def _hook(self, state, bucket):  # type: ignore[no-untyped-def]
        # No annotations: DDP checks them against its own types, and this
        # module's are strings (from __future__ import annotations).
        if self._path == RING:
            buffer = compat.bucket_buffer(bucket).div_(self._world)
            work = dist.all_reduce(buffer, group=self._group, async_op=True)
            return work.get_future().then(lambda f: f.value()[0])
        return self._push_bucket(bucket)

    def _push_bucket(self, bucket: dist.GradBucket) -> torch.futures.Future:
        fut: torch.futures.Future = torch.futures.Future()
        if self._failed is not None:
            fut.set_exception(self._failed)
            return fut
        lib = _capi.lib()
        try:
            if not self._in_step:
                lr = (float(self.optimizer.param_groups[0]["lr"])
                      if self.server_side else 0.0)
                _capi.check(lib.gs_ps_start(self._ps.handle, self._step,
                                            self._grad.data_ptr(),
                                            self._out.data_ptr(), lr))
                self._in_step = True
                self._ready = 0
            slots = []
            for p, g in zip(compat.bucket_parameters(bucket),
                            compat.bucket_gradients(bucket)):
                offset, n = self._layout.slot(p)
                self._grad[offset:offset + n].copy_(g.reshape(-1))
                slots.append((offset, offset + n))
            for begin, end in _merge(slots):
                _capi.check(lib.gs_ps_ready(self._ps.handle, begin, end))
                self._ready += end - begin
        except Exception as e:  # noqa: BLE001 - the future carries it
            self._fail(e)
            fut.set_exception(e)
            return fut
        self._pending.append((fut, slots, compat.bucket_buffer(bucket)))
        if self._ready == self._layout.total:
            self._last_ready = time.perf_counter()
            threading.Thread(target=self._finish, name="gradsync-ps-step",
                             daemon=True).start()
        return fut

    def _finish(self) -> None:
        """Waits for the shards' replies (GIL released), then completes
        the step's bucket futures."""
        result = _capi.PsResult()
        code = _capi.lib().gs_ps_finish(self._ps.handle, self._timeout_ms,
                                        ctypes.byref(result))
        error: Optional[BaseException] = None
        if code != 0:
            message = _capi.lib().gs_last_error().decode("utf-8", "replace")
            error = _capi.GradsyncError(
                code, f"PS step {self._step} of rank {self._rank}: {message}")
        else:
            self._exposed_s += time.perf_counter() - self._last_ready
            self._busy_s += result.busy_s
            self._sent += result.bytes_sent
            self._received += result.bytes_received
            self._synced += self._layout.total * 4
        pending, self._pending = self._pending, []
        for fut, slots, buffer in pending:
            if error is not None:
                fut.set_exception(error)
            elif self.server_side:
                fut.set_result(buffer)  # the update comes from the shards
            else:
                buffer.copy_(torch.cat([self._out[b:e] for b, e in slots]))
                fut.set_result(buffer)
        self._finished.put(error)

    def _fail(self, error: BaseException) -> None:
        if self._failed is None:
            self._failed = error
            if self._ps is not None:
                _capi.lib().gs_ps_abort(self._ps.handle, str(error).encode())

    def _await_ps_step(self) -> None:
        if self._failed is not None:
            raise self._failed
        if not self._in_step:
            raise RuntimeError(
                f"step {self._step}: optimizer step on the PS path without a "
                "synchronised backward (DDP's no_sync, or no backward)")
        error = self._finished.get()
        self._in_step = False
        if error is not None:
            self._fail(error)
            raise error

    # ---- switches ----
    def _watch(self) -> None:
        """Learns of runtime switch requests (the job store's
        switch/<epoch> keys) as the coordinator announces them."""
        lib = _capi.lib()
        epoch = 1
        while not self._stop.is_set():
            mode = ctypes.c_int32()
            code = lib.gs_session_await_switch(self._session.handle, epoch,
                                               _WATCH_POLL_MS,
                                               ctypes.byref(mode))
            if code == 0:
                with self._watch_lock:
                    self._modes[epoch] = mode.value
                    self._heard_epoch = epoch
                epoch += 1
            elif code != _capi.DEADLINE_EXCEEDED:
                self._stop.wait(1.0)  # the coordinator is away: try again

    def _agree_and_switch(self) -> None:
        with self._watch_lock:
            heard = self._heard_epoch
        agreed = torch.tensor([float(heard)], dtype=torch.float64,
                              device=self._device)
        dist.all_reduce(agreed, op=dist.ReduceOp.MAX, group=self._group)
        epoch = int(agreed.item())
        target = self._scripted.get(self._step)
        if epoch > self._applied_epoch:
            target = self._mode_of(epoch)  # a runtime request wins
            self._applied_epoch = epoch
        if target is None or target == self._path:
            return
        if target == PS:
            self._enter_ps()
        else:
            self._leave_ps()

    def _mode_of(self, epoch: int) -> int:
        with self._watch_lock:
            mode = self._modes.get(epoch)
        if mode is not None:
            return mode
        # Another rank heard it first: read it (it is in the store).
        out = ctypes.c_int32()
        _capi.check(_capi.lib().gs_session_await_switch(
            self._session.handle, epoch, 60_000, ctypes.byref(out)))
        return out.value

    def _flat_params(self) -> torch.Tensor:
        with torch.no_grad():
            return torch.cat([p.detach().reshape(-1).to("cpu",
                                                        torch.float32)
                              for p in self._layout.params]) \
                if self._layout.params else torch.zeros(0)

    def _enter_ps(self) -> None:
        """Seeds the job's shards from this rank's state; the next step
        goes through them."""
        self._ps = _PsClient(self._session, self._layout.total, self._spec)
        names = ps_state.state_names(self._ps.kind)
        buffers, steps = (ps_state.flat_state(self.optimizer, self._layout, names) if self.server_side
                          else ([], 0))
        params = self._flat_params()
        array = (ctypes.c_void_p * max(len(buffers), 1))(
            *[b.data_ptr() for b in buffers])
        _capi.check(_capi.lib().gs_ps_seed(self._ps.handle, self._step,
                                           params.data_ptr(), array,
                                           len(buffers), steps))
        dist.barrier(group=self._group)
        self._path = PS

    def _leave_ps(self) -> None:
        """Takes the shards' state back (server-side) and releases them."""
        names = ps_state.state_names(self._ps.kind)
        if self.server_side:
            params = torch.zeros(self._layout.total)
            buffers = [torch.zeros(self._layout.total) for _ in names]
            array = (ctypes.c_void_p * max(len(buffers), 1))(
                *[b.data_ptr() for b in buffers])
            steps = ctypes.c_uint64()
            _capi.check(_capi.lib().gs_ps_fetch(
                self._ps.handle, self._step, params.data_ptr(), array,
                len(buffers), ctypes.byref(steps)))
            with torch.no_grad():
                for p in self._layout.params:
                    offset, n = self._layout.slot(p)
                    p.copy_(params[offset:offset + n].view_as(p))
            ps_state.load_state(self.optimizer, self._layout, names, buffers,
                                  int(steps.value), self._ps.kind)
        dist.barrier(group=self._group)
        if self._rank == 0:
            _capi.check(_capi.lib().gs_ps_release(self._ps.handle))
        self._ps.close()
        self._ps = None
        self._path = RING


_active: List[DistributedOptimizer] = []


def active() -> Optional[DistributedOptimizer]:
    """The DistributedOptimizer of this process, if any (for report())."""
    return _active[-1] if _active else None


def _close_all() -> None:
    for wrapper in list(_active):
        wrapper.close()


atexit.register(_close_all)
