"""A torch.distributed Store backed by the gradsync coordinator's job store.

torch's own process groups (Gloo, NCCL) rendezvous through it, so an
entrypoint job needs no MASTER_ADDR, and a torch job's ``ncclUniqueId``
crosses the gRPC coordinator. Keys live in the job's namespace (its
generation's), under ``torch/``.

Supported: set, get, add, wait (with and without a timeout) and check.
The coordinator's store cannot delete or compare-and-set keys, nor count
them: those raise a clear error (torch's process groups do not use them).
"""

from __future__ import annotations

import datetime
from typing import List, Optional

import torch.distributed as dist

from gradsync import _capi
from gradsync.session import Session

_PREFIX = "torch/"


def _ms(timeout: datetime.timedelta) -> int:
    return max(1, int(timeout.total_seconds() * 1000))


class CoordinatorStore(dist.Store):
    """The job's store as a c10d Store (thread-safe)."""

    def __init__(self, session: Session,
                 timeout: datetime.timedelta = datetime.timedelta(minutes=5)
                 ) -> None:
        super().__init__()
        self._session = session
        self.set_timeout(timeout)

    def _key(self, key: str) -> str:
        return _PREFIX + key

    def _raise_timeout(self, e: _capi.GradsyncError) -> None:
        if e.code == _capi.DEADLINE_EXCEEDED:
            # torch's callers look for "Timeout" in store errors.
            raise RuntimeError(f"Timeout: {e}") from e
        raise e

    def set(self, key: str, value) -> None:  # noqa: A003 (c10d's name)
        if isinstance(value, str):
            value = value.encode()
        self._session.set(self._key(key), bytes(value))

    def get(self, key: str) -> bytes:
        try:
            return self._session.get(self._key(key), _ms(self.timeout))
        except _capi.GradsyncError as e:
            self._raise_timeout(e)
            raise

    def add(self, key: str, value: int) -> int:
        return self._session.add(self._key(key), int(value))

    def wait(self, keys: List[str],
             timeout: Optional[datetime.timedelta] = None) -> None:
        try:
            self._session.wait([self._key(k) for k in keys],
                               _ms(timeout or self.timeout))
        except _capi.GradsyncError as e:
            self._raise_timeout(e)

    def check(self, keys: List[str]) -> bool:
        try:
            self._session.wait([self._key(k) for k in keys], 1)
            return True
        except _capi.GradsyncError as e:
            if e.code == _capi.DEADLINE_EXCEEDED:
                return False
            raise

    def _unsupported(self, what: str):
        raise RuntimeError(
            f"gradsync's coordinator store does not support {what}; torch's "
            "process groups do not need it")

    def delete_key(self, key: str) -> bool:
        self._unsupported("delete_key")

    def num_keys(self) -> int:
        self._unsupported("num_keys")

    def compare_set(self, key: str, expected, desired) -> bytes:
        self._unsupported("compare_set")
