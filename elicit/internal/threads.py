"""BLAS threading.

The matrices here are small (n ~ 100, p ~ 340), and on these machines multi-threaded OpenBLAS
is *slower* on them than one thread (a 100 x 100 inverse: 14 ms with 2 threads, 0.2 ms with
one). Experiments parallelise over runs with processes instead, so compute-heavy entry points
run with one BLAS thread.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)
_controller = None


def single_blas_thread(func: F) -> F:
    """Run ``func`` with BLAS limited to one thread (restored afterwards)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        global _controller
        from threadpoolctl import ThreadpoolController

        if _controller is None:
            _controller = ThreadpoolController()
        with _controller.limit(limits=1, user_api="blas"):
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
