"""The rank's session with its gradsync job.

A process started by a gradsync worker daemon for an entrypoint job finds
the job's credentials in the 0600 file ``$GRADSYNC_RANK_FILE`` (never on
its command line). The session opens it through the C API and reaches the
coordinator's job store and the daemon's step-report pipe.
"""

from __future__ import annotations

import ctypes
import os
from typing import Iterable, Optional

from gradsync import _capi


class Session:
    """This process's link to its job (one per process)."""

    def __init__(self, rank_file: str) -> None:
        handle = ctypes.c_void_p()
        _capi.check(_capi.lib().gs_session_open(rank_file.encode(),
                                                ctypes.byref(handle)))
        self._handle: Optional[int] = handle.value
        lib = _capi.lib()
        self.rank: int = lib.gs_session_rank(self._handle)
        self.world_size: int = lib.gs_session_world_size(self._handle)
        self.local_rank: int = lib.gs_session_local_rank(self._handle)

    @property
    def handle(self) -> Optional[int]:
        return self._handle

    def close(self) -> None:
        if self._handle is not None:
            _capi.lib().gs_session_close(self._handle)
            self._handle = None

    # ---- the job's store ----
    def set(self, key: str, value: bytes) -> None:
        _capi.check(_capi.lib().gs_store_set(self._handle, key.encode(),
                                             value, len(value)))

    def get(self, key: str, timeout_ms: int) -> bytes:
        lib = _capi.lib()
        buffer = lib.gs_buffer_new()
        try:
            _capi.check(lib.gs_store_get(self._handle, key.encode(),
                                         timeout_ms, buffer))
            return _capi.buffer_bytes(buffer)
        finally:
            lib.gs_buffer_free(buffer)

    def add(self, key: str, delta: int) -> int:
        result = ctypes.c_int64()
        _capi.check(_capi.lib().gs_store_add(self._handle, key.encode(),
                                             delta, ctypes.byref(result)))
        return result.value

    def wait(self, keys: Iterable[str], timeout_ms: int) -> None:
        encoded = [k.encode() for k in keys]
        array = (ctypes.c_char_p * len(encoded))(*encoded)
        _capi.check(_capi.lib().gs_store_wait(self._handle, array,
                                              len(encoded), timeout_ms))

    def report(self, report: _capi.StepReport) -> None:
        _capi.check(_capi.lib().gs_report_step(self._handle,
                                               ctypes.byref(report)))


_session: Optional[Session] = None


def current() -> Optional[Session]:
    """The session of a process a gradsync daemon started, else None."""
    global _session
    if _session is None:
        rank_file = os.environ.get("GRADSYNC_RANK_FILE")
        if rank_file:
            _session = Session(rank_file)
    return _session
