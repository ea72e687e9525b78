"""Test-only start-up hook for ``ServedProcess(..., python_heap=True)``: trace the Python heap of ``hoglab serve``.

On SIGUSR1 the process collects garbage and writes ``<n> <bytes>`` (the n-th answer, the Python heap traced now) to
``$HOGLAB_TEST_HEAP_FILE``. The engine (chDB) allocates outside Python's allocator, so this is the service's own
memory without the engine's, whose resident size moves by tens of MiB with the inserts themselves.
"""

import gc
import os
import signal
import tracemalloc

_FILE = os.environ.get("HOGLAB_TEST_HEAP_FILE")
_answers = 0


def _write_heap(signum: int, frame: object) -> None:
    global _answers
    gc.collect()
    _answers += 1
    current, _peak = tracemalloc.get_traced_memory()
    partial = f"{_FILE}.part"
    with open(partial, "w") as out:
        out.write(f"{_answers} {current}\n")
    os.replace(partial, _FILE)  # type: ignore[arg-type]


if _FILE:
    tracemalloc.start(1)
    signal.signal(signal.SIGUSR1, _write_heap)
