"""ctypes bindings of gradsync's C API (python/capi/gradsync_c.h).

The library is ``libgradsync_c.so`` beside this file (a build tree's
``build/python/gradsync``, or the installed package), or the file that
``$GRADSYNC_CAPI_LIB`` names. Every call returns 0 or an absl status code;
``check`` turns a failure into a :class:`GradsyncError` with the C side's
message. ctypes releases the GIL for the length of each call, so a blocked
collective never stops other Python threads.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
from typing import Optional

# absl::StatusCode values the package tells apart.
DEADLINE_EXCEEDED = 4
ABORTED = 10
UNKNOWN = 2

FLOAT32, FLOAT64, INT32 = 0, 1, 2
SUM, AVG, MAX, MIN = 0, 1, 2, 3


class GradsyncError(RuntimeError):
    """A failed gradsync call: ``code`` is its absl status code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class StepReport(ctypes.Structure):
    """gs_step_report: one step of this rank."""

    _fields_ = [
        ("step", ctypes.c_int64),
        ("loss", ctypes.c_double),
        ("compute_s", ctypes.c_double),
        ("comm_s", ctypes.c_double),
        ("idle_s", ctypes.c_double),
        ("step_s", ctypes.c_double),
        ("bytes_sent", ctypes.c_int64),
        ("bytes_received", ctypes.c_int64),
        ("samples", ctypes.c_int64),
        ("sync_bytes", ctypes.c_int64),
        ("sync_busy_s", ctypes.c_double),
        ("mode", ctypes.c_int32),
    ]


class CommOptions(ctypes.Structure):
    """gs_comm_options."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("listen_host", ctypes.c_char_p),
        ("transport", ctypes.c_char_p),
        ("timeout_ms", ctypes.c_int64),
        ("connect_timeout_ms", ctypes.c_int64),
    ]


class PsOptimizer(ctypes.Structure):
    """gs_ps_optimizer."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("lr", ctypes.c_double),
        ("weight_decay", ctypes.c_double),
        ("momentum", ctypes.c_double),
        ("dampening", ctypes.c_double),
        ("nesterov", ctypes.c_int32),
        ("beta1", ctypes.c_double),
        ("beta2", ctypes.c_double),
        ("eps", ctypes.c_double),
    ]


class PsResult(ctypes.Structure):
    """gs_ps_result."""

    _fields_ = [
        ("bytes_sent", ctypes.c_uint64),
        ("bytes_received", ctypes.c_uint64),
        ("busy_s", ctypes.c_double),
    ]


STORE_SET = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                             ctypes.c_void_p, ctypes.c_size_t)
STORE_GET = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                             ctypes.c_int64, ctypes.c_void_p)
STORE_ADD = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                             ctypes.c_int64, ctypes.POINTER(ctypes.c_int64))


class StoreCallbacks(ctypes.Structure):
    """gs_store_callbacks."""

    _fields_ = [
        ("ctx", ctypes.c_void_p),
        ("set", STORE_SET),
        ("get", STORE_GET),
        ("add", STORE_ADD),
    ]


_lib: Optional[ctypes.CDLL] = None


