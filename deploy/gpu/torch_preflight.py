"""Can this machine's Python load the bundle's gradsync package beside its
own torch? Run by run_bundle.sh's torch-pip step before the job.

The package's ``libgradsync_c.so`` is loaded into the torch process, so
it runs on the machine's C library and on the C++ runtime torch loaded,
not on the bundle's (which only the bundle's own binaries use, through
their own loader). It needs at least the symbol versions that bundle.sh
recorded in ``python/NEEDS`` (GLIBC, GLIBCXX, CXXABI: the newest each of
the library and its gRPC, protobuf and Abseil needs). Those libraries
come from the bundle (``pylib/``, found through the library's RPATH)
unless the process loaded a library of the same soname first (said, not
failed: a soname is an ABI promise), and the library exports only
``gs_*`` C symbols, so torch's C++ ABI (old before 2.7) does not matter.

Prints what it found, one fact a line; exit 0 when the package loaded,
1 with the reason otherwise.

    PYTHONPATH=BUNDLE/python python3 torch_preflight.py BUNDLE/python/NEEDS
"""

from __future__ import annotations

import os
import re
import sys
from typing import Dict, List, Tuple


def version_tuple(text: str) -> Tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text))


def read_needs(path: str) -> Dict[str, str]:
    needs = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                needs[parts[0]] = parts[1]
    return needs


def loaded_libraries() -> List[str]:
    paths = []
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and ".so" in fields[5]:
                if fields[5] not in paths:
                    paths.append(fields[5])
    return paths


def main() -> int:
    needs = read_needs(sys.argv[1])
    import torch  # noqa: F401 (its C++ runtime is the one we get)
    print(f"python {sys.version.split()[0]} at {sys.executable}")
    print(f"torch {torch.__version__}, CUDA "
          f"{torch.version.cuda or 'none'}, cuda available "
          f"{torch.cuda.is_available()}, old C++ ABI "
          f"{not torch._C._GLIBCXX_USE_CXX11_ABI}")
    libc = os.confstr("CS_GNU_LIBC_VERSION") or "unknown"
    print(f"C library: {libc}; the package needs GLIBC "
          f"{needs.get('GLIBC', '?')}")
    if "GLIBC" in needs and version_tuple(libc) < version_tuple(
            needs["GLIBC"]):
        print(f"FAILED: this machine's {libc} is older than the GLIBC "
              f"{needs['GLIBC']} that libgradsync_c.so and its gRPC need; "
              "the torch step cannot run here (the bundle's own binaries "
              "are not affected: they carry their C library)")
        return 1
    stdcpp = [p for p in loaded_libraries() if "libstdc++.so" in p]
    if stdcpp:
        data = open(stdcpp[0], "rb").read()
        for key in ("GLIBCXX", "CXXABI"):
            want = needs.get(key)
            if want and f"{key}_{want}".encode() + b"\0" not in data:
                print(f"FAILED: the C++ runtime torch loaded ({stdcpp[0]}) "
                      f"has no {key}_{want}, which libgradsync_c.so's "
                      "libraries need")
                return 1
        print(f"C++ runtime: {stdcpp[0]} (has GLIBCXX_"
              f"{needs.get('GLIBCXX', '?')}, CXXABI_"
              f"{needs.get('CXXABI', '?')})")
    from gradsync import _capi
    try:
        lib = _capi.lib()
    except OSError as e:
        print(f"FAILED: libgradsync_c.so did not load: {e}")
        return 1
    lib.gs_last_error()  # resolves and runs: the C API is callable
    ours = [p for p in loaded_libraries()
            if re.search(r"lib(grpc|gpr|protobuf|absl_|upb|re2|cares)", p)]
    foreign = [p for p in ours
               if "/gradsync-bundle/" not in os.path.realpath(p)
               and "/gradsync-bundle/" not in p]
    print(f"gradsync's C API loaded: {_capi.__file__.rsplit('/', 1)[0]}"
          f"/libgradsync_c.so with {len(ours)} gRPC/protobuf/Abseil "
          "libraries")
    if foreign:
        # Loaded before ours under the same soname (Debian's torch links
        # Debian's protobuf): the loader reuses a library by its soname,
        # and a soname is an ABI promise, so this is sound; said, not
        # failed. A pip wheel carries no such shared library.
        print("reused by soname from outside the bundle (loaded first by "
              f"torch or Python): {', '.join(foreign[:5])}")
    print("preflight ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
