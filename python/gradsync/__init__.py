"""gradsync's Python package: PyTorch's front end to gradsync.

A training script run by ``gradsync submit --entrypoint`` changes three
lines (docs/pytorch.md)::

    import gradsync.torch as gs
    gs.init()                                  # not init_process_group
    ...
    gs.report(loss=loss.item(), samples=len(x))  # once per step

and keeps its model, DistributedDataParallel and optimizer. The package
talks to gradsync through its C API (``libgradsync_c.so``, loaded with
ctypes), so it shares no C++ ABI with torch.
"""

__version__ = "0.1.0"
