"""Tests of gradsync.torch.overlap, the exposed part of the ring's
communication: exact sums on hand-made timestamps (no clock read), and
the autograd final callback that marks the end of backward's compute in
the torch that is installed (Debian's 1.13 in CI).

Run by ctest (tests/python/CMakeLists.txt) with Debian's python3 and the
build's package on PYTHONPATH; exits 77 (skip) without torch.
"""

from __future__ import annotations

import sys
import threading
from typing import Callable, List

try:
    import torch
except ImportError:
    print("SKIP: torch is not installed")
    sys.exit(77)

from gradsync.torch import overlap


class FakeEngine:
    """queue_callback of a backward pass that is running or not."""

    def __init__(self) -> None:
        self.in_backward = False
        self.callbacks: List[Callable[[], None]] = []

    def queue_callback(self, callback: Callable[[], None]) -> None:
        if not self.in_backward:
            raise RuntimeError("Final callbacks can only be installed "
                               "during backward pass.")
        self.callbacks.append(callback)

    def end_backward(self, now: float) -> None:
        for callback in self.callbacks:
            callback.__self__.close(now)  # the bound BackwardMark.close
        self.callbacks.clear()
        self.in_backward = False


def test_exposed_part() -> None:
    # Finished before backward's compute ended: nothing exposed.
    assert overlap.exposed_part(1.0, 2.0, 3.0) == 0.0
    # Straddles the end: the part after it.
    assert overlap.exposed_part(1.0, 5.0, 3.0) == 2.0
    # Started after the end (queued behind the last bucket): all of it.
    assert overlap.exposed_part(4.0, 6.0, 3.0) == 2.0


def test_clock_sums() -> None:
    engine = FakeEngine()
    clock = overlap.ExposedClock(engine.queue_callback)
    engine.in_backward = True
    # Three buckets issued in backward; backward's compute ends at 10.
    marks = [clock.mark() for _ in range(3)]
    assert all(m is not None for m in marks)
    assert len(engine.callbacks) == 3
    # Bucket 0 ran over [2, 4] and was accounted before the end: 0.
    clock.account(2.0, 4.0, marks[0])
    engine.end_backward(10.0)
    assert [m.read() for m in marks] == [10.0, 10.0, 10.0]
    # Bucket 1 over [8, 12]: 2 exposed; bucket 2 over [12, 15]: 3.
    clock.account(8.0, 12.0, marks[1])
    clock.account(12.0, 15.0, marks[2])
    # Outside backward (the loss all-reduce): the caller waits, all of it.
    assert clock.mark() is None
    clock.account(20.0, 20.5, None)
    busy, exposed = clock.take()
    assert busy == 2.0 + 4.0 + 3.0 + 0.5, busy
    assert exposed == 2.0 + 3.0 + 0.5, exposed
    assert 0.0 <= exposed <= busy
    assert clock.take() == (0.0, 0.0)


def test_mark_of_a_raised_backward_does_not_leak() -> None:
    engine = FakeEngine()
    clock = overlap.ExposedClock(engine.queue_callback)
    engine.in_backward = True
    stale = clock.mark()
    engine.callbacks.clear()  # backward raised: its callbacks never ran
    engine.in_backward = False
    assert stale is not None and stale.read() is None
    # The next collective, outside backward, is not tied to the stale mark.
    assert clock.mark() is None


def test_torch_engine_callback() -> None:
    """In the installed torch: no mark outside backward; inside, a mark
    that closes when the graph task ends, after the last node ran."""
    clock = overlap.ExposedClock()
    assert clock.mark() is None
    seen = {}

    class Probe(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):  # type: ignore[no-untyped-def]
            return x * 2

        @staticmethod
        def backward(ctx, grad):  # type: ignore[no-untyped-def]
            seen["mark"] = clock.mark()
            seen["open_in_backward"] = seen["mark"].read() is None
            return grad * 2

    x = torch.ones(3, requires_grad=True)
    Probe.apply(x).sum().backward()
    assert seen["open_in_backward"], "the mark closed before backward ended"
    assert seen["mark"].read() is not None, "the final callback did not run"
    assert torch.equal(x.grad, torch.full((3,), 2.0))
    assert clock.mark() is None


def test_threads() -> None:
    """Marks closed on one thread, accounted on another: sums exact."""
    engine = FakeEngine()
    clock = overlap.ExposedClock(engine.queue_callback)
    engine.in_backward = True
    marks = [clock.mark() for _ in range(1000)]
    engine.end_backward(1.0)
    threads = [threading.Thread(target=lambda part=part: [
        clock.account(0.0, 2.0, m) for m in part])
        for part in (marks[:500], marks[500:])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert clock.take() == (2000.0, 1000.0)


def main() -> int:
    tests = [test_exposed_part, test_clock_sums,
             test_mark_of_a_raised_backward_does_not_leak,
             test_torch_engine_callback, test_threads]
    for test in tests:
        test()
        print(f"{test.__name__} ok")
    print(f"overlap-test-ok (torch {torch.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
