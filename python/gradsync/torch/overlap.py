"""The exposed part of a gradsync group's communication: the time the
training thread could not overlap with compute.

Definition (the same cut as the PS path's; docs/pytorch.md, "Step
metrics: exposed communication"):

- A collective issued **during a backward pass** (DDP's bucket
  all-reduces, from its reducer or a comm hook) belongs to that backward.
  Backward's compute ends when the autograd graph task has run its last
  node: each collective of the backward queues an autograd final
  callback (``queue_callback``); they run before DDP's own (DDP queues
  its finalizer only after launching the last bucket) and stamp that
  moment ``T``. The exposed part of such a collective is the part of its
  run on the group's thread after ``T``: ``max(0, end - max(start, T))``.
  A bucket that finished while backward still computed adds nothing; the
  last bucket, and any queued behind it, add what DDP's finalizer waited.
- A collective issued **outside backward** (the loss all-reduce after
  ``step``, a barrier, a broadcast) is waited for by its caller: its
  whole run is exposed.

The run is ``[start, end]`` on the group's thread, so the exposed time of
every collective is at most its busy time, and the sums too: ``0 <=
exposed <= busy``. What it leaves out (the hand-off of a future to the
waiting thread) is the same order as Python's dispatch, microseconds.

Threading: ``ExposedClock.mark`` is called from the thread that issues
collectives (the training thread; in backward the autograd engine's,
which is the same on CPU); ``ExposedClock.account`` from the group's
runner thread.
Both take the clock's lock briefly; no torch future is completed under it.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional, Tuple

from gradsync.torch import compat


class BackwardMark:
    """The end of one backward pass's compute (``end``: perf_counter
    seconds), None until the autograd engine's final callback runs."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self.end: Optional[float] = None

    def close(self, now: Optional[float] = None) -> None:
        with self._lock:
            if self.end is None:
                self.end = time.perf_counter() if now is None else now

    def read(self) -> Optional[float]:
        with self._lock:
            return self.end


def exposed_part(start: float, end: float, backward_end: float) -> float:
    """The exposed seconds of a collective issued in a backward pass whose
    compute ended at ``backward_end``, and that ran over [start, end]."""
    return max(0.0, end - max(start, backward_end))


class ExposedClock:
    """Busy and exposed seconds of one group's collectives."""

    def __init__(self,
                 queue_callback: Optional[Callable[[Callable[[], None]],
                                                   None]] = None) -> None:
        # queue_callback: installs a final callback of the running backward
        # pass, raising RuntimeError outside one (torch's engine's); None
        # for the engine of the torch that is imported.
        self._queue_callback = (queue_callback
                                or compat.queue_final_callback)
        self._lock = threading.Lock()
        self._busy = 0.0
        self._exposed = 0.0

    def mark(self) -> Optional[BackwardMark]:
        """Called when a collective is issued: a mark closed by a final
        callback of the running backward pass, or None outside one. Every
        collective of a backward installs its own callback (they all run
        at the end of the graph task, in order, before DDP's finalizer),
        so no mark outlives its backward, even one that raised."""
        mark = BackwardMark(self._lock)
        try:
            self._queue_callback(mark.close)
        except RuntimeError:
            return None  # not in a backward pass
        return mark

    def account(self, start: float, end: float,
                mark: Optional[BackwardMark]) -> None:
        """Adds a collective that ran over [start, end], issued under
        ``mark`` (None: outside backward)."""
        if mark is None:
            exposed = end - start
        else:
            backward_end = mark.read()
            # None here: the callback has not run yet, so backward's
            # compute ends after this moment, which is after `end`.
            exposed = (0.0 if backward_end is None
                       else exposed_part(start, end, backward_end))
        with self._lock:
            self._busy += end - start
            self._exposed += exposed

    def take(self) -> Tuple[float, float]:
        """(busy seconds, exposed seconds) since the last call."""
        with self._lock:
            busy, exposed = self._busy, self._exposed
            self._busy = self._exposed = 0.0
        return busy, exposed

