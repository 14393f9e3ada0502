"""Shared timing helper of the benchmark scripts."""

import time


def best_time(f, repeats=5):
    """Best wall-clock time of ``repeats`` calls of ``f``, after one warm-up call (first-touch memory, imports)."""
    f()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)