def _declare(lib: ctypes.CDLL) -> None:
    vp, cp, i64, sz = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64,
                       ctypes.c_size_t)
    signatures = {
        "gs_last_error": (cp, []),
        "gs_version": (cp, []),
        "gs_session_open": (ctypes.c_int, [cp, ctypes.POINTER(vp)]),
        "gs_session_close": (None, [vp]),
        "gs_session_rank": (ctypes.c_int, [vp]),
        "gs_session_world_size": (ctypes.c_int, [vp]),
        "gs_session_local_rank": (ctypes.c_int, [vp]),
        "gs_store_set": (ctypes.c_int, [vp, cp, vp, sz]),
        "gs_store_get": (ctypes.c_int, [vp, cp, i64, vp]),
        "gs_store_add": (ctypes.c_int, [vp, cp, i64,
                                        ctypes.POINTER(ctypes.c_int64)]),
        "gs_store_wait": (ctypes.c_int, [vp, ctypes.POINTER(cp), sz, i64]),
        "gs_report_step": (ctypes.c_int, [vp, ctypes.POINTER(StepReport)]),
        "gs_buffer_new": (vp, []),
        "gs_buffer_free": (None, [vp]),
        "gs_buffer_data": (vp, [vp]),
        "gs_buffer_size": (sz, [vp]),
        "gs_buffer_assign": (None, [vp, vp, sz]),
        "gs_comm_create": (ctypes.c_int, [vp, ctypes.POINTER(StoreCallbacks),
                                          ctypes.c_int, ctypes.c_int,
                                          ctypes.POINTER(CommOptions),
                                          ctypes.POINTER(vp)]),
        "gs_comm_destroy": (None, [vp]),
        "gs_comm_rank": (ctypes.c_int, [vp]),
        "gs_comm_size": (ctypes.c_int, [vp]),
        "gs_comm_allreduce": (ctypes.c_int, [vp, vp, sz, ctypes.c_int,
                                             ctypes.c_int]),
        "gs_comm_broadcast": (ctypes.c_int, [vp, vp, sz, ctypes.c_int,
                                             ctypes.c_int]),
        "gs_comm_allgather": (ctypes.c_int, [vp, vp, vp, sz, ctypes.c_int]),
        "gs_comm_barrier": (ctypes.c_int, [vp]),
        "gs_comm_abort": (None, [vp, cp]),
        "gs_session_mode": (ctypes.c_int, [vp]),
        "gs_session_num_switches": (sz, [vp]),
        "gs_session_switch": (ctypes.c_int, [vp, sz,
                                             ctypes.POINTER(ctypes.c_int64),
                                             ctypes.POINTER(ctypes.c_int32)]),
        "gs_session_await_switch": (ctypes.c_int, [
            vp, i64, i64, ctypes.POINTER(ctypes.c_int32)]),
        "gs_ps_open": (ctypes.c_int, [vp, sz, ctypes.POINTER(PsOptimizer),
                                      ctypes.POINTER(vp)]),
        "gs_ps_close": (None, [vp]),
        "gs_ps_seed": (ctypes.c_int, [vp, i64, vp, ctypes.POINTER(vp), sz,
                                      ctypes.c_uint64]),
        "gs_ps_start": (ctypes.c_int, [vp, i64, vp, vp, ctypes.c_double]),
        "gs_ps_ready": (ctypes.c_int, [vp, sz, sz]),
        "gs_ps_finish": (ctypes.c_int, [vp, i64, ctypes.POINTER(PsResult)]),
        "gs_ps_fetch": (ctypes.c_int, [vp, i64, vp, ctypes.POINTER(vp), sz,
                                       ctypes.POINTER(ctypes.c_uint64)]),
        "gs_ps_release": (ctypes.c_int, [vp]),
        "gs_ps_abort": (None, [vp, cp]),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def lib() -> ctypes.CDLL:
    """The loaded C API (loaded on first use)."""
    global _lib
    if _lib is None:
        path = os.environ.get("GRADSYNC_CAPI_LIB") or str(
            pathlib.Path(__file__).resolve().parent / "libgradsync_c.so")
        try:
            loaded = ctypes.CDLL(path)
        except OSError as e:
            raise GradsyncError(
                UNKNOWN,
                f"cannot load gradsync's C API from {path} ({e}): build "
                "gradsync (scripts/build.sh) and use build/python, or set "
                "GRADSYNC_CAPI_LIB") from e
        _declare(loaded)
        _lib = loaded
    return _lib


def check(code: int) -> None:
    """Raises GradsyncError for a failed call's code (in its thread)."""
    if code != 0:
        message = lib().gs_last_error().decode("utf-8", "replace")
        raise GradsyncError(code, message or f"gradsync error {code}")


def buffer_bytes(buffer: int) -> bytes:
    """The contents of a gs_buffer."""
    size = lib().gs_buffer_size(buffer)
    data = lib().gs_buffer_data(buffer)
    return ctypes.string_at(data, size) if size else b""
