"""The ``gradsync`` torch.distributed backend: gradsync's TCP,
shared-memory and hierarchical ring under torch's process-group API, so
that ``DistributedDataParallel(model)`` runs on it unchanged.

Supported, on CPU tensors: allreduce (SUM, AVG, MAX, MIN on float32,
float64 and int32), broadcast and allgather (of any dtype: they move
bytes), and barrier. Every other collective, and allreduce's other dtypes
and ops, raise a clear "not supported" error.

Each call returns a real asynchronous Work whose future (``get_future``,
which DDP's reducer uses) completes when the collective has: the calls of
a group run in issue order on one thread of the group's, which drives the
C API with the GIL released. Futures are completed outside any gradsync
lock. A failed collective fails its future, and the group stays failed
(as NCCL's): create a new one.

The group rendezvous through the Store torch hands its creator (any
Store: gradsync's coordinator store under ``gradsync.torch.init()``, a
TCPStore or FileStore elsewhere), under the group's own prefix.

Every difference between torch 1.13 (Debian's, tested) and 2.x (pip
wheels) is in compat.py: the base class, registration, Work objects.
"""

from __future__ import annotations

import atexit
import ctypes
import datetime
import queue
import threading
import time
from typing import Callable, List, Optional

import torch
import torch.distributed as dist

from gradsync import _capi
from gradsync import session as gs_session
from gradsync.torch import compat, overlap

# Status codes of a collective that failed because of a peer (deadline
# exceeded, aborted, unavailable), and how long such a failure waits.
_PEER_FAILURES = (_capi.DEADLINE_EXCEEDED, _capi.ABORTED, 14)
_ECHO_DELAY_S = 3.0

_DTYPES = {torch.float32: _capi.FLOAT32, torch.float64: _capi.FLOAT64,
           torch.int32: _capi.INT32}


def _op_code(op) -> int:
    codes = {"SUM": _capi.SUM, "AVG": _capi.AVG, "MAX": _capi.MAX,
             "MIN": _capi.MIN}
    name = compat.reduce_op_name(op, tuple(codes))
    if name is not None:
        return codes[name]
    raise ValueError(f"the gradsync backend does not support reduce op {op};"
                     " use SUM, AVG, MAX or MIN")


def _check_tensor(tensor: torch.Tensor, what: str) -> int:
    _check_cpu(tensor, what)
    if tensor.dtype not in _DTYPES:
        raise ValueError(
            f"the gradsync backend does not {what} {tensor.dtype}; use "
            "float32, float64 or int32")
    return _DTYPES[tensor.dtype]


