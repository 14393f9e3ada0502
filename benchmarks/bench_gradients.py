#!/usr/bin/env python3
"""Timing budgets of ssmheads.gradients (issue: Chapter 4).

Usage: python benchmarks/bench_gradients.py

jacobian of a 4-head softmax attention layer (systems.random_attention(4, 8, seed=0),
causal, d = p = 8) at n = 256 on a seeded standard normal input X (256, 8):

1. best of 3 runs after one warm-up call: budget 1 s;
2. at least 100x faster than finite_difference_jacobian(mha.forward, X) on the same
   input, timed once (it makes 2 n d = 4096 calls of forward; about 20 s).

Prints both times, their ratio and the maximum relative difference between the two
Jacobians (max |J - J_fd| / max |J_fd|). Exits non-zero if a budget is missed.
"""
import sys
import time

import numpy as np
from timing import best_time

from ssmheads import finite_difference_jacobian, jacobian, systems




def main() -> int:
    mha = systems.random_attention(4, 8, seed=0)
    n = 256
    X = np.random.default_rng(0).standard_normal((n, 8))

    t_jac = best_time(lambda: jacobian(mha, X))
    J = jacobian(mha, X)
    print(f"jacobian, softmax attention H=4, n=256, d=p=8: {t_jac:.3f} s (budget 1 s)")

    start = time.perf_counter()
    J_fd = finite_difference_jacobian(mha.forward, X)
    t_fd = time.perf_counter() - start
    ratio = t_fd / t_jac
    gap = float(np.max(np.abs(J - J_fd)) / np.max(np.abs(J_fd)))
    print(f"finite_difference_jacobian, same input (one run): {t_fd:.1f} s; "
          f"ratio {ratio:.0f}x (budget >= 100x); max relative difference {gap:.1e}")

    ok = t_jac <= 1.0 and ratio >= 100
    if not ok:
        print("BUDGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
