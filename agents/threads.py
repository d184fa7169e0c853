"""One compute thread per process by default.

On small shared machines torch's default of several intra-op threads can collapse throughput (a tiny
MaskablePPO run measured 32 steps/s instead of 1,700 on 2 cores); one thread per process is stable, and we
parallelise with processes instead. ``KAHVE_THREADS`` overrides the number.

numpy's OpenBLAS reads ``OPENBLAS_NUM_THREADS`` only when numpy is first imported, which in kahve is before any
config is read, so :func:`limit_threads` also sets its thread count at run time: network opponents decide for
many games in one numpy matrix product (agents/training/sb3/vec_env.py), and OpenBLAS's default of a thread per core
made that 8x slower on a busy 2-core machine (674 instead of 83 us per learner step with four self-play
snapshots in the pool).
"""

from __future__ import annotations

import os
import sys


def limit_threads(n: int | None = None) -> int:
    n = n or int(os.environ.get("KAHVE_THREADS", "1"))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, str(n))
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    if "numpy" in sys.modules:
        set_blas_threads(n)
    return n


_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
            "openblas_set_num_threads")


def _openblas_libraries() -> list:
    import ctypes
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower() and line.split()[-1].startswith("/")}
    except OSError:                   # not Linux: the environment variables set above are all there is
        return []
    libraries = []
    for path in sorted(paths):
        try:
            libraries.append(ctypes.CDLL(path))
        except OSError:
            pass
    return libraries


def set_blas_threads(n: int) -> int:
    """Set the thread count of every OpenBLAS loaded in this process (numpy's); returns how many it set."""
    done = 0
    for lib in _openblas_libraries():
        for name in _SETTERS:
            setter = getattr(lib, name, None)
            if setter is not None:
                setter(int(n))
                done += 1
                break
    return done


def blas_threads() -> list[int]:
    """The thread counts of the OpenBLAS libraries loaded in this process (for tests and diagnostics)."""
    out = []
    for lib in _openblas_libraries():
        for name in ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
                     "openblas_get_num_threads64_", "openblas_get_num_threads"):
            getter = getattr(lib, name, None)
            if getter is not None:
                out.append(int(getter()))
                break
    return out