def _words(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous int32 copy of `tensor`'s bytes, zero-padded to whole
    words: broadcast and all-gather move bytes, so they take any dtype."""
    raw = tensor.detach().contiguous().reshape(-1).view(torch.uint8)
    padded = torch.zeros((raw.numel() + 3) // 4 * 4, dtype=torch.uint8)
    padded[:raw.numel()] = raw
    return padded.view(torch.int32)


def _unwords(words: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """The first bytes of `words` as a tensor shaped and typed as `like`."""
    nbytes = like.numel() * like.element_size()
    return (words.view(torch.uint8)[:nbytes].view(like.dtype)
            .reshape(like.shape))


def _check_cpu(tensor: torch.Tensor, what: str) -> None:
    if tensor.device.type != "cpu":
        raise ValueError(
            f"the gradsync backend {what}s CPU tensors; this one is on "
            f"{tensor.device}: use backend 'nccl' for GPU tensors (its "
            "rendezvous still goes through gradsync's store)")


class _StoreBridge:
    """A torch Store as gs_store_callbacks (kept alive with the group)."""

    def __init__(self, store: dist.Store) -> None:
        self._store = store

        def set_(ctx, key, value, size):
            try:
                self._store.set(key.decode(), ctypes.string_at(value, size))
                return 0
            except Exception:  # noqa: BLE001 (reported as a code to C)
                return _capi.UNKNOWN

        def get(ctx, key, timeout_ms, out):
            k = key.decode()
            try:
                self._store.wait([k], datetime.timedelta(
                    milliseconds=timeout_ms))
                value = self._store.get(k)
            except Exception as e:  # noqa: BLE001
                text = str(e).lower()
                if "timeout" in text or "timed out" in text:
                    return _capi.DEADLINE_EXCEEDED
                return _capi.UNKNOWN
            raw = bytes(value)
            _capi.lib().gs_buffer_assign(out, raw, len(raw))
            return 0

        def add(ctx, key, delta, result):
            try:
                result[0] = self._store.add(key.decode(), delta)
                return 0
            except Exception:  # noqa: BLE001
                return _capi.UNKNOWN

        self.callbacks = _capi.StoreCallbacks(
            None, _capi.STORE_SET(set_), _capi.STORE_GET(get),
            _capi.STORE_ADD(add))


class _Runner:
    """One thread per group: runs its collectives in issue order and
    completes their futures; records how long each kept the ring busy and
    how much of that the training thread waited for (overlap.py)."""

    def __init__(self, name: str) -> None:
        self._queue: "queue.Queue[Optional[tuple]]" = queue.Queue()
        self._lock = threading.Lock()
        self._clock = overlap.ExposedClock()
        self.bytes_synced = 0
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name=f"gradsync-{name}")
        self._thread.start()

    def submit(self, run: Callable[[], object], nbytes: int
               ) -> torch.futures.Future:
        future: torch.futures.Future = torch.futures.Future()
        self._queue.put((run, future, nbytes, self._clock.mark()))
        return future

    def take_counters(self) -> tuple:
        """(busy s, exposed s, bytes all-reduced) since the last call."""
        with self._lock:
            synced, self.bytes_synced = self.bytes_synced, 0
        busy, exposed = self._clock.take()
        return busy, exposed, synced

    def close(self) -> None:
        self._queue.put(None)

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            run, future, nbytes, mark = item
            start = time.perf_counter()
            try:
                result = run()
            except Exception as e:  # noqa: BLE001 (handed to the future)
                if getattr(e, "code", None) in _PEER_FAILURES:
                    # Most likely a peer died first: let its failure reach
                    # the coordinator before this rank's, so that the job's
                    # message names the cause, not this echo of it (the
                    # daemon then cancels this rank).
                    time.sleep(_ECHO_DELAY_S)
                future.set_exception(e)
                continue
            self._clock.account(start, time.perf_counter(), mark)
            with self._lock:
                self.bytes_synced += nbytes
            future.set_result(result)


class ProcessGroupGradsync(compat.PROCESS_GROUP_BASE):
    """A torch process group on gradsync's ring (compat.py: on 1.13 and
    2.x alike)."""

    def __init__(self, store: dist.Store, rank: int, size: int,
                 timeout: datetime.timedelta, name: Optional[str] = None
                 ) -> None:
        super().__init__(rank, size)
        # The same on every member: the group's keys are apart already (torch
        # hands each group a store under its own prefix), and the name
        # only tags the ring's handshake.
        self._name = name or "torch"
        self._bridge = _StoreBridge(store)
        session = gs_session.current()
        options = _capi.CommOptions(
            self._name.encode(), None, None,
            int(timeout.total_seconds() * 1000) if timeout else 0, 0)
        handle = ctypes.c_void_p()
        _capi.check(_capi.lib().gs_comm_create(
            session.handle if session else None,
            ctypes.byref(self._bridge.callbacks), rank, size,
            ctypes.byref(options), ctypes.byref(handle)))
        self._comm = handle.value
        self._runner = _Runner(self._name)
        _groups.append(self)

    def getBackendName(self) -> str:  # noqa: N802 (c10d's name)
        return "gradsync"

    def _work(self, run: Callable[[], object], nbytes: int = 0):
        return compat.work_from_future(self._runner.submit(run, nbytes))

    def _call(self, fn: Callable[..., int], *args) -> None:
        _capi.check(fn(self._comm, *args))

    def allreduce(self, tensors: List[torch.Tensor], opts=None):
        if len(tensors) != 1:
            raise ValueError("the gradsync backend all-reduces one tensor a "
                             f"call, got {len(tensors)}")
        tensor = tensors[0]
        dtype = _check_tensor(tensor, "all-reduce")
        op = _op_code(opts.reduceOp if opts is not None
                      else dist.ReduceOp.SUM)
        lib = _capi.lib()

        def run():
            work = tensor if tensor.is_contiguous() else tensor.contiguous()
            self._call(lib.gs_comm_allreduce, work.data_ptr(), work.numel(),
                       dtype, op)
            if work is not tensor:
                tensor.copy_(work)
            return tensors

        return self._work(run, tensor.numel() * tensor.element_size())

    def broadcast(self, tensors: List[torch.Tensor], opts=None):
        if len(tensors) != 1:
            raise ValueError("the gradsync backend broadcasts one tensor a "
                             f"call, got {len(tensors)}")
        tensor = tensors[0]
        _check_cpu(tensor, "broadcast")
        root = opts.rootRank if opts is not None else 0
        lib = _capi.lib()

        def run():
            words = _words(tensor)
            self._call(lib.gs_comm_broadcast, words.data_ptr(), words.numel(),
                       _capi.INT32, root)
            tensor.copy_(_unwords(words, tensor))
            return tensors

        return self._work(run)

    def allgather(self, output_tensors: List[List[torch.Tensor]],
                  input_tensors: List[torch.Tensor], opts=None):
        if len(input_tensors) != 1 or len(output_tensors) != 1:
            raise ValueError("the gradsync backend all-gathers one tensor a "
                             "call")
        source = input_tensors[0]
        outputs = output_tensors[0]
        _check_cpu(source, "all-gather")
        if len(outputs) != self.size() or any(
                o.numel() != source.numel() or o.dtype != source.dtype
                for o in outputs):
            raise ValueError("allgather wants one output tensor per rank, "
                             "each shaped as the input")
        lib = _capi.lib()

        def run():
            send = _words(source)
            n = send.numel()
            gathered = torch.empty(self.size() * n, dtype=torch.int32)
            self._call(lib.gs_comm_allgather, send.data_ptr(),
                       gathered.data_ptr(), n, _capi.INT32)
            for r, out in enumerate(outputs):
                out.copy_(_unwords(gathered[r * n:(r + 1) * n], out))
            return output_tensors

        return self._work(run)

    def barrier(self, opts=None):
        lib = _capi.lib()

        def run():
            self._call(lib.gs_comm_barrier)
            return []

        return self._work(run)

    def _unsupported(self, what: str):
        raise RuntimeError(
            f"the gradsync backend does not support {what}; it offers "
            "allreduce, broadcast, allgather and barrier (use a Gloo group "
            "for the rest)")

    def reduce(self, *args, **kwargs):
        self._unsupported("reduce")

    def gather(self, *args, **kwargs):
        self._unsupported("gather")

    def scatter(self, *args, **kwargs):
        self._unsupported("scatter")

    def reduce_scatter(self, *args, **kwargs):
        self._unsupported("reduce_scatter")

    def alltoall(self, *args, **kwargs):
        self._unsupported("alltoall")

    def send(self, *args, **kwargs):
        self._unsupported("send")

    def recv(self, *args, **kwargs):
        self._unsupported("recv")

    def take_counters(self) -> tuple:
        """(busy seconds, exposed seconds, bytes all-reduced) since the
        last call (overlap.py defines the exposed part)."""
        return self._runner.take_counters()

    def abort(self, reason: str = "aborted") -> None:
        if self._comm is not None:
            _capi.lib().gs_comm_abort(self._comm, reason.encode())


_groups: List[ProcessGroupGradsync] = []


def _shutdown() -> None:
    """At interpreter exit: abort every group's ring and end its thread.

    A daemon thread still inside a torch call when Python finalises is
    killed with pthread_exit, whose unwinding through torch's C++ frames
    aborts the process (SIGABRT instead of the script's exit status).
    atexit runs before that, so the runners end here: the abort unblocks a
    collective still waiting on a peer.
    """
    for group in _groups:
        group.abort("the process is exiting")
        group._runner.close()
    for group in _groups:
        group._runner.join(timeout=10)


atexit.register(_shutdown)


def groups() -> List[ProcessGroupGradsync]:
    """The gradsync groups this process created."""
    return list(_groups)


def _create(store, rank, size, timeout):
    return ProcessGroupGradsync(store, rank, size, timeout)


def register() -> None:
    """Registers the backend under the name ``gradsync`` (idempotent)."""
    compat.register_backend("gradsync", _create)
