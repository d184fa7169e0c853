"""One compute thread per process by default.

On small shared machines torch's default of several intra-op threads can collapse throughput (a tiny
MaskablePPO run measured 32 steps/s instead of 1,700 on 2 cores); one thread per process is stable, and we
parallelise with processes instead. ``KAHVE_THREADS`` overrides the number.
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
    return n
