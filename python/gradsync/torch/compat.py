"""Every place where gradsync's torch glue depends on torch's version, in
one module: the rest of the package calls these names and never tests a
version itself.

Supported: torch 1.13 (Debian 12's python3-torch, the one CI tests) and
torch 2.x (pip wheels on GPU machines; written against v2.1's
``torch/distributed/distributed_c10d.py``, not run here). What differs:

- **The process group class.** 2.0 split c10d's ProcessGroup into a
  front (ProcessGroup) and per-device Backends. A backend registered from
  Python may still return a ProcessGroup subclass: 2.x's
  ``_new_process_group_helper`` takes it as the group itself ("the old
  behavior for PythonProcessGroups"), as torch's own Python fake group
  did in 2.1. So gradsync subclasses ``ProcessGroup`` on both: a Python
  subclass of 2.x's ``Backend`` would sit under a C++ front whose
  dispatch 1.13 has no counterpart of, and that no test here can run.
- **Registration.** 2.x's ``Backend.register_backend`` takes ``devices``
  (the device types the backend serves; without it 2.x assumes cpu and
  cuda and warns): gradsync's ring serves ``cpu``. 1.13 has no such
  argument. Told apart by the signature, not the version string.
- **Reduce ops**: 2.x made ``ReduceOp`` a class whose members are
  ``ReduceOp.RedOpType`` values (compared with ``==`` against an
  options' ``reduceOp``), 1.13 an enum; ``AVG`` came with 1.11. They are
  matched by name, each only where torch has it.
- **Work from a future** (``_create_work_from_future``), **autograd's
  final callbacks** (``Variable._execution_engine.queue_callback``) and
  **GradBucket** (``buffer()``, ``gradients()``, ``parameters()``) have
  the same names in 1.13 and 2.x; they are wrapped here so that a rename
  lands in one place.

C++ ABI: pip wheels before 2.7 are built with the old libstdc++ ABI
(``_GLIBCXX_USE_CXX11_ABI=0``), Debian's gRPC and gradsync with the new
one. It does not matter here: the package reaches gradsync through
``libgradsync_c.so``, a plain C API that exports only ``gs_*`` symbols
(python/capi/gradsync_c.map; tested by ``python_capi_exports_only_c``),
loaded with ctypes, so no C++ type crosses between torch and gradsync.
"""

from __future__ import annotations

import inspect
from typing import Callable, List, Optional, Sequence

import torch
import torch.distributed as dist
from torch._C import _distributed_c10d as c10d

#: The base class of gradsync's process group, on every supported torch.
PROCESS_GROUP_BASE = c10d.ProcessGroup

#: True where c10d has the 2.x Backend split (for messages and docs only).
HAS_BACKEND_SPLIT = hasattr(c10d, "Backend")


def torch_version() -> str:
    return str(torch.__version__)


def register_backend(name: str, creator: Callable[..., object]) -> None:
    """Registers ``creator(store, rank, size, timeout)`` as the c10d
    backend ``name``, for CPU tensors (idempotent)."""
    if hasattr(dist.Backend, name.upper()):
        return
    params = inspect.signature(dist.Backend.register_backend).parameters
    if "devices" in params:  # torch >= 2.0
        dist.Backend.register_backend(name, creator, devices=["cpu"])
    else:  # torch 1.13
        dist.Backend.register_backend(name, creator)


def reduce_op_name(op: object, names: Sequence[str]) -> Optional[str]:
    """Which of ``names`` (``ReduceOp`` members) ``op`` is; None if none."""
    for name in names:
        candidate = getattr(dist.ReduceOp, name, None)
        if candidate is not None and op == candidate:
            return name
    return None


def work_from_future(future: torch.futures.Future) -> object:
    """A c10d Work whose wait and get_future follow ``future``."""
    return c10d._create_work_from_future(future)


def queue_final_callback(callback: Callable[[], None]) -> None:
    """Runs ``callback`` when the running backward pass's graph task ends;
    raises RuntimeError outside a backward pass."""
    from torch.autograd import Variable
    Variable._execution_engine.queue_callback(callback)


def bucket_buffer(bucket: object) -> torch.Tensor:
    """A DDP GradBucket's flat gradient buffer."""
    return bucket.buffer()


def bucket_parameters(bucket: object) -> List[torch.Tensor]:
    return bucket.parameters()


def bucket_gradients(bucket: object) -> List[torch.Tensor]:
    return bucket.gradients()
