"""BLAS threading: on these small matrices multi-threaded OpenBLAS is slower than one thread
(a 100 x 100 inverse: 14 ms with 2 threads, 0.2 ms with one), so compute-heavy entry points
run with one BLAS thread and experiments parallelise over processes instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TypeVar

F = TypeVar("F", bound=Callable)
_controller = None


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS limited to one thread inside the block (restored afterwards). The limit is the
    process's: threads that each limit and restore it (run_pipeline's steps) run inside one
    block around them all, so that no thread's restore lifts it under another."""
    global _controller
    from threadpoolctl import ThreadpoolController

    if _controller is None:
        _controller = ThreadpoolController()
    with _controller.limit(limits=1, user_api="blas"):
        yield


def single_blas_thread(func: F) -> F:
    """Run ``func`` with BLAS limited to one thread (restored afterwards)."""
    return one_blas_thread()(func)
